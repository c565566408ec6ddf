package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// SASL over real sockets with real clients: a node with a PLAINTEXT
// listener (inter-broker, and where the tests create SCRAM users as an
// admin would before enabling them) and a SASL_PLAINTEXT listener with
// PLAIN and both SCRAM mechanisms.

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// startSASL starts a node whose SASL_PLAINTEXT listener enables PLAIN,
// SCRAM-SHA-256 and SCRAM-SHA-512; extra are more overrides.
func startSASL(t *testing.T, extra ...string) *server.Server {
	t.Helper()
	return servertest.Start(t, append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainJAAS,
		"connection.failed.authentication.delay.ms=50",
	}, extra...)...)
}

// saslRoundTrip creates a topic, produces records and consumes them back
// as the client that m authenticates, and checks what came back.
func saslRoundTrip(t *testing.T, ctx context.Context, addr string, m sasl.Mechanism, kind string) {
	t.Helper()
	topic := topicName("sasl", kind)
	adm := kadm.NewClient(newKgo(t, addr, kgo.SASL(m)))
	franzCreate(t, ctx, adm, topic, 2, nil)
	recs := genRecords(uint64(len(kind)), 200)
	produced := franzProduce(t, ctx, newKgo(t, addr, kgo.SASL(m)), topic, recs, true)
	cl := newKgo(t, addr, kgo.SASL(m), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var consumed []rec
	for len(consumed) < len(produced) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: got %d of %d records before timeout", topic, len(consumed), len(produced))
		}
		if err := fs.Err(); err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { consumed = append(consumed, fromKgo(r)) })
	}
	checkConsumed(t, 2, produced, consumed, nil, checkOpts{})
}

// saslRefused expects a client authenticating with m to fail with want.
func saslRefused(t *testing.T, ctx context.Context, addr string, m sasl.Mechanism, want error) error {
	t.Helper()
	cl := newKgo(t, addr, kgo.SASL(m), kgo.RetryTimeout(2*time.Second))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := kadm.NewClient(cl).ListTopics(ctx)
	if !errors.Is(err, want) {
		t.Fatalf("authenticating with %s: %v, want %v", m.Name(), err, want)
	}
	return err
}

func TestSASLPlainFranz(t *testing.T) {
	ctx := testContext(t)
	srv := startSASL(t)
	addr := srv.Addr("SASL_PLAINTEXT")
	saslRoundTrip(t, ctx, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), "plain")

	err := saslRefused(t, ctx, addr, plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism(), kerr.SaslAuthenticationFailed)
	if !strings.Contains(err.Error(), "Invalid username or password") {
		t.Fatalf("error %q does not carry Kafka's message", err)
	}
	saslRefused(t, ctx, addr, plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism(), kerr.SaslAuthenticationFailed)
	// The broker still serves everyone else.
	saslRoundTrip(t, ctx, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism(), "plain-admin")
}

func TestSASLNoCredentials(t *testing.T) {
	ctx := testContext(t)
	// This listener enables PLAIN only (the per-listener key wins).
	srv := startSASL(t, "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN")
	addr := srv.Addr("SASL_PLAINTEXT")
	// A client that sends requests without authenticating is cut off.
	cl := newKgo(t, addr, kgo.RetryTimeout(2*time.Second), kgo.RequestRetries(1))
	ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).ListTopics(ctx2); err == nil {
		t.Fatal("a client without credentials listed topics")
	}
	// A mechanism the listener does not enable.
	saslRefused(t, ctx, addr, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), kerr.UnsupportedSaslMechanism)
	saslRoundTrip(t, ctx, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), "plain-only")
}

// scramUsers creates SCRAM credentials through addr as kadm does (the
// client salts the password) and fails the test on any error.
func scramUsers(t *testing.T, ctx context.Context, adm *kadm.Client, del []kadm.DeleteSCRAM, ups ...kadm.UpsertSCRAM) {
	t.Helper()
	res, err := adm.AlterUserSCRAMs(ctx, del, ups)
	if err != nil {
		t.Fatalf("AlterUserSCRAMs: %v", err)
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			t.Fatalf("AlterUserSCRAMs %s: %v %s", r.User, r.Err, r.ErrMessage)
		}
	}
}

func TestSASLScramFranz(t *testing.T) {
	ctx := testContext(t)
	srv := startSASL(t)
	addr := srv.Addr("SASL_PLAINTEXT")
	// Users are created over the SASL listener by a PLAIN admin, as an
	// operator bootstraps SCRAM (the request goes to the controller).
	adm := kadm.NewClient(newKgo(t, addr, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	scramUsers(t, ctx, adm, nil,
		kadm.UpsertSCRAM{User: "sha256", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw-256"},
		kadm.UpsertSCRAM{User: "sha512", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "pw-512"},
		kadm.UpsertSCRAM{User: "both=,", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw-both"})

	desc, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(desc) != 3 || len(desc["sha512"].CredInfos) != 1 || desc["sha512"].CredInfos[0].Iterations != 8192 ||
		desc["sha512"].CredInfos[0].Mechanism != kadm.ScramSha512 {
		t.Fatalf("described %+v", desc)
	}
	desc, err = adm.DescribeUserSCRAMs(ctx, "sha256", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if desc["sha256"].Err != nil || !errors.Is(desc["nobody"].Err, kerr.ResourceNotFound) {
		t.Fatalf("described %+v", desc)
	}

	saslRoundTrip(t, ctx, addr, scram.Auth{User: "sha256", Pass: "pw-256"}.AsSha256Mechanism(), "scram256")
	saslRoundTrip(t, ctx, addr, scram.Auth{User: "sha512", Pass: "pw-512"}.AsSha512Mechanism(), "scram512")
	saslRoundTrip(t, ctx, addr, scram.Auth{User: "both=,", Pass: "pw-both"}.AsSha512Mechanism(), "scram-escaped")

	// Wrong password, wrong mechanism for the user, unknown user.
	err = saslRefused(t, ctx, addr, scram.Auth{User: "sha256", Pass: "wrong"}.AsSha256Mechanism(), kerr.SaslAuthenticationFailed)
	if !strings.Contains(err.Error(), "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256") {
		t.Fatalf("error %q does not carry Kafka's message", err)
	}
	saslRefused(t, ctx, addr, scram.Auth{User: "sha256", Pass: "pw-256"}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed)
	saslRefused(t, ctx, addr, scram.Auth{User: "nobody", Pass: "x"}.AsSha256Mechanism(), kerr.SaslAuthenticationFailed)

	// A changed password applies at once; a deleted user is refused.
	scramUsers(t, ctx, adm, []kadm.DeleteSCRAM{{User: "sha512", Mechanism: kadm.ScramSha512}},
		kadm.UpsertSCRAM{User: "sha256", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "new-pw"})
	saslRefused(t, ctx, addr, scram.Auth{User: "sha512", Pass: "pw-512"}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed)
	saslRefused(t, ctx, addr, scram.Auth{User: "sha256", Pass: "pw-256"}.AsSha256Mechanism(), kerr.SaslAuthenticationFailed)
	saslRoundTrip(t, ctx, addr, scram.Auth{User: "sha256", Pass: "new-pw"}.AsSha256Mechanism(), "scram256-new")

	// The controller's refusals reach the client with Kafka's codes.
	res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "sha512", Mechanism: kadm.ScramSha512}},
		[]kadm.UpsertSCRAM{{User: "few", Mechanism: kadm.ScramSha256, Iterations: 1000, Salt: []byte("s"), SaltedPassword: []byte("sp")}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res["sha512"].Err, kerr.ResourceNotFound) || !errors.Is(res["few"].Err, kerr.UnacceptableCredential) {
		t.Fatalf("results %+v", res)
	}
}
