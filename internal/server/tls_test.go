package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/security/tlstest"
)

// testPKI is a CA with a broker certificate (for localhost and
// 127.0.0.1), a client certificate, and a client certificate from a CA
// the broker does not trust, with their stores in dir.
type testPKI struct {
	ca             *tlstest.CA
	broker, client *tlstest.Identity
	stranger       *tlstest.Identity
	dir, trustPEM  string
	brokerP12      string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca := tlstest.NewCA(t, "Samsa test CA")
	p := &testPKI{ca: ca, dir: t.TempDir(),
		broker:   ca.Server(t, pkix.Name{CommonName: "broker", Organization: []string{"Samsa"}}),
		client:   ca.Client(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"Users"}}),
		stranger: tlstest.NewCA(t, "Other CA").Client(t, pkix.Name{CommonName: "mallory"}),
	}
	p.trustPEM = tlstest.WritePEMTrust(t, p.dir, "truststore.pem", ca.Cert)
	p.brokerP12 = p.broker.WritePKCS12(t, p.dir, "broker.p12")
	return p
}

// brokerProps are the ssl.* keys of a broker whose SSL listener requires
// client certificates: a PKCS12 key store and a PEM trust store.
func (p *testPKI) brokerProps() []string {
	return []string{
		"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + p.brokerP12, "ssl.keystore.password=" + tlstest.Password,
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + p.trustPEM,
		"ssl.client.auth=required",
	}
}

// clientTLS is a client's TLS config trusting the CA, presenting id (nil:
// no certificate).
func (p *testPKI) clientTLS(id *tlstest.Identity) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if id != nil {
		cert := &tls.Certificate{Certificate: [][]byte{id.Cert.Raw, id.Chain[1].Raw}, PrivateKey: id.Key}
		// Sent whatever CAs the broker names, as a misconfigured client would.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg
}

// sslConfig is a single combined node whose only client listener is SSL.
func sslConfig(t *testing.T, dir string, props ...string) *config.Config {
	t.Helper()
	cfg, warnings, err := config.Load("", append([]string{
		"log.dirs=" + dir,
		"listeners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"inter.broker.listener.name=SSL",
	}, props...))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	return cfg
}

func kgoTLS(t *testing.T, addr string, tlsCfg *tls.Config, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg), kgo.RetryTimeout(5 * time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceConsumeTLS creates topic, produces n records and reads them back
// over TLS, checking each record.
func produceConsumeTLS(t *testing.T, addr string, tlsCfg *tls.Config, topic string, n int) {
	t.Helper()
	cl := kgoTLS(t, addr, tlsCfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createTopic(t, ctx, kadm.NewClient(cl), topic, 1)
	produce(t, cl, topic, n, 0)
	cons := kgoTLS(t, addr, tlsCfg, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(got), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		if string(r.Key) != fmt.Sprintf("k%d", i) || string(r.Value) != fmt.Sprintf("v%d", i) || r.Offset != int64(i) {
			t.Fatalf("record %d: %s=%s at %d", i, r.Key, r.Value, r.Offset)
		}
	}
}

// createTopic creates a topic; a retried request that finds the topic
// its first attempt created is fine.
func createTopic(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, rf int16) {
	t.Helper()
	r, err := adm.CreateTopic(ctx, 1, rf, nil, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// Each key store format serves an SSL listener with client certificates
// required; franz-go produces and consumes over mutual TLS.
func TestSSLListenerKeystoreFormats(t *testing.T) {
	p := newTestPKI(t)
	trust := []string{"ssl.truststore.type=PEM", "ssl.truststore.location=" + p.trustPEM, "ssl.client.auth=required"}
	for _, tc := range []struct {
		name  string
		props []string
	}{
		{"PKCS12", p.brokerProps()},
		{"JKS", []string{"ssl.keystore.type=JKS", "ssl.keystore.location=" + p.broker.WriteJKS(t, p.dir, "broker.jks"),
			"ssl.keystore.password=" + tlstest.Password, "ssl.truststore.type=JKS",
			"ssl.truststore.location=" + tlstest.WriteJKSTrust(t, p.dir, "trust.jks", p.ca.Cert), "ssl.truststore.password=" + tlstest.Password,
			"ssl.client.auth=required"}},
		{"PEM file", append([]string{"ssl.keystore.type=PEM", "ssl.keystore.location=" + p.broker.WritePEM(t, p.dir, "broker.pem")}, trust...)},
		// Inline PEM as a properties file carries it: one line.
		{"PEM inline with the listener prefix", append([]string{"listener.name.ssl.ssl.keystore.type=PEM",
			"listener.name.ssl.ssl.keystore.certificate.chain=" + strings.ReplaceAll(tlstest.CertPEM(p.broker.Chain...), "\n", " "),
			"listener.name.ssl.ssl.keystore.key=" + strings.ReplaceAll(p.broker.KeyPEM(t), "\n", " ")}, trust...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, sslConfig(t, t.TempDir(), tc.props...))
			defer s.Close()
			produceConsumeTLS(t, s.Addr("SSL"), p.clientTLS(p.client), "tls", 20)
		})
	}
}

// requestFails reports whether a client with tlsCfg is refused: its
// metadata request fails.
func requestFails(t *testing.T, addr string, tlsCfg *tls.Config) error {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second), kgo.RequestRetries(0)}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}

// With ssl.client.auth=required a client without a certificate, one with
// an untrusted certificate and a plaintext client are all refused; the
// broker keeps serving a good client after them.
func TestSSLListenerRefusesClients(t *testing.T) {
	p := newTestPKI(t)
	s := start(t, sslConfig(t, t.TempDir(), p.brokerProps()...))
	defer s.Close()
	addr := s.Addr("SSL")
	for name, cfg := range map[string]*tls.Config{
		"no certificate":        p.clientTLS(nil),
		"untrusted certificate": p.clientTLS(p.stranger),
		"plaintext":             nil,
	} {
		if err := requestFails(t, addr, cfg); err == nil {
			t.Errorf("%s: served", name)
		}
	}
	produceConsumeTLS(t, addr, p.clientTLS(p.client), "after", 5)
}

// sarama and segmentio/kafka-go produce and consume over TLS, with
// ssl.client.auth=requested and no client certificate.
func TestSSLListenerSaramaAndKafkaGo(t *testing.T) {
	p := newTestPKI(t)
	props := append(p.brokerProps(), "ssl.client.auth=requested")
	s := start(t, sslConfig(t, t.TempDir(), props...))
	defer s.Close()
	addr := s.Addr("SSL")
	cl := kgoTLS(t, addr, p.clientTLS(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{"sarama", "kafkago"} {
		createTopic(t, ctx, kadm.NewClient(cl), topic, 1)
	}

	scfg := sarama.NewConfig()
	scfg.Version = sarama.V3_6_0_0
	scfg.Net.TLS.Enable, scfg.Net.TLS.Config = true, p.clientTLS(nil)
	scfg.Producer.Return.Successes = true
	scfg.Producer.RequiredAcks = sarama.WaitForAll
	prod, err := sarama.NewSyncProducer([]string{addr}, scfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	for i := 0; i < 5; i++ {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama", Value: sarama.StringEncoder(fmt.Sprintf("s%d", i))}); err != nil {
			t.Fatalf("sarama send: %v", err)
		}
	}
	prod.Close()
	cons, err := sarama.NewConsumer([]string{addr}, scfg)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition("sarama", 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	for i := 0; i < 5; i++ {
		select {
		case m := <-pc.Messages():
			if string(m.Value) != fmt.Sprintf("s%d", i) || m.Offset != int64(i) {
				t.Fatalf("sarama message %d: %s at %d", i, m.Value, m.Offset)
			}
		case <-ctx.Done():
			t.Fatal("sarama consume timed out")
		}
	}

	w := &kafkago.Writer{Addr: kafkago.TCP(addr), Topic: "kafkago", RequiredAcks: kafkago.RequireAll,
		Transport: &kafkago.Transport{TLS: p.clientTLS(nil)}, BatchTimeout: 10 * time.Millisecond}
	for i := 0; i < 5; i++ {
		if err := w.WriteMessages(ctx, kafkago.Message{Value: []byte(fmt.Sprintf("g%d", i))}); err != nil {
			t.Fatalf("kafka-go write: %v", err)
		}
	}
	w.Close()
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, Topic: "kafkago", Partition: 0,
		Dialer: &kafkago.Dialer{Timeout: 10 * time.Second, TLS: p.clientTLS(nil)}, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	for i := 0; i < 5; i++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go read: %v", err)
		}
		if string(m.Value) != fmt.Sprintf("g%d", i) || m.Offset != int64(i) {
			t.Fatalf("kafka-go message %d: %s at %d", i, m.Value, m.Offset)
		}
	}
}

// Missing or invalid TLS material stops start-up with the key named, and
// before anything is written to the data directory.
func TestSSLStartupFailsClosed(t *testing.T) {
	p := newTestPKI(t)
	garbage := filepath.Join(p.dir, "garbage.p12")
	os.WriteFile(garbage, []byte("no"), 0o600)
	for _, tc := range []struct {
		props []string
		want  string
	}{
		{nil, "needs a key store"},
		{[]string{"ssl.keystore.location=" + p.brokerP12}, "ssl.keystore.password"},
		{[]string{"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + p.brokerP12, "ssl.keystore.password=wrong"}, "ssl.keystore.location"},
		{[]string{"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + garbage, "ssl.keystore.password=x"}, "ssl.keystore.location"},
		{[]string{"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + filepath.Join(p.dir, "missing.p12"), "ssl.keystore.password=x"}, "missing.p12"},
		{append(p.brokerProps(), "ssl.truststore.location="+filepath.Join(p.dir, "missing.pem")), "ssl.truststore.location"},
		{append(p.brokerProps(), "listener.name.ssl.ssl.truststore.type=BCFKS"), "listener.name.ssl.ssl.truststore.type"},
		{append(p.brokerProps(), "ssl.enabled.protocols=TLSv1.1"), "ssl.enabled.protocols"},
		{append(p.brokerProps(), "ssl.cipher.suites=TLS_AES_128_GCM_SHA256"), "ssl.cipher.suites"},
		{append(p.brokerProps(), "ssl.principal.mapping.rules=RULE:^CN=(?<=x)$/a/"), "ssl.principal.mapping.rules"},
		{append(p.brokerProps(), "ssl.provider=BCJSSE"), "ssl.provider"},
		{append(p.brokerProps(), "ssl.engine.factory.class=com.example.Factory"), "ssl.engine.factory.class"},
	} {
		dir := t.TempDir()
		s, err := Start(sslConfig(t, dir, tc.props...), quiet(), nil)
		if err == nil {
			s.Close()
			t.Errorf("%v: started", tc.props)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.props, err, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%v: the data directory was written to before failing", tc.props)
		}
	}
	// SASL stays refused until it is served.
	cfg, _, err := config.Load("", []string{"log.dirs=" + t.TempDir(), "listeners=SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "inter.broker.listener.name=SASL_SSL"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(cfg, quiet(), nil); err == nil || !strings.Contains(err.Error(), "SASL_SSL") {
		t.Errorf("SASL_SSL listener: %v", err)
	}
}

// servedSerial dials addr and returns the serial number of the
// certificate it serves.
func servedSerial(t *testing.T, addr string, cfg *tls.Config) (string, error) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// IncrementalAlterConfigs of listener.name.ssl.ssl.keystore.location
// swaps the certificate of the running listener: new connections get the
// new one. A broken key store is not taken, and the listener keeps
// serving the last good one.
func TestSSLKeystoreReload(t *testing.T) {
	p := newTestPKI(t)
	props := append(p.brokerProps(), "ssl.client.auth=none")
	s := start(t, sslConfig(t, t.TempDir(), props...))
	defer s.Close()
	addr := s.Addr("SSL")
	tlsCfg := p.clientTLS(nil)
	tlsCfg.ServerName = "localhost"
	if got, err := servedSerial(t, addr, tlsCfg); err != nil || got != p.broker.Cert.SerialNumber.String() {
		t.Fatalf("serial %s, %v", got, err)
	}
	renewed := p.ca.Server(t, pkix.Name{CommonName: "broker", Organization: []string{"Samsa"}})
	renewedPath := renewed.WritePKCS12(t, p.dir, "renewed.p12")
	adm := kadm.NewClient(kgoTLS(t, addr, p.clientTLS(nil)))
	alter := func(path string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.location", Value: &path}}, 1)
		if err == nil {
			err = rs[0].Err
		}
		if err != nil {
			t.Fatalf("alter configs: %v", err)
		}
	}
	alter(renewedPath)
	want := renewed.Cert.SerialNumber.String()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := servedSerial(t, addr, tlsCfg)
		if err == nil && got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still serving %s (%v), want the renewed certificate %s", got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	broken := filepath.Join(p.dir, "broken.p12")
	os.WriteFile(broken, []byte("broken"), 0o600)
	alter(broken)
	time.Sleep(300 * time.Millisecond)
	if got, err := servedSerial(t, addr, tlsCfg); err != nil || got != want {
		t.Fatalf("after a broken key store: serial %s, %v; want %s", got, err, want)
	}
	produceConsumeTLS(t, addr, p.clientTLS(nil), "reloaded", 3)
}
