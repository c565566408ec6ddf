package security

import (
	"bytes"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for the parsers that read bytes from unauthenticated
// clients (and the JAAS text of the configuration). Their seed corpora
// are in testdata/fuzz and run with every go test.

func FuzzScramClientFirst(f *testing.F) {
	f.Add([]byte(rfcClientFirst))
	f.Add([]byte("n,a=user,n=user,r=abc,tokenauth=true"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := ParseScramClientFirst(msg)
		if err != nil {
			return
		}
		if m.User == "" || m.Nonce == "" || !strings.HasSuffix(string(msg), m.Bare) {
			t.Fatalf("parsed %q as %+v", msg, m)
		}
		if got, err := decodeSaslName(encodeSaslName(m.User)); err != nil || got != m.User {
			t.Fatalf("user %q does not round-trip: %q %v", m.User, got, err)
		}
		// The whole server must take any first message without panicking.
		s := rfcServer(t)
		s.Step(msg)
	})
}

func FuzzScramClientFinal(f *testing.F) {
	f.Add([]byte(rfcClientFinal))
	f.Add([]byte("c=biws,r=abc,x=y,p=AAAA"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := ParseScramClientFinal(msg)
		if err == nil && (len(m.Proof) == 0 || !strings.HasPrefix(string(msg), m.WithoutProof)) {
			t.Fatalf("parsed %q as %+v", msg, m)
		}
		s := rfcServer(t)
		if _, _, err := s.Step([]byte(rfcClientFirst)); err != nil {
			t.Fatal(err)
		}
		_, done, err := s.Step(msg)
		if done != (err == nil) || (done && !bytes.Equal(msg, []byte(rfcClientFinal))) {
			t.Fatalf("final %q: done %v err %v", msg, done, err)
		}
	})
}

func FuzzPlainToken(f *testing.F) {
	f.Add([]byte("\x00alice\x00al\"ice's"))
	f.Add([]byte("a\x00b\x00c\x00d"))
	users, err := PlainUsersFromJAAS(plainJAAS)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token []byte) {
		s := NewPlainServer(users)
		_, done, err := s.Step(token)
		if done != (err == nil) {
			t.Fatalf("done %v err %v", done, err)
		}
		if done {
			_, user, pw, _ := ParsePlain(token)
			if s.Principal() != User(user) || !users.Check(user, pw) {
				t.Fatalf("%q authenticated as %v", token, s.Principal())
			}
		}
	})
}

func FuzzJAAS(f *testing.F) {
	f.Add(plainJAAS)
	f.Add(`a.B required k="x\"y" /* c */ // d
	;`)
	f.Fuzz(func(t *testing.T, text string) {
		mods, err := ParseJAAS(text)
		if err == nil && len(mods) == 0 {
			t.Fatalf("%q: no modules and no error", text)
		}
	})
}

// unsecuredSeed is an unsigned token for alice that expires in 2030.
const unsecuredSeed = "eyJhbGciOiJub25lIn0.eyJleHAiOjE5MDAwMDAwMDAsInN1YiI6ImFsaWNlIn0."

func FuzzOAuthBearerClientFirst(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer " + unsecuredSeed + "\x01\x01"))
	f.Add([]byte("n,a=alice,\x01auth=Bearer " + unsecuredSeed + "\x01traceId=1\x01\x01"))
	f.Add([]byte("\x01"))
	now := func() time.Time { return time.Unix(1_800_000_000, 0) }
	validators := []OAuthBearerValidator{
		&UnsecuredValidator{PrincipalClaim: "sub", ScopeClaim: "scope", Now: now},
		// A key set that holds no key: every signed token is refused.
		&JWTValidator{Keys: NewJWKS(JWKSConfig{URL: "file:///nonexistent"}), ScopeClaim: "scope", SubClaim: "sub", Now: now},
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := ParseOAuthBearerClientFirst(msg)
		if err == nil {
			// What was parsed is what a client would send for it.
			var ext []string
			for k, v := range m.Extensions {
				ext = append(ext, k+"="+v)
			}
			authz := ""
			if m.AuthzID != "" {
				authz = "a=" + m.AuthzID
			}
			again, err := ParseOAuthBearerClientFirst(clientFirst(authz, m.Token, ext...))
			if err != nil || again.AuthzID != m.AuthzID || again.Token != m.Token || !maps.Equal(again.Extensions, m.Extensions) {
				t.Fatalf("%q parsed as %+v, which does not round-trip: %+v %v", msg, m, again, err)
			}
		}
		for _, v := range validators {
			s := NewOAuthBearerServer(v)
			out, done, err := s.Step(msg)
			switch {
			case done && (err != nil || len(out) != 0 || s.Principal().Name == ""):
				t.Fatalf("%q: done with %q, %v, principal %v", msg, out, err, s.Principal())
			case !done && err == nil:
				// A refused token: the client's ^A fails the exchange
				// with the JSON as the message.
				_, _, err := s.Step([]byte{0x01})
				var ae *AuthenticationError
				if !errors.As(err, &ae) || ae.Message != string(out) {
					t.Fatalf("%q: refused with %q, then %v", msg, out, err)
				}
			}
		}
	})
}

func FuzzUnsecuredToken(f *testing.F) {
	f.Add(unsecuredSeed)
	f.Add("eyJhbGciOiJub25lIn0.eyJleHAiOjEuOWU5LCJzdWIiOlsiYSJdLCJzY29wZSI6MX0.")
	f.Add("..")
	v := &UnsecuredValidator{PrincipalClaim: "sub", ScopeClaim: "scope", RequiredScope: nil,
		Now: func() time.Time { return time.Unix(1_800_000_000, 0) }}
	f.Fuzz(func(t *testing.T, token string) {
		tok, err := v.Validate(token)
		var te *TokenError
		switch {
		case err != nil && !errors.As(err, &te):
			t.Fatalf("%q: refused without a TokenError: %v", token, err)
		case err == nil && (strings.TrimSpace(tok.Principal) == "" || !tok.Expiry.After(v.Now())):
			t.Fatalf("%q: accepted as %+v", token, tok)
		}
	})
}
