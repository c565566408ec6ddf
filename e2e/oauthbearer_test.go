package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rdkafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/go-jose/go-jose/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/samsa-io/samsa/internal/security/oauthtest"
	"github.com/samsa-io/samsa/internal/server"
)

// SASL/OAUTHBEARER with real clients over real sockets. One node serves
// two OAUTHBEARER listeners:
//
//   - SASL_PLAINTEXT with Kafka's unsecured validator (unsigned tokens,
//     scope "kafka" required), next to PLAIN and SCRAM;
//   - JWKS with Kafka's OAuthBearerValidatorCallbackHandler: tokens
//     signed by the keys a net/http server on 127.0.0.1 publishes, for
//     audience "samsa" from issuer "https://idp.test".
//
// With StandardAuthorizer and super.users=User:alice, what a principal
// may do shows that it is the token's subject.

const (
	oauthIssuer   = "https://idp.test"
	oauthAudience = "samsa"
	oauthModule   = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// oauthNode is the node, its identity provider's JWKS endpoint and the
// key the provider signs with.
type oauthNode struct {
	srv *server.Server
	idp *oauthtest.Server
	key *oauthtest.Key
}

func startOAuth(t *testing.T, extra ...string) oauthNode {
	t.Helper()
	key := oauthtest.NewRSA(t, "key-1", jose.RS256)
	idp := oauthtest.NewServer(t, key)
	srv := startSASL(t, append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,JWKS://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,JWKS:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=" + oauthModule + ` required unsecuredValidatorRequiredScope="kafka";`,
		"listener.name.jwks.sasl.enabled.mechanisms=OAUTHBEARER",
		"listener.name.jwks.oauthbearer.sasl.jaas.config=" + oauthModule + " required;",
		"listener.name.jwks.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"listener.name.jwks.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=" + idp.URL,
		"sasl.oauthbearer.expected.audience=" + oauthAudience,
		"sasl.oauthbearer.expected.issuer=" + oauthIssuer,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:alice;User:admin",
	}, extra...)...)
	return oauthNode{srv: srv, idp: idp, key: key}
}

// unsecuredToken is an unsigned token for sub with scope "kafka".
func unsecuredToken(sub string, ttl time.Duration) string {
	return oauthtest.Unsigned(oauthtest.Claims(sub, ttl, map[string]any{"scope": "kafka"}))
}

// signedToken is a token for sub signed by k, for the node's audience
// from its issuer; more claims are added or, when nil, removed.
func signedToken(t *testing.T, k *oauthtest.Key, sub string, ttl time.Duration, more map[string]any) string {
	c := oauthtest.Claims(sub, ttl, map[string]any{"aud": oauthAudience, "iss": oauthIssuer})
	for name, v := range more {
		if v == nil {
			delete(c, name)
		} else {
			c[name] = v
		}
	}
	return k.Sign(t, c)
}

// tokens is an OAUTHBEARER mechanism that asks mint for a new token at
// every authentication, as a client with a token provider does, and
// counts them.
func tokens(mint func() string, n *atomic.Int64) sasl.Mechanism {
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		if n != nil {
			n.Add(1)
		}
		return oauth.Auth{Token: mint()}, nil
	})
}

// refusedToken expects a client with token to be refused with
// SASL_AUTHENTICATION_FAILED and Kafka's RFC 7628 message.
func refusedToken(t *testing.T, ctx context.Context, addr, token, wantMessage string) {
	t.Helper()
	err := saslRefused(t, ctx, addr, oauth.Auth{Token: token}.AsMechanism(), kerr.SaslAuthenticationFailed)
	if !strings.Contains(err.Error(), wantMessage) {
		t.Fatalf("refusal %q does not carry %s", err, wantMessage)
	}
}

// steadyClient produces through one connection before and after what a
// test does in between, and checks every record comes back: the broker
// kept serving it.
func steadyClient(t *testing.T, ctx context.Context, addr string, m sasl.Mechanism, kind string) (finish func()) {
	t.Helper()
	topic := topicName("oauth-steady", kind)
	cl := newKgo(t, addr, kgo.SASL(m))
	franzCreate(t, ctx, kadm.NewClient(cl), topic, 1, nil)
	recs := genRecords(uint64(len(kind)), 100)
	first := franzProduce(t, ctx, cl, topic, recs[:50], true)
	return func() {
		t.Helper()
		second := franzProduce(t, ctx, cl, topic, recs[50:], true)
		produced := append(first, second...)
		cons := newKgo(t, addr, kgo.SASL(m), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
		var consumed []rec
		for len(consumed) < len(produced) && ctx.Err() == nil {
			cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { consumed = append(consumed, fromKgo(r)) })
		}
		checkConsumed(t, 1, produced, consumed, nil, checkOpts{})
	}
}

// TestOAuthBearerUnsecuredFranz: franz-go with unsigned tokens on the
// unsecured validator's listener; expired tokens, tokens without the
// required scope and signed tokens are refused as Kafka refuses them.
func TestOAuthBearerUnsecuredFranz(t *testing.T) {
	ctx := testContext(t)
	n := startOAuth(t)
	addr := n.srv.Addr("SASL_PLAINTEXT")
	alice := tokens(func() string { return unsecuredToken("alice", time.Hour) }, nil)
	saslRoundTrip(t, ctx, addr, alice, "oauth-unsecured")
	finish := steadyClient(t, ctx, addr, alice, "unsecured")

	refusedToken(t, ctx, addr, unsecuredToken("alice", -time.Minute), `{"status":"invalid_token"}`)
	refusedToken(t, ctx, addr, oauthtest.Unsigned(oauthtest.Claims("alice", time.Hour, nil)),
		`{"status":"insufficient_scope", "scope":"[kafka]"}`)
	refusedToken(t, ctx, addr, signedToken(t, n.key, "alice", time.Hour, map[string]any{"scope": "kafka"}), `{"status":"invalid_token"}`)
	// Kafka's generic message for a first message that is not RFC 7628's.
	saslRefused(t, ctx, addr, tokens(func() string { return "not a token" }, nil), kerr.SaslAuthenticationFailed)
	finish()
}

// TestOAuthBearerJWKSFranz: franz-go with signed tokens on the JWKS
// listener; the principal is the token's subject; expired, wrongly
// signed and misaddressed tokens are refused; a key the provider rotates
// in is picked up at the first token that uses it.
func TestOAuthBearerJWKSFranz(t *testing.T) {
	ctx := testContext(t)
	n := startOAuth(t)
	addr := n.srv.Addr("JWKS")
	alice := tokens(func() string { return signedToken(t, n.key, "alice", time.Hour, nil) }, nil)
	saslRoundTrip(t, ctx, addr, alice, "oauth-jwks")
	finish := steadyClient(t, ctx, addr, alice, "jwks")

	// mallory authenticates but, not being alice, may not write.
	mallory := newKgo(t, addr, kgo.SASL(tokens(func() string { return signedToken(t, n.key, "mallory", time.Hour, nil) }, nil)),
		kgo.RetryTimeout(2*time.Second))
	err := mallory.ProduceSync(ctx, &kgo.Record{Topic: topicName("oauth-steady", "jwks"), Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("mallory's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	forged := oauthtest.NewRSA(t, "key-1", jose.RS256) // the provider's kid, another key
	for name, token := range map[string]string{
		"expired":        signedToken(t, n.key, "alice", -time.Minute, nil),
		"wrongly signed": signedToken(t, forged, "alice", time.Hour, nil),
		"other audience": signedToken(t, n.key, "alice", time.Hour, map[string]any{"aud": "billing"}),
		"other issuer":   signedToken(t, n.key, "alice", time.Hour, map[string]any{"iss": "https://evil.test"}),
		"unsigned":       oauthtest.Unsigned(oauthtest.Claims("alice", time.Hour, map[string]any{"aud": oauthAudience, "iss": oauthIssuer})),
	} {
		t.Run(name, func(t *testing.T) { refusedToken(t, ctx, addr, token, `{"status":"invalid_token"}`) })
	}

	// The provider rotates a new key in: the first token signed by it
	// makes the broker fetch the JWKS again, and it is accepted.
	fetches := n.idp.Fetches()
	k2 := oauthtest.NewEC(t, "key-2")
	n.idp.SetKeys(n.key, k2)
	saslRoundTrip(t, ctx, addr, tokens(func() string { return signedToken(t, k2, "alice", time.Hour, nil) }, nil), "oauth-rotated")
	if n.idp.Fetches() != fetches+1 {
		t.Fatalf("%d JWKS fetches for the new key, want 1", n.idp.Fetches()-fetches)
	}
	finish()
}

// TestOAuthBearerSessionLifetime: a token's expiry bounds the session
// (KIP-368) as in Kafka: alone, or the earlier of it and
// connections.max.reauth.ms. franz-go re-authenticates with a new token
// before each session ends and keeps producing on the same connections.
func TestOAuthBearerSessionLifetime(t *testing.T) {
	ctx := testContext(t)
	n := startOAuth(t, "listener.name.jwks.oauthbearer.connections.max.reauth.ms=60000")

	// What the broker tells a client: SaslAuthenticate's session lifetime.
	for _, tc := range []struct {
		addr     string
		ttl      time.Duration
		min, max time.Duration
		token    func(ttl time.Duration) string
	}{
		{n.srv.Addr("SASL_PLAINTEXT"), 20 * time.Second, 18 * time.Second, 20 * time.Second, func(ttl time.Duration) string { return unsecuredToken("alice", ttl) }},
		{n.srv.Addr("JWKS"), 20 * time.Second, 18 * time.Second, 20 * time.Second, func(ttl time.Duration) string { return signedToken(t, n.key, "alice", ttl, nil) }},
		{n.srv.Addr("JWKS"), time.Hour, time.Minute, time.Minute, func(ttl time.Duration) string { return signedToken(t, n.key, "alice", ttl, nil) }},
	} {
		c := rawSASL(t, tc.addr, "OAUTHBEARER")
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = 1
		req.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + tc.token(tc.ttl) + "\x01\x01")
		writeRaw(t, c, req, 2)
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		readRaw(t, c, resp, 2)
		got := time.Duration(resp.SessionLifetimeMillis) * time.Millisecond
		if resp.ErrorCode != 0 || got < tc.min || got > tc.max {
			t.Fatalf("token for %v: error %d, session lifetime %v, want between %v and %v", tc.ttl, resp.ErrorCode, got, tc.min, tc.max)
		}
	}

	// franz-go with 4 s tokens and no connections.max.reauth.ms.
	var minted atomic.Int64
	var connects, reauths, failures countingLogger
	cl := newKgo(t, n.srv.Addr("SASL_PLAINTEXT"), kgo.SASL(tokens(func() string { return unsecuredToken("alice", 4*time.Second) }, &minted)),
		kgo.WithHooks(&connects), kgo.WithLogger(kgo.BasicLogger(&logScanner{
			"reauthenticating":   &reauths,
			"sasl reauth failed": &failures,
		}, kgo.LogLevelDebug, nil)))
	topic := topicName("oauth", "reauth")
	franzCreate(t, ctx, kadm.NewClient(cl), topic, 1, nil)
	deadline := time.Now().Add(9 * time.Second)
	produced := 0
	for time.Now().Before(deadline) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(produced)}}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", produced, err)
		}
		produced++
		time.Sleep(100 * time.Millisecond)
	}
	if reauths.n.Load() < 2 || failures.n.Load() != 0 {
		t.Fatalf("%d re-authentications, %d failed; want at least 2 and none failed", reauths.n.Load(), failures.n.Load())
	}
	if c := connects.n.Load(); c > 6 {
		t.Fatalf("%d connections: the broker closed them instead of letting franz-go re-authenticate", c)
	}
	t.Logf("%d records, %d connections, %d re-authentications, %d tokens", produced, connects.n.Load(), reauths.n.Load(), minted.Load())
}

// TestOAuthBearerConfluent: librdkafka with its built-in unsecured token
// (sasl.oauthbearer.config) on the unsecured listener, and with a signed
// token set by the application (SetOAuthBearerToken, as an
// OAuthBearerTokenRefresh handler does) on the JWKS listener; a wrongly
// signed token is an authentication error carrying Kafka's message.
func TestOAuthBearerConfluent(t *testing.T) {
	ctx := testContext(t)
	n := startOAuth(t)
	roundTrip := func(t *testing.T, addr string, auth rdkafka.ConfigMap, token string) {
		logs := newRdLogs(t)
		p := newRdProducer(t, logs, addr, auth)
		topic := topicName("librdkafka-oauth", fmt.Sprint(token != ""))
		c := newRdConsumerWith(t, logs, addr, topic, auth)
		if token != "" {
			set := rdkafka.OAuthBearerToken{TokenValue: token, Expiration: time.Now().Add(time.Hour), Principal: "alice"}
			if err := p.SetOAuthBearerToken(set); err != nil {
				t.Fatalf("producer SetOAuthBearerToken: %v", err)
			}
			if err := c.SetOAuthBearerToken(set); err != nil {
				t.Fatalf("consumer SetOAuthBearerToken: %v", err)
			}
		}
		rdCreate(t, ctx, p, topic, 2)
		produced := rdProduce(t, ctx, p, topic, genRecords(uint64(len(topic)), 100))
		ends := rdEnds(t, c, topic, 2)
		consumed := rdConsume(t, ctx, c, topic, 2, len(produced))
		checkConsumed(t, 2, produced, consumed, ends, checkOpts{})
	}
	oauthAuth := rdkafka.ConfigMap{"security.protocol": "sasl_plaintext", "sasl.mechanisms": "OAUTHBEARER"}
	t.Run("unsecured", func(t *testing.T) {
		auth := rdkafka.ConfigMap{"enable.sasl.oauthbearer.unsecure.jwt": true, "sasl.oauthbearer.config": "principal=alice scope=kafka"}
		for k, v := range oauthAuth {
			auth[k] = v
		}
		roundTrip(t, n.srv.Addr("SASL_PLAINTEXT"), auth, "")
	})
	t.Run("jwks", func(t *testing.T) {
		roundTrip(t, n.srv.Addr("JWKS"), oauthAuth, signedToken(t, n.key, "alice", time.Hour, nil))
	})
	t.Run("wrongly signed", func(t *testing.T) {
		logs := newRdLogs(t)
		p := newRdProducer(t, logs, n.srv.Addr("JWKS"), oauthAuth)
		forged := signedToken(t, oauthtest.NewRSA(t, "key-1", jose.RS256), "alice", time.Hour, nil)
		if err := p.SetOAuthBearerToken(rdkafka.OAuthBearerToken{TokenValue: forged, Expiration: time.Now().Add(time.Hour), Principal: "alice"}); err != nil {
			t.Fatal(err)
		}
		timeout := time.After(15 * time.Second)
		for {
			select {
			case ev := <-p.Events():
				if e, ok := ev.(rdkafka.Error); ok && e.Code() == rdkafka.ErrAuthentication {
					if !strings.Contains(e.Error(), `{"status":"invalid_token"}`) {
						t.Fatalf("authentication error %q without Kafka's message", e)
					}
					return
				}
			case <-timeout:
				t.Fatal("wrongly signed token: no authentication error from librdkafka within 15 s")
			}
		}
	})
}
