package security

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/security/oauthtest"
)

// clientFirst is an OAUTHBEARER client's first message as Kafka's and
// franz-go's clients send it.
func clientFirst(authz, token string, ext ...string) []byte {
	s := "n," + authz + ",\x01auth=Bearer " + token + "\x01"
	for _, e := range ext {
		s += e + "\x01"
	}
	return []byte(s + "\x01")
}

func TestParseOAuthBearerClientFirst(t *testing.T) {
	for _, tc := range []struct {
		msg       string
		authz     string
		token     string
		ext       map[string]string
		wantError string
	}{
		{msg: "n,,\x01auth=Bearer abc.def.\x01\x01", token: "abc.def."},
		{msg: "n,a=alice,\x01auth=bearer  t0k-_~+/=\x01\x01", authz: "alice", token: "t0k-_~+/="},
		{msg: "n,,\x01auth=Bearer t\x01traceId=x y=z\x01traceId=last\x01\x01", token: "t", ext: map[string]string{"traceId": "last"}},
		{msg: "n,a=a=2Cb,\x01auth=Bearer t\x01\x01", authz: "a=2Cb", token: "t"},
		{msg: "y,,\x01auth=Bearer t\x01\x01", wantError: "Invalid OAUTHBEARER client first message"},
		{msg: "n,,auth=Bearer t\x01\x01", wantError: "Invalid OAUTHBEARER client first message"},
		{msg: "n,,\x01auth=Bearer t\x01", wantError: "Invalid OAUTHBEARER client first message"},
		{msg: "n,a=a,b,\x01auth=Bearer t\x01\x01", wantError: "Invalid OAUTHBEARER client first message"},
		{msg: "n,a=a=b,\x01auth=Bearer t\x01\x01", wantError: "Invalid OAUTHBEARER client first message"},
		{msg: "n,,\x01au th=Bearer t\x01\x01", wantError: "Invalid OAUTHBEARER client first message"},
		{msg: "n,,\x01auth=Bearer t\x01k=\x01\x01", wantError: "Invalid OAUTHBEARER client first message"},
		{msg: "n,,\x01auth=Bearer t\x01k=é\x01\x01", wantError: "Invalid OAUTHBEARER client first message"},
		{msg: "n,,\x01\x01", wantError: "'auth' not specified"},
		{msg: "n,,\x01traceId=1\x01\x01", wantError: "'auth' not specified"},
		{msg: "n,,\x01auth=Bearer\x01\x01", wantError: "invalid 'auth' format"},
		{msg: "n,,\x01auth=Bearer a b\x01\x01", wantError: "invalid 'auth' format"},
		{msg: "n,,\x01auth=Bearer a=b\x01\x01", wantError: "invalid 'auth' format"},
		{msg: "n,,\x01auth=Basic dXNlcg==\x01\x01", wantError: "Invalid scheme in OAUTHBEARER client first message: Basic"},
	} {
		m, err := ParseOAuthBearerClientFirst([]byte(tc.msg))
		if tc.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("%q: %v, want an error with %q", tc.msg, err, tc.wantError)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.msg, err)
			continue
		}
		if m.AuthzID != tc.authz || m.Token != tc.token || !maps.Equal(m.Extensions, tc.ext) {
			t.Errorf("%q: parsed %+v", tc.msg, m)
		}
	}
}

// fixedClock is a validator's clock.
func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// The exchange of Kafka's OAuthBearerSaslServer: an accepted token
// completes it; a refused one is answered with the RFC 7628 JSON error,
// and the client's ^A then fails it with that JSON as the message.
func TestOAuthBearerServer(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	v := &UnsecuredValidator{PrincipalClaim: "sub", ScopeClaim: "scope", Now: fixedClock(now)}
	good := oauthtest.Unsigned(map[string]any{"sub": "alice", "iat": now.Unix(), "exp": now.Unix() + 60})
	expired := oauthtest.Unsigned(map[string]any{"sub": "alice", "iat": now.Unix() - 120, "exp": now.Unix() - 60})

	s := NewOAuthBearerServer(v)
	out, done, err := s.Step(clientFirst("", good, "traceId=42"))
	if err != nil || !done || len(out) != 0 {
		t.Fatalf("good token: %q %v %v", out, done, err)
	}
	if s.Principal() != User("alice") {
		t.Fatalf("principal %v", s.Principal())
	}
	if exp := s.(ExpiringCredential).CredentialExpiry(); !exp.Equal(now.Add(time.Minute)) {
		t.Fatalf("credential expiry %v, want the token's exp", exp)
	}

	s = NewOAuthBearerServer(v)
	out, done, err = s.Step(clientFirst("", expired))
	if err != nil || done || string(out) != `{"status":"invalid_token"}` {
		t.Fatalf("expired token: %q %v %v", out, done, err)
	}
	_, done, err = s.Step([]byte{0x01})
	var ae *AuthenticationError
	if done || !errors.As(err, &ae) || ae.Message != `{"status":"invalid_token"}` {
		t.Fatalf("after ^A: done %v, %v; want the JSON as the client's message", done, err)
	}
	if FailureMessage(err, MechanismOAuthBearer, false) != `{"status":"invalid_token"}` {
		t.Fatalf("client message %q", FailureMessage(err, MechanismOAuthBearer, false))
	}
	if !strings.Contains(err.Error(), "Expiration Time") {
		t.Fatalf("the broker's log misses why: %v", err)
	}

	// Instead of ^A, a client may try again with another token.
	s = NewOAuthBearerServer(v)
	if out, _, _ := s.Step(clientFirst("", expired)); len(out) == 0 {
		t.Fatal("expired token accepted")
	}
	if _, done, err := s.Step(clientFirst("", good)); !done || err != nil {
		t.Fatalf("second attempt: %v %v", done, err)
	}

	// A ^A with no error outstanding is a malformed first message: the
	// client gets Kafka's generic message.
	_, _, err = NewOAuthBearerServer(v).Step([]byte{0x01})
	if err == nil || errors.As(err, &ae) {
		t.Fatalf("lone ^A: %v", err)
	}

	// An authorization id must be the token's principal.
	_, _, err = NewOAuthBearerServer(v).Step(clientFirst("a=bob", good))
	want := "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)"
	if !errors.As(err, &ae) || ae.Message != want {
		t.Fatalf("authzid bob: %v", err)
	}
	if _, done, err := NewOAuthBearerServer(v).Step(clientFirst("a=alice", good)); !done || err != nil {
		t.Fatalf("authzid alice: %v %v", done, err)
	}
}

func TestOAuthBearerUnsecuredValidator(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	sec := now.Unix()
	v, err := NewUnsecuredValidator(map[string]string{"unsecuredValidatorRequiredScope": "read  write"})
	if err != nil {
		t.Fatal(err)
	}
	v.Now = fixedClock(now)
	claims := func(more map[string]any) map[string]any {
		c := map[string]any{"sub": "alice", "iat": sec, "exp": sec + 60, "scope": []string{"read", " write ", "other"}}
		for k, x := range more {
			if x == nil {
				delete(c, k)
			} else {
				c[k] = x
			}
		}
		return c
	}
	tok, err := v.Validate(oauthtest.Unsigned(claims(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Principal != "alice" || !tok.Expiry.Equal(now.Add(time.Minute)) || !tok.IssuedAt.Equal(now) ||
		strings.Join(tok.Scope, ",") != "read,write,other" {
		t.Fatalf("token %+v", tok)
	}
	for _, tc := range []struct {
		name   string
		token  string
		reason string
		json   string
	}{
		{"expired", oauthtest.Unsigned(claims(map[string]any{"exp": sec})), "was on or after the Expiration Time", ""},
		{"no exp", oauthtest.Unsigned(claims(map[string]any{"exp": nil})), "No expiration time in JWT", ""},
		{"exp a string", oauthtest.Unsigned(claims(map[string]any{"exp": "soon"})), "The 'exp' claim was not of type Number: String", ""},
		{"issued in the future", oauthtest.Unsigned(claims(map[string]any{"iat": sec + 1})), "The Issued At value", ""},
		{"missing sub", oauthtest.Unsigned(claims(map[string]any{"sub": nil})), "No principal name in JWT claim: sub", ""},
		{"blank sub", oauthtest.Unsigned(claims(map[string]any{"sub": "  "})), "No principal name in JWT claim: sub", ""},
		{"numeric sub", oauthtest.Unsigned(claims(map[string]any{"sub": 7})), "The 'sub' claim was not of type String: Double", ""},
		{"missing scope", oauthtest.Unsigned(claims(map[string]any{"scope": "read"})),
			"was missing a required scope (write)", `{"status":"insufficient_scope", "scope":"[read, write]"}`},
		{"signed", oauthtest.Unsigned(claims(nil)) + "c2ln", "must not contain a digital signature", ""},
		{"alg HS256", "eyJhbGciOiJIUzI1NiJ9." + strings.Split(oauthtest.Unsigned(claims(nil)), ".")[1] + ".",
			"Unsecured JWS must have 'none' for an algorithm", ""},
		{"two parts", "eyJhbGciOiJub25lIn0.e30", "3 dot-separated", ""},
		{"empty part", "eyJhbGciOiJub25lIn0..", "contains '..'", ""},
		{"not base64", "eyJhbGciOiJub25lIn0.!!!.", "malformed Base64", ""},
		{"not JSON", "eyJhbGciOiJub25lIn0.bm90IGpzb24.", "malformed JSON", ""},
	} {
		_, err := v.Validate(tc.token)
		var te *TokenError
		if !errors.As(err, &te) || !strings.Contains(te.Reason, tc.reason) {
			t.Errorf("%s: %v, want a refusal with %q", tc.name, err, tc.reason)
			continue
		}
		want := tc.json
		if want == "" {
			want = `{"status":"invalid_token"}`
		}
		if te.json() != want {
			t.Errorf("%s: client told %s, want %s", tc.name, te.json(), want)
		}
	}
	// The clock skew is slack on both ends; iat is optional.
	v.ClockSkew = 5 * time.Second
	if _, err := v.Validate(oauthtest.Unsigned(claims(map[string]any{"exp": sec - 4, "iat": nil}))); err != nil {
		t.Errorf("expired 4 s ago with 5 s of skew: %v", err)
	}
	if _, err := v.Validate(oauthtest.Unsigned(claims(map[string]any{"iat": sec + 4}))); err != nil {
		t.Errorf("issued 4 s ahead with 5 s of skew: %v", err)
	}
	_, err = v.Validate(oauthtest.Unsigned(claims(map[string]any{"iat": sec + 4, "exp": sec + 3})))
	if err == nil || !strings.Contains(err.Error(), "was not after the Issued At time") {
		t.Errorf("exp before iat: %v", err)
	}
}

func TestOAuthBearerUnsecuredOptions(t *testing.T) {
	v, err := NewUnsecuredValidator(map[string]string{
		"unsecuredValidatorPrincipalClaimName":   " email ",
		"unsecuredValidatorScopeClaimName":       "scp",
		"unsecuredValidatorAllowableClockSkewMs": "1500",
		"unsecuredLoginStringClaim_sub":          "ignored: the broker's own login",
	})
	if err != nil {
		t.Fatal(err)
	}
	if v.PrincipalClaim != "email" || v.ScopeClaim != "scp" || v.ClockSkew != 1500*time.Millisecond || v.RequiredScope != nil {
		t.Fatalf("options read as %+v", v)
	}
	exp := time.Now().Add(time.Minute).Unix()
	tok, err := v.Validate(oauthtest.Unsigned(map[string]any{"email": "e@example.com", "sub": "x", "exp": exp, "scp": "a b"}))
	if err != nil || tok.Principal != "e@example.com" || len(tok.Scope) != 1 || tok.Scope[0] != "a b" {
		t.Fatalf("token %+v, %v", tok, err)
	}
	for opts, want := range map[string]string{
		"unsecuredValidatorAllowableClockSkewMs=-1":  "unsecuredValidatorAllowableClockSkewMs",
		"unsecuredValidatorAllowableClockSkewMs=1s":  "unsecuredValidatorAllowableClockSkewMs",
		`unsecuredValidatorRequiredScope=a "quoted"`: "unsecuredValidatorRequiredScope",
	} {
		k, val, _ := strings.Cut(opts, "=")
		if _, err := NewUnsecuredValidator(map[string]string{k: val}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", opts, err)
		}
	}
}
