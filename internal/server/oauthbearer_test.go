package server

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/security/oauthtest"
)

// oauthConfig is a node whose SASL_PLAINTEXT listener takes OAUTHBEARER
// tokens signed by the keys at jwksURL.
func oauthConfig(t *testing.T, jwksURL string) *config.Config {
	t.Helper()
	cfg, _, err := config.Load("", []string{"log.dirs=" + t.TempDir(),
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=OAUTHBEARER", oauthJAAS,
		oauthHandler + oauthValidatorHandler,
		"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=" + jwksURL,
		"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=200",
		"sasl.oauthbearer.jwks.endpoint.refresh.ms=50",
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The JWKS is loaded at start, refreshed while the node runs and no more
// once it is closed; a JWKS that cannot be had stops start-up naming the
// key.
func TestOAuthBearerJWKSLifecycle(t *testing.T) {
	key := oauthtest.NewRSA(t, "k1", jose.RS256)
	idp := oauthtest.NewServer(t, key)
	s := start(t, oauthConfig(t, idp.URL))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	login := func(token string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("SASL_PLAINTEXT")), kgo.SASL(oauth.Auth{Token: token}.AsMechanism()),
			kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kadm.NewClient(cl).ListTopics(ctx)
		return err
	}
	if err := login(key.Sign(t, oauthtest.Claims("alice", time.Hour, nil))); err != nil {
		t.Fatalf("signed token: %v", err)
	}
	err := login(oauthtest.NewRSA(t, "k1", jose.RS256).Sign(t, oauthtest.Claims("alice", time.Hour, nil)))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
		t.Fatalf("token signed by another key: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for idp.Fetches() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if idp.Fetches() < 3 {
		t.Fatalf("%d fetches: the JWKS is not refreshed every 50 ms", idp.Fetches())
	}
	s.Close()
	n := idp.Fetches()
	time.Sleep(200 * time.Millisecond)
	if idp.Fetches() != n {
		t.Fatal("the JWKS is still fetched after the node closed")
	}

	// Nothing listens on this port: start-up fails, naming the key.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/keys"
	ln.Close()
	_, err = Start(oauthConfig(t, dead), quiet(), nil)
	if err == nil || !strings.Contains(err.Error(), "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url="+dead) {
		t.Fatalf("unreachable JWKS: %v", err)
	}
}
