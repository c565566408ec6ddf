package server

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/config"
)

const testPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";`

const (
	oauthJAAS    = "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
	oauthHandler = "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class="
)

// SASL settings Samsa cannot honour stop start-up with a message naming
// the key to change.
func TestCheckSASL(t *testing.T) {
	base := []string{"process.roles=broker,controller", "node.id=1", "controller.listener.names=CONTROLLER",
		"controller.quorum.voters=1@127.0.0.1:9093", "log.dirs=/tmp/unused",
		"listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"}
	plain := "listener.name.sasl_plaintext.plain.sasl.jaas.config=" + testPlainJAAS
	voters2 := "controller.quorum.voters=1@127.0.0.1:9093,2@127.0.0.1:9095"
	ctrlSASL := "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
	interBroker := []string{"inter.broker.listener.name=SASL_PLAINTEXT", voters2}
	scramClient := func(bits string) string {
		return "listener.name.sasl_plaintext.scram-sha-" + bits + `.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b";`
	}
	for _, tc := range []struct {
		props []string
		want  string // "" for accepted; else a substring of the error
	}{
		{[]string{"sasl.enabled.mechanisms=PLAIN", plain}, ""},
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512"}, ""},
		{[]string{"listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512"}, ""},
		{[]string{"sasl.enabled.mechanisms=PLAIN"}, "listener.name.sasl_plaintext.plain.sasl.jaas.config is not set"},
		// Kafka ignores the un-prefixed key on a broker; so does Samsa.
		{[]string{"sasl.enabled.mechanisms=PLAIN", "sasl.jaas.config=" + testPlainJAAS}, "listener.name.sasl_plaintext.plain.sasl.jaas.config is not set"},
		{[]string{"sasl.enabled.mechanisms=PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config=PlainLoginModule required;"},
			"invalid listener.name.sasl_plaintext.plain.sasl.jaas.config"},
		{[]string{"sasl.enabled.mechanisms=PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config=" + strings.TrimSuffix(testPlainJAAS, ";")},
			"not terminated by semi-colon"},
		{[]string{"sasl.enabled.mechanisms=PLAIN", plain, "listener.name.sasl_plaintext.sasl.enabled.mechanisms=GSSAPI"},
			"GSSAPI (listener.name.sasl_plaintext.sasl.enabled.mechanisms=GSSAPI)"},
		{[]string{"sasl.enabled.mechanisms=PLAIN,GSSAPI", plain}, "SASL mechanism GSSAPI (sasl.enabled.mechanisms=PLAIN,GSSAPI), which Samsa does not support"},
		// OAUTHBEARER: the unsecured validator by default, the JWKS one
		// with Kafka's handler class; what Samsa cannot run names the key.
		{[]string{"sasl.enabled.mechanisms=PLAIN,OAUTHBEARER", plain, oauthJAAS}, ""},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER"}, "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config is not set"},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=" + testPlainJAAS},
			"invalid listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config: JAAS config names login module org.apache.kafka.common.security.plain.PlainLoginModule"},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", strings.TrimSuffix(oauthJAAS, ";") + " unsecuredValidatorAllowableClockSkewMs=-5;"},
			"invalid listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config: invalid value \"-5\" for JAAS option unsecuredValidatorAllowableClockSkewMs"},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS, oauthHandler + "com.example.MyHandler"},
			"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=com.example.MyHandler: Samsa cannot load custom callback handlers"},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS, oauthHandler + oauthValidatorHandler},
			"The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url value must be set"},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS, oauthHandler + oauthValidatorHandler,
			"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=ldap://idp/keys"},
			"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url contains a URL (ldap://idp/keys) that contains an invalid protocol (ldap)"},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS, oauthHandler + oauthValidatorHandler, "sasl.oauthbearer.jwks.endpoint.url=https://idp.example/keys"}, ""},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS, oauthHandler + oauthValidatorHandlerLegacy, "sasl.oauthbearer.jwks.endpoint.url=file:///etc/jwks.json"}, ""},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS, "sasl.oauthbearer.jwks.endpoint.url=https://idp.example/keys"},
			"sasl.oauthbearer.jwks.endpoint.url is set, but OAUTHBEARER on listener SASL_PLAINTEXT uses the unsecured validator"},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", strings.TrimSuffix(oauthJAAS, ";") + ` ssl.truststore.location="/etc/ts.jks";`,
			oauthHandler + oauthValidatorHandler, "sasl.oauthbearer.jwks.endpoint.url=https://idp.example/keys"}, "reads no ssl.* options"},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS, "sasl.server.callback.handler.class=" + oauthValidatorHandler},
			"sasl.server.callback.handler.class is not read by a broker, as in Kafka: prefix it with the listener and the mechanism, e.g. listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"},
		{[]string{"sasl.enabled.mechanisms=PLAIN", plain, "listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class=com.example.Plain"},
			"listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class=com.example.Plain: Samsa cannot load custom callback handlers"},
		{[]string{"sasl.enabled.mechanisms=PLAIN", plain, "listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class=org.apache.kafka.common.security.plain.internals.PlainServerCallbackHandler"}, ""},
		// Between nodes, OAUTHBEARER is refused whenever it is set.
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS, "sasl.mechanism.inter.broker.protocol=OAUTHBEARER"},
			"sasl.mechanism.inter.broker.protocol=OAUTHBEARER: Samsa serves OAUTHBEARER to clients only"},
		{[]string{"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS, "sasl.mechanism.controller.protocol=OAUTHBEARER"},
			"sasl.mechanism.controller.protocol=OAUTHBEARER: Samsa serves OAUTHBEARER to clients only"},
		{[]string{"sasl.enabled.mechanisms="}, "enables no mechanism"},
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", "listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms=soon"},
			`invalid value "soon" for listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms`},
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", "listener.name.sasl_plaintext.sasl.server.max.receive.size=0"},
			"listener.name.sasl_plaintext.sasl.server.max.receive.size"},
		// A SASL controller listener: served on a single node; in a
		// quorum the nodes log in to it with
		// sasl.mechanism.controller.protocol, which must be PLAIN.
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", ctrlSASL}, ""},
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", ctrlSASL, voters2}, "sasl.mechanism.controller.protocol=GSSAPI, which Samsa does not support"},
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", ctrlSASL, voters2, "sasl.mechanism.controller.protocol=SCRAM-SHA-256"}, "KAFKA-15513"},
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", ctrlSASL, voters2, "sasl.mechanism.controller.protocol=PLAIN"},
			"sasl.mechanism.controller.protocol=PLAIN must be enabled on controller listener CONTROLLER"},
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", ctrlSASL, voters2, "sasl.mechanism.controller.protocol=PLAIN",
			"listener.name.controller.sasl.enabled.mechanisms=PLAIN"}, "listener.name.controller.plain.sasl.jaas.config is not set"},
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", ctrlSASL, voters2, "sasl.mechanism.controller.protocol=PLAIN",
			"listener.name.controller.sasl.enabled.mechanisms=PLAIN", "listener.name.controller.plain.sasl.jaas.config=" + testPlainJAAS},
			"listener.name.controller.plain.sasl.jaas.config has no username and password"},
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", ctrlSASL, voters2, "sasl.mechanism.controller.protocol=PLAIN",
			"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
			`listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="c" password="p" user_c="p";`}, ""},
		// A SASL inter-broker listener in a cluster: this node logs in
		// with sasl.mechanism.inter.broker.protocol (default GSSAPI) as
		// the user of its JAAS config for that mechanism.
		{append(slices.Clone(interBroker), "sasl.enabled.mechanisms=SCRAM-SHA-256"), "sasl.mechanism.inter.broker.protocol=GSSAPI, which Samsa does not support"},
		{append(slices.Clone(interBroker), "sasl.enabled.mechanisms=SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256"),
			"needs its own credentials in listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"},
		{append(slices.Clone(interBroker), "sasl.enabled.mechanisms=SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512", scramClient("512")),
			"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512 must be enabled"},
		{append(slices.Clone(interBroker), "sasl.enabled.mechanisms=SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256",
			"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"broker\";"),
			"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config has no username and password"},
		{append(slices.Clone(interBroker), "sasl.enabled.mechanisms=SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256", scramClient("256")), ""},
		{append(slices.Clone(interBroker), "sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.inter.broker.protocol=PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"broker\" password=\"b\" user_broker=\"b\";"), ""},
		// ... but a single node never dials its own inter-broker listener.
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", "inter.broker.listener.name=SASL_PLAINTEXT"}, ""},
		// SASL_SSL: the same SASL checks (its stores are newNodeTLS's).
		{[]string{"sasl.enabled.mechanisms=SCRAM-SHA-256", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_SSL,CONTROLLER:PLAINTEXT"}, ""},
		{[]string{"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_SSL,CONTROLLER:PLAINTEXT"}, "GSSAPI"},
	} {
		// Some values are refused as the configuration loads, the rest
		// by checkSupported: either way start-up stops naming the key.
		cfg, _, err := config.Load("", append(slices.Clone(base), tc.props...))
		if err == nil {
			err = checkSupported(cfg)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.props, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error naming %q", tc.props, err, tc.want)
		}
	}
}

// The per-mechanism and per-listener keys win over the broker-wide ones.
func TestSASLListenerSettings(t *testing.T) {
	cfg, _, err := config.Load("", []string{"log.dirs=/tmp/unused",
		"listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
		"sasl.enabled.mechanisms=GSSAPI", "listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + testPlainJAAS,
		"connections.max.reauth.ms=1000", "listener.name.sasl_plaintext.connections.max.reauth.ms=2000",
		"listener.name.sasl_plaintext.scram-sha-512.connections.max.reauth.ms=3000",
		"sasl.server.max.receive.size=1000", "connection.failed.authentication.delay.ms=7",
	})
	if err != nil {
		t.Fatal(err)
	}
	sc, warnings, err := saslListener(cfg, "SASL_PLAINTEXT", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sc.Mechanisms, ","); got != "SCRAM-SHA-512,PLAIN,SCRAM-SHA-256" {
		t.Errorf("mechanisms %s", got)
	}
	want := map[string]time.Duration{"SCRAM-SHA-512": 3 * time.Second, "PLAIN": 2 * time.Second, "SCRAM-SHA-256": 2 * time.Second}
	for m, d := range want {
		if sc.SessionLifetime[m] != d {
			t.Errorf("%s: session lifetime %v, want %v", m, sc.SessionLifetime[m], d)
		}
	}
	if sc.MaxReceiveSize != 1000 || sc.FailedAuthenticationDelay != 7*time.Millisecond || len(warnings) != 0 {
		t.Errorf("max receive %d, delay %v, warnings %v", sc.MaxReceiveSize, sc.FailedAuthenticationDelay, warnings)
	}
}

// --add-scram writes credentials into the metadata log a new node
// bootstraps; a restart with other arguments changes nothing.
func TestAddScramAtBootstrap(t *testing.T) {
	dir := t.TempDir()
	load := func(addScram ...string) *config.Config {
		cfg, _, err := config.Load("", []string{"log.dirs=" + dir,
			"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
			"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512"})
		if err != nil {
			t.Fatal(err)
		}
		cfg.AddScram = addScram
		return cfg
	}
	login := func(s *Server, m sasl.Mechanism) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("SASL_PLAINTEXT")), kgo.SASL(m), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = kadm.NewClient(cl).ListTopics(ctx)
		return err
	}
	s := start(t, load("SCRAM-SHA-256=[name=alice,password=alice-secret]",
		"SCRAM-SHA-512=[name=alice,iterations=8192,password=other]"))
	if err := login(s, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()); err != nil {
		t.Fatalf("alice with SCRAM-SHA-256: %v", err)
	}
	if err := login(s, scram.Auth{User: "alice", Pass: "other"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("alice with SCRAM-SHA-512: %v", err)
	}
	if err := login(s, scram.Auth{User: "alice", Pass: "other"}.AsSha256Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("alice's SCRAM-SHA-512 password for SCRAM-SHA-256: %v", err)
	}
	if c, _ := s.loader.Image().ScramCredential("alice", 2); c.Iterations != 8192 {
		t.Fatalf("iterations %d", c.Iterations)
	}
	s.Close()

	s = start(t, load("SCRAM-SHA-256=[name=bob,password=bob-secret]"))
	defer s.Close()
	if err := login(s, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()); err != nil {
		t.Fatalf("alice after restart: %v", err)
	}
	if err := login(s, scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("bob, added after bootstrap: %v", err)
	}
}
