package security

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/samsa-io/samsa/internal/security/oauthtest"
)

// startJWKS starts a key set kept from url, closed when the test ends.
func startJWKS(t *testing.T, url string) *JWKS {
	t.Helper()
	j := NewJWKS(JWKSConfig{URL: url, Refresh: time.Hour, RetryBackoff: 10 * time.Millisecond, RetryBackoffMax: 50 * time.Millisecond})
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Close)
	return j
}

func refusedWith(t *testing.T, v *JWTValidator, name, token, reason string) {
	t.Helper()
	_, err := v.Validate(token)
	var te *TokenError
	if !errors.As(err, &te) || te.Status != "invalid_token" || !strings.Contains(te.Reason, reason) {
		t.Errorf("%s: %v, want invalid_token with %q", name, err, reason)
	}
}

func TestOAuthBearerJWTValidator(t *testing.T) {
	rsaKey := oauthtest.NewRSA(t, "rsa-1", jose.RS256)
	psKey := oauthtest.NewRSA(t, "ps-1", jose.PS384)
	ecKey := oauthtest.NewEC(t, "ec-1")
	srv := oauthtest.NewServer(t, rsaKey, psKey, ecKey)
	now := time.Unix(1_900_000_000, 0)
	sec := now.Unix()
	v := &JWTValidator{Keys: startJWKS(t, srv.URL), ExpectedAudience: []string{"kafka", "other"}, ExpectedIssuer: "https://idp.example",
		ScopeClaim: "scope", SubClaim: "sub", ClockSkew: 30 * time.Second, Now: fixedClock(now)}
	claims := func(more map[string]any) map[string]any {
		c := map[string]any{"sub": " alice ", "iat": sec, "exp": sec + 600, "aud": "kafka", "iss": "https://idp.example", "scope": "produce"}
		for k, x := range more {
			if x == nil {
				delete(c, k)
			} else {
				c[k] = x
			}
		}
		return c
	}

	for _, k := range []*oauthtest.Key{rsaKey, psKey, ecKey} {
		tok, err := v.Validate(k.Sign(t, claims(nil)))
		if err != nil {
			t.Fatalf("%s: %v", k.Alg, err)
		}
		if tok.Principal != "alice" || !tok.Expiry.Equal(now.Add(10*time.Minute)) || len(tok.Scope) != 1 || tok.Scope[0] != "produce" {
			t.Fatalf("%s: token %+v", k.Alg, tok)
		}
	}
	if _, err := v.Validate(rsaKey.Sign(t, claims(map[string]any{"aud": []string{"x", "other"}, "scope": []string{"a", "b"}}))); err != nil {
		t.Fatalf("aud list naming an expected audience: %v", err)
	}
	// Within the clock skew.
	if _, err := v.Validate(rsaKey.Sign(t, claims(map[string]any{"exp": sec - 29, "iat": sec - 100}))); err != nil {
		t.Fatalf("expired 29 s ago, with 30 s of skew: %v", err)
	}
	if _, err := v.Validate(rsaKey.Sign(t, claims(map[string]any{"nbf": sec + 30}))); err != nil {
		t.Fatalf("valid in 30 s, with 30 s of skew: %v", err)
	}

	other := oauthtest.NewRSA(t, "rsa-1", jose.RS256) // same kid, another key
	unsigned := oauthtest.Unsigned(claims(nil))
	for _, tc := range []struct{ name, token, reason string }{
		{"expired", rsaKey.Sign(t, claims(map[string]any{"exp": sec - 30})), "is on or after the Expiration Time"},
		{"not yet valid", rsaKey.Sign(t, claims(map[string]any{"nbf": sec + 31})), "is before the Not Before"},
		{"exp before iat", rsaKey.Sign(t, claims(map[string]any{"iat": sec + 700})), "cannot be before the Issued At"},
		{"no exp", rsaKey.Sign(t, claims(map[string]any{"exp": nil})), "No Expiration Time (exp) claim present."},
		{"no iat", rsaKey.Sign(t, claims(map[string]any{"iat": nil})), "No Issued At (iat) claim present."},
		{"wrong issuer", rsaKey.Sign(t, claims(map[string]any{"iss": "https://evil.example"})), "doesn't match expected value of https://idp.example"},
		{"no issuer", rsaKey.Sign(t, claims(map[string]any{"iss": nil})), "No Issuer (iss) claim present"},
		{"wrong audience", rsaKey.Sign(t, claims(map[string]any{"aud": []string{"billing"}})),
			"Audience (aud) claim [billing] doesn't contain an acceptable identifier. Expected one of [kafka, other] as an aud value."},
		{"no audience", rsaKey.Sign(t, claims(map[string]any{"aud": nil})), "No Audience (aud) claim present."},
		{"wrong signature", other.Sign(t, claims(nil)), "JWS signature is invalid"},
		{"alg none", unsigned, "signature section missing"},
		{"alg none, with a signature", strings.TrimSuffix(unsigned, ".") + ".c2ln", "unexpected signature algorithm"},
		{"HS256", hs256(t, claims(nil)), "unexpected signature algorithm"},
		{"missing sub", rsaKey.Sign(t, claims(map[string]any{"sub": nil})), "sub value must be non-null"},
		{"blank sub", rsaKey.Sign(t, claims(map[string]any{"sub": " "})), "sub value must not contain only whitespace"},
		{"numeric sub", rsaKey.Sign(t, claims(map[string]any{"sub": 3})), "Could not extract the 'sub' claim"},
		{"duplicate scope", rsaKey.Sign(t, claims(map[string]any{"scope": []string{"a", " a"}})), "scope value must not contain duplicates"},
		{"empty scope", rsaKey.Sign(t, claims(map[string]any{"scope": ""})), "scope value must be non-empty"},
		{"two sections", "a.b", "but 2 sections provided"},
		{"empty", " ", "Empty JWT provided"},
		{"kid of the wrong type", retag(t, ecKey, "rsa-1", claims(nil)), "Unable to find a suitable verification key"},
	} {
		refusedWith(t, v, tc.name, tc.token, tc.reason)
	}

	// Without an expected audience, a token that names one is refused
	// (jose4j's default, hence Kafka's); one without aud is accepted.
	v.ExpectedAudience = nil
	refusedWith(t, v, "aud without expected audience", rsaKey.Sign(t, claims(nil)), "no expected audience value(s) were provided")
	if _, err := v.Validate(rsaKey.Sign(t, claims(map[string]any{"aud": nil}))); err != nil {
		t.Fatalf("no aud, none expected: %v", err)
	}
	// Without an expected issuer, any issuer (or none) is accepted.
	v.ExpectedIssuer = ""
	if _, err := v.Validate(rsaKey.Sign(t, claims(map[string]any{"aud": nil, "iss": "anyone"}))); err != nil {
		t.Fatalf("any issuer, none expected: %v", err)
	}
	// Another subject claim.
	v.SubClaim = "email"
	tok, err := v.Validate(rsaKey.Sign(t, claims(map[string]any{"aud": nil, "email": "bob@example.com"})))
	if err != nil || tok.Principal != "bob@example.com" {
		t.Fatalf("email as subject: %+v %v", tok, err)
	}
}

// hs256 signs claims with HMAC, which a JWKS validator must refuse.
func hs256(t *testing.T, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// retag signs claims with k but names kid in the header ("": none).
func retag(t *testing.T, k *oauthtest.Key, kid string, claims map[string]any) string {
	return (&oauthtest.Key{ID: kid, Alg: k.Alg, Signer: k.Signer}).Sign(t, claims)
}

// A token signed by a key the set does not hold yet makes the validator
// fetch the set again, at once, and accept the token if the key is there
// now; an unknown key id asks for at most one fetch a minute.
func TestOAuthBearerJWTUnknownKid(t *testing.T) {
	k1, k2 := oauthtest.NewRSA(t, "k1", jose.RS256), oauthtest.NewRSA(t, "k2", jose.RS512)
	srv := oauthtest.NewServer(t, k1)
	clock := time.Unix(1_900_000_000, 0)
	j := NewJWKS(JWKSConfig{URL: srv.URL, Refresh: time.Hour, Now: func() time.Time { return clock }})
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	v := &JWTValidator{Keys: j, ScopeClaim: "scope", SubClaim: "sub"}
	claims := oauthtest.Claims("alice", time.Hour, nil)
	if _, err := v.Validate(k1.Sign(t, claims)); err != nil {
		t.Fatal(err)
	}
	if n := srv.Fetches(); n != 1 {
		t.Fatalf("%d fetches after start, want 1", n)
	}
	// k2 is not published yet: one fetch, still refused.
	refusedWith(t, v, "unpublished kid", k2.Sign(t, claims), "Unable to find a suitable verification key")
	// Asking again within the minute does not fetch again.
	refusedWith(t, v, "unpublished kid again", k2.Sign(t, claims), "Unable to find a suitable verification key")
	if n := srv.Fetches(); n != 2 {
		t.Fatalf("%d fetches, want 2: one for the unknown kid", n)
	}
	// The key is rotated in; a minute later the kid may fetch again and
	// the token is accepted by the refreshed set.
	srv.SetKeys(k1, k2)
	clock = clock.Add(time.Minute)
	tok, err := v.Validate(k2.Sign(t, claims))
	if err != nil || tok.Principal != "alice" {
		t.Fatalf("after rotation: %+v %v", tok, err)
	}
	// k2 is known now: no more fetches.
	if _, err := v.Validate(k2.Sign(t, claims)); err != nil || srv.Fetches() != 3 {
		t.Fatalf("known kid: %v, %d fetches, want 3", err, srv.Fetches())
	}
	// A token without kid is checked against every key that fits.
	if _, err := v.Validate(retag(t, k2, "", claims)); err != nil {
		t.Fatalf("no kid: %v", err)
	}
}

func TestOAuthBearerJWKSSources(t *testing.T) {
	k := oauthtest.NewEC(t, "file-key")
	dir := t.TempDir()
	path := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(path, oauthtest.JWKS(k), 0o600); err != nil {
		t.Fatal(err)
	}
	v := &JWTValidator{Keys: startJWKS(t, "file://"+path), ScopeClaim: "scope", SubClaim: "sub"}
	if _, err := v.Validate(k.Sign(t, oauthtest.Claims("carol", time.Hour, nil))); err != nil {
		t.Fatalf("key from a file: %v", err)
	}

	// A missing file or an endpoint that keeps failing stops Start.
	if err := NewJWKS(JWKSConfig{URL: "file://" + filepath.Join(dir, "missing.json")}).Start(context.Background()); err == nil {
		t.Fatal("missing JWKS file accepted")
	}
	srv := oauthtest.NewServer(t, k)
	srv.Fail(http.StatusServiceUnavailable)
	j := NewJWKS(JWKSConfig{URL: srv.URL, Refresh: time.Hour, RetryBackoff: 10 * time.Millisecond, RetryBackoffMax: 100 * time.Millisecond})
	if err := j.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("failing endpoint: %v", err)
	}
	if n := srv.Fetches(); n < 3 {
		t.Fatalf("%d attempts within the retry backoff, want several", n)
	}

	// The periodic refresh picks up new keys; Close stops it.
	srv.SetKeys(k)
	j = NewJWKS(JWKSConfig{URL: srv.URL, Refresh: 20 * time.Millisecond})
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	k2 := oauthtest.NewEC(t, "second")
	srv.SetKeys(k, k2)
	deadline := time.Now().Add(5 * time.Second)
	for !hasKeyID(j.Keys(), "second") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	j.Close()
	if !hasKeyID(j.Keys(), "second") {
		t.Fatal("the periodic refresh did not pick up the new key")
	}
	// A request the loop sent just before Close may reach the server
	// after it: count from a moment later. A loop still running fetches
	// every 20 ms.
	time.Sleep(100 * time.Millisecond)
	n := srv.Fetches()
	time.Sleep(100 * time.Millisecond)
	if srv.Fetches() != n {
		t.Fatal("the set is still fetched after Close")
	}
}

func TestOAuthBearerParseJWKS(t *testing.T) {
	k := oauthtest.NewRSA(t, "ok", jose.RS256)
	doc := `{"keys":[` + strings.TrimSuffix(strings.TrimPrefix(string(oauthtest.JWKS(k)), `{"keys":[`), `]}`) +
		`,{"kty":"oct","kid":"hmac","k":"c2VjcmV0"},{"kty":"EC","crv":"P-999","kid":"bad","x":"AA","y":"AA"},{"kty":"WAT"}]}`
	keys, skipped, err := ParseJWKS([]byte(doc))
	if err != nil || len(keys) != 1 || keys[0].KeyID != "ok" || len(skipped) != 3 {
		t.Fatalf("keys %v, skipped %v, err %v", keys, skipped, err)
	}
	for _, bad := range []string{`[]`, `{}`, `not json`} {
		if _, _, err := ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("%s: accepted as a key set", bad)
		}
	}
}
