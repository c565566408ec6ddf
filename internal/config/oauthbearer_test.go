package config

import (
	"strings"
	"testing"
)

// The OAUTHBEARER keys resolve as Kafka's ConfigurationUtils reads them on
// a listener: listener.name.<l>.oauthbearer.<key>, then
// listener.name.<l>.<key>, then <key>, then Kafka's default.
func TestOAuthBearerListener(t *testing.T) {
	c := Default(
		"listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
		"sasl.oauthbearer.jwks.endpoint.url=https://broker-wide.example/keys",
		"listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url=https://listener.example/keys",
		"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=https://mechanism.example/keys",
		"listener.name.sasl_plaintext.sasl.oauthbearer.expected.audience=kafka, other",
		"sasl.oauthbearer.clock.skew.seconds=5",
		"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class= org.example.Handler ",
	)
	o, err := c.OAuthBearerListener("SASL_PLAINTEXT")
	if err != nil {
		t.Fatal(err)
	}
	if o.JWKSEndpointURL != "https://mechanism.example/keys" ||
		o.KeyName("sasl.oauthbearer.jwks.endpoint.url") != "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url" {
		t.Errorf("url %s from %s", o.JWKSEndpointURL, o.KeyName("sasl.oauthbearer.jwks.endpoint.url"))
	}
	if strings.Join(o.ExpectedAudience, "|") != "kafka|other" || o.ClockSkewSeconds != 5 || o.CallbackHandlerClass != "org.example.Handler" {
		t.Errorf("resolved %+v", o)
	}
	if o.JWKSRefreshMs != 3600000 || o.JWKSRetryBackoffMs != 100 || o.JWKSRetryBackoffMaxMs != 10000 ||
		o.ScopeClaimName != "scope" || o.SubClaimName != "sub" || o.ExpectedIssuer != "" {
		t.Errorf("defaults %+v", o)
	}
	if err := o.ValidateJWKS(); err != nil {
		t.Errorf("valid settings refused: %v", err)
	}

	for _, tc := range []struct{ set, want string }{
		{"sasl.oauthbearer.jwks.endpoint.url=", "sasl.oauthbearer.jwks.endpoint.url value must be set"},
		{"sasl.oauthbearer.jwks.endpoint.url=ftp://x/keys", `invalid protocol (ftp); only "http", "https", and "file"`},
		{"sasl.oauthbearer.jwks.endpoint.url=keys.json", "missing the protocol"},
		{"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.refresh.ms=0",
			"invalid value 0 for listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.refresh.ms"},
		{"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=50", "want at least sasl.oauthbearer.jwks.endpoint.retry.backoff.ms (100)"},
		{"sasl.oauthbearer.clock.skew.seconds=-1", "sasl.oauthbearer.clock.skew.seconds"},
		{"listener.name.sasl_plaintext.sasl.oauthbearer.sub.claim.name= ", "listener.name.sasl_plaintext.sasl.oauthbearer.sub.claim.name value must not contain only whitespace"},
	} {
		c := Default("listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
			"sasl.oauthbearer.jwks.endpoint.url=https://idp.example/keys", tc.set)
		o, err := c.OAuthBearerListener("SASL_PLAINTEXT")
		if err == nil {
			err = o.ValidateJWKS()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.set, err, tc.want)
		}
	}
	// A value that does not parse names the key it was set under.
	c = Default("listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
		"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.clock.skew.seconds=soon")
	if _, err := c.OAuthBearerListener("SASL_PLAINTEXT"); err == nil ||
		!strings.Contains(err.Error(), `invalid value "soon" for listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.clock.skew.seconds`) {
		t.Errorf("unparsable clock skew: %v", err)
	}
}
