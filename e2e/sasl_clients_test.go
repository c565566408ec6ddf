package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	rdkafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	kgsasl "github.com/segmentio/kafka-go/sasl"
	kgplain "github.com/segmentio/kafka-go/sasl/plain"
	kgscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdgscram "github.com/xdg-go/scram"

	"github.com/samsa-io/samsa/internal/security/tlstest"
	"github.com/samsa-io/samsa/internal/servertest"
)

// SASL with the other clients, each with its own SCRAM implementation:
// sarama (with xdg-go/scram, as sarama's own example does) over both
// handshake versions, kafka-go, and librdkafka; then KIP-368
// re-authentication with franz-go, and raw frames for what no client
// sends (a 100 MB token).

// startSASLUsers starts a SASL node and creates SCRAM users "u256" and
// "u512" (password "pw-<user>") through its PLAINTEXT listener.
func startSASLUsers(t *testing.T, ctx context.Context, extra ...string) (saslAddr string) {
	t.Helper()
	srv := startSASL(t, extra...)
	adm := kadm.NewClient(newKgo(t, srv.Addr("PLAINTEXT")))
	scramUsers(t, ctx, adm, nil,
		kadm.UpsertSCRAM{User: "u256", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw-u256"},
		kadm.UpsertSCRAM{User: "u512", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw-u512"})
	return srv.Addr("SASL_PLAINTEXT")
}

// xdgSCRAM is sarama's SCRAMClient on xdg-go/scram.
type xdgSCRAM struct {
	gen  xdgscram.HashGeneratorFcn
	conv *xdgscram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, pass, authzID string) error {
	c, err := x.gen.NewClient(user, pass, authzID)
	if err != nil {
		return err
	}
	x.conv = c.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

func saramaSASL(mechanism, user, pass string, version int16) *sarama.Config {
	cfg := saramaConfig()
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.Version = version
	cfg.Net.SASL.Mechanism = sarama.SASLMechanism(mechanism)
	cfg.Net.SASL.User, cfg.Net.SASL.Password = user, pass
	// With v0 the first frame is the handshake (sarama requires it):
	// the broker sees no ApiVersions before it.
	cfg.ApiVersionsRequest = version != sarama.SASLHandshakeV0
	switch mechanism {
	case sarama.SASLTypeSCRAMSHA256:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{gen: xdgscram.SHA256} }
	case sarama.SASLTypeSCRAMSHA512:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{gen: xdgscram.SHA512} }
	}
	return cfg
}

// TestSASLSarama: SaslHandshake v0 is followed by raw tokens, v1 by
// SaslAuthenticate; sarama speaks both.
func TestSASLSarama(t *testing.T) {
	ctx := testContext(t)
	addr := startSASLUsers(t, ctx)
	for _, tc := range []struct {
		mechanism, user, pass string
		version               int16
	}{
		{sarama.SASLTypePlaintext, "alice", "alice-secret", sarama.SASLHandshakeV0},
		{sarama.SASLTypePlaintext, "alice", "alice-secret", sarama.SASLHandshakeV1},
		{sarama.SASLTypeSCRAMSHA256, "u256", "pw-u256", sarama.SASLHandshakeV0},
		{sarama.SASLTypeSCRAMSHA512, "u512", "pw-u512", sarama.SASLHandshakeV1},
	} {
		t.Run(fmt.Sprintf("%s-v%d", tc.mechanism, tc.version), func(t *testing.T) {
			cfg := func() *sarama.Config { return saramaSASL(tc.mechanism, tc.user, tc.pass, tc.version) }
			topic := topicName("sarama-sasl", fmt.Sprintf("%s-v%d", strings.ToLower(tc.mechanism), tc.version))
			saramaCreateWith(t, cfg(), addr, topic, 2)
			produced := saramaProduceWith(t, cfg(), addr, topic, "lz4", genRecords(uint64(tc.version)+7, 100))
			ends := saramaEndsWith(t, cfg(), addr, topic, 2)
			consumed := saramaConsumeWith(t, ctx, cfg(), addr, topic, ends)
			checkConsumed(t, 2, produced, consumed, ends, checkOpts{})

			// The same client with a wrong password is refused.
			_, err := sarama.NewClient([]string{addr}, saramaSASL(tc.mechanism, tc.user, "wrong", tc.version))
			if err == nil {
				t.Fatal("a wrong password was accepted")
			}
		})
	}
}

func TestSASLKafkaGo(t *testing.T) {
	ctx := testContext(t)
	addr := startSASLUsers(t, ctx)
	m512, err := kgscram.Mechanism(kgscram.SHA512, "u512", "pw-u512")
	if err != nil {
		t.Fatal(err)
	}
	m256, err := kgscram.Mechanism(kgscram.SHA256, "u256", "pw-u256")
	if err != nil {
		t.Fatal(err)
	}
	for name, sm := range map[string]kgsasl.Mechanism{"scram512": m512, "scram256": m256,
		"plain": kgplain.Mechanism{Username: "alice", Password: "alice-secret"}} {
		t.Run(name, func(t *testing.T) {
			topic := topicName("kafkago-sasl", name)
			kafkagoCreateWith(t, ctx, sm, addr, topic, 2)
			produced := kafkagoProduceWith(t, ctx, sm, addr, topic, "snappy", genRecords(uint64(len(name)), 100))
			ends := kafkagoEndsWith(t, ctx, sm, addr, topic, 2)
			consumed := kafkagoConsumeWith(t, ctx, sm, addr, topic, ends)
			checkConsumed(t, 2, produced, consumed, ends, checkOpts{})
		})
	}
	bad, _ := kgscram.Mechanism(kgscram.SHA512, "u512", "wrong")
	_, err = kafkagoClientWith(addr, bad).Metadata(ctx, &kafkago.MetadataRequest{})
	if err == nil || !strings.Contains(err.Error(), "SASL Authentication Failed") {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

func TestSASLConfluent(t *testing.T) {
	ctx := testContext(t)
	addr := startSASLUsers(t, ctx)
	for _, tc := range []struct{ mechanism, user, pass string }{
		{"SCRAM-SHA-512", "u512", "pw-u512"},
		{"SCRAM-SHA-256", "u256", "pw-u256"},
		{"PLAIN", "alice", "alice-secret"},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			logs := newRdLogs(t)
			auth := rdkafka.ConfigMap{"security.protocol": "sasl_plaintext", "sasl.mechanisms": tc.mechanism,
				"sasl.username": tc.user, "sasl.password": tc.pass}
			p := newRdProducer(t, logs, addr, auth)
			topic := topicName("librdkafka-sasl", strings.ToLower(tc.mechanism))
			rdCreate(t, ctx, p, topic, 2)
			produced := rdProduce(t, ctx, p, topic, genRecords(uint64(len(tc.mechanism)), 100))
			c := newRdConsumerWith(t, logs, addr, topic, auth)
			ends := rdEnds(t, c, topic, 2)
			consumed := rdConsume(t, ctx, c, topic, 2, len(produced))
			checkConsumed(t, 2, produced, consumed, ends, checkOpts{})
		})
	}
	// A wrong password is an authentication error, not a retry loop.
	logs := newRdLogs(t)
	p := newRdProducer(t, logs, addr, rdkafka.ConfigMap{"security.protocol": "sasl_plaintext", "sasl.mechanisms": "SCRAM-SHA-512",
		"sasl.username": "u512", "sasl.password": "wrong"})
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-p.Events():
			if e, ok := ev.(rdkafka.Error); ok && e.Code() == rdkafka.ErrAuthentication {
				if !strings.Contains(e.Error(), "invalid credentials with SASL mechanism SCRAM-SHA-512") {
					t.Fatalf("authentication error %q without Kafka's message", e)
				}
				return
			}
		case <-timeout:
			t.Fatal("wrong password: no authentication error from librdkafka within 15 s")
		}
	}
}

// TestSASLReauthFranz: with connections.max.reauth.ms the broker gives
// each session a lifetime; franz-go re-authenticates on the same
// connection before it ends (KIP-368) and keeps producing.
func TestSASLReauthFranz(t *testing.T) {
	ctx := testContext(t)
	addr := startSASLUsers(t, ctx, "listener.name.sasl_plaintext.connections.max.reauth.ms=2500")
	var connects, reauths, failures countingLogger
	cl := newKgo(t, addr, kgo.SASL(scram.Auth{User: "u256", Pass: "pw-u256"}.AsSha256Mechanism()),
		kgo.WithHooks(&connects), kgo.WithLogger(kgo.BasicLogger(&logScanner{
			"reauthenticating":   &reauths,
			"sasl reauth failed": &failures,
		}, kgo.LogLevelDebug, nil)))
	topic := topicName("sasl", "reauth")
	franzCreate(t, ctx, kadm.NewClient(cl), topic, 1, nil)
	deadline := time.Now().Add(7 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(n)}}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", n, err)
		}
		n++
		time.Sleep(100 * time.Millisecond)
	}
	if reauths.n.Load() < 2 || failures.n.Load() != 0 {
		t.Fatalf("%d re-authentications, %d failed; want at least 2 and none failed", reauths.n.Load(), failures.n.Load())
	}
	// Re-authentication kept the connections: about two per broker
	// (metadata, produce), not one per session.
	if c := connects.n.Load(); c > 6 {
		t.Fatalf("%d connections over %d sessions: the broker closed them instead of re-authenticating", c, reauths.n.Load())
	}
	t.Logf("%d records, %d connections, %d re-authentications", n, connects.n.Load(), reauths.n.Load())
}

// countingLogger counts broker connections (a kgo hook) or matching log
// lines.
type countingLogger struct{ n atomic.Int64 }

func (c *countingLogger) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

// logScanner counts the log lines that contain each of its keys.
type logScanner map[string]*countingLogger

func (l logScanner) Write(p []byte) (int, error) {
	for k, c := range l {
		c.n.Add(int64(strings.Count(string(p), k)))
	}
	return len(p), nil
}

// rawSASL dials addr and runs SaslHandshake v1 for mechanism.
func rawSASL(t *testing.T, addr, mechanism string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = 1, mechanism
	writeRaw(t, c, req, 1)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	readRaw(t, c, resp, 1)
	if resp.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return c
}

func writeRaw(t *testing.T, c net.Conn, req kmsg.Request, cid int32) {
	t.Helper()
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, cid)
	b = kbin.AppendNullableString(b, nil)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func readRaw(t *testing.T, c net.Conn, resp kmsg.Response, cid int32) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := readFull(c, size[:]); err != nil {
		t.Fatalf("read response: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := readFull(c, b); err != nil {
		t.Fatalf("read response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != cid {
		t.Fatalf("correlation id %d, want %d", got, cid)
	}
	b = b[4:]
	resp.SetVersion(1)
	if resp.IsFlexible() {
		b = b[1:]
	}
	if err := resp.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestSASLHugeToken: a SaslAuthenticate announced at 100 MB is refused
// from its size alone (sasl.server.max.receive.size), without the broker
// allocating it, and the broker goes on serving.
func TestSASLHugeToken(t *testing.T) {
	ctx := testContext(t)
	addr := startSASLUsers(t, ctx)
	c := rawSASL(t, addr, "SCRAM-SHA-256")
	if _, err := c.Write(binary.BigEndian.AppendUint32(nil, 100<<20)); err != nil {
		t.Fatal(err)
	}
	// Send a few MB after it: the broker must not be reading them.
	chunk := make([]byte, 1<<20)
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	for range 4 {
		if _, err := c.Write(chunk); err != nil {
			break // closed under us: refused
		}
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var one [1]byte
	if n, err := c.Read(one[:]); n != 0 || err == nil {
		t.Fatalf("read %d bytes, %v: want the connection closed", n, err)
	}
	saslRoundTrip(t, ctx, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), "after-huge")
}

// TestSASLOverTLS: a SASL_SSL listener runs the TLS handshake with its
// listener.name.sasl_ssl.ssl.* stores, then SCRAM inside it; the client
// is who SCRAM says, and a client speaking plaintext gets nothing.
func TestSASLOverTLS(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "Samsa e2e CA")
	broker := ca.Server(t, pkix.Name{CommonName: "localhost"})
	srv := servertest.Start(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.sasl_ssl.ssl.keystore.type=PEM",
		"listener.name.sasl_ssl.ssl.keystore.location="+broker.WritePEM(t, dir, "broker.pem"))
	scramUsers(t, ctx, kadm.NewClient(newKgo(t, srv.Addr("PLAINTEXT"))), nil,
		kadm.UpsertSCRAM{User: "tls-user", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "tls-pw"})
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	tlsCfg := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	addr := srv.Addr("SASL_SSL")

	topic := topicName("sasl", "ssl")
	m := scram.Auth{User: "tls-user", Pass: "tls-pw"}.AsSha512Mechanism()
	cl := newKgo(t, addr, kgo.DialTLSConfig(tlsCfg), kgo.SASL(m))
	franzCreate(t, ctx, kadm.NewClient(cl), topic, 1, nil)
	produced := franzProduce(t, ctx, cl, topic, genRecords(99, 50), true)
	cons := newKgo(t, addr, kgo.DialTLSConfig(tlsCfg), kgo.SASL(m), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var consumed []rec
	for len(consumed) < len(produced) && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { consumed = append(consumed, fromKgo(r)) })
	}
	checkConsumed(t, 1, produced, consumed, nil, checkOpts{})

	bad := newKgo(t, addr, kgo.DialTLSConfig(tlsCfg), kgo.SASL(scram.Auth{User: "tls-user", Pass: "wrong"}.AsSha512Mechanism()),
		kgo.RetryTimeout(2*time.Second))
	if _, err := kadm.NewClient(bad).ListTopics(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password over TLS: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	// SASL without TLS on the SASL_SSL port: the TLS handshake fails.
	plainClient := newKgo(t, addr, kgo.SASL(m), kgo.RetryTimeout(2*time.Second), kgo.RequestRetries(1))
	ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(plainClient).ListTopics(ctx2); err == nil {
		t.Fatal("a client without TLS was served on the SASL_SSL listener")
	}
}
