package security

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// RFC 7677 section 3: the SCRAM-SHA-256 exchange of user "user" with
// password "pencil".
const (
	rfcClientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	rfcServerNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	rfcServerFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	rfcClientFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	rfcServerFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
)

func rfcCredentials(t testing.TB) ScramCredentials {
	salt, err := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	if err != nil {
		t.Fatal(err)
	}
	cred := ScramSHA256.NewCredential("pencil", salt, 4096)
	return func(m ScramMechanism, user string) (ScramCredential, bool) {
		return cred, m == ScramSHA256 && user == "user"
	}
}

func rfcServer(t testing.TB) *scramServer {
	s := NewScramServer(ScramSHA256, rfcCredentials(t)).(*scramServer)
	s.nonce = func() string { return rfcServerNonce }
	return s
}

func TestScramRFC7677(t *testing.T) {
	s := rfcServer(t)
	out, done, err := s.Step([]byte(rfcClientFirst))
	if err != nil || done || string(out) != rfcServerFirst {
		t.Fatalf("server-first %q, done %v, err %v; want %q", out, done, err, rfcServerFirst)
	}
	out, done, err = s.Step([]byte(rfcClientFinal))
	if err != nil || !done || string(out) != rfcServerFinal {
		t.Fatalf("server-final %q, done %v, err %v; want %q", out, done, err, rfcServerFinal)
	}
	if p := s.Principal(); p != User("user") {
		t.Fatalf("principal %v", p)
	}
	if _, _, err := s.Step([]byte(rfcClientFinal)); err == nil {
		t.Fatal("a message after completion was accepted")
	}
}

func TestScramRefusals(t *testing.T) {
	wrongProof := strings.Replace(rfcClientFinal, "p=dHzb", "p=dHzc", 1)
	for _, tc := range []struct {
		name, first, final string
		visible            string // client-visible message, "" for the generic one
	}{
		{name: "unknown user", first: "n,,n=nobody,r=abc"},
		{name: "wrong proof", first: rfcClientFirst, final: wrongProof},
		{name: "short proof", first: rfcClientFirst, final: strings.Replace(rfcClientFinal, "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "p=AAAA", 1)},
		{name: "channel binding flag y", first: "y,,n=user,r=rOprNGfwEbeRWgbNEkqO"},
		{name: "channel binding p=", first: "p=tls-unique,,n=user,r=rOprNGfwEbeRWgbNEkqO"},
		{name: "binding differs from gs2 header", first: rfcClientFirst, final: strings.Replace(rfcClientFinal, "c=biws", "c=eSws", 1)},
		{name: "nonce not ours", first: rfcClientFirst, final: strings.Replace(rfcClientFinal, "$k0,", "$k1,", 1)},
		{name: "mandatory extension", first: "n,,m=foo,n=user,r=abc"},
		{name: "delegation token", first: "n,,n=user,r=abc,tokenauth=true"},
		{name: "other authzid", first: "n,a=admin,n=user,r=abc", visible: "Authentication failed: Client requested an authorization id that is different from username"},
		{name: "bad escape", first: "n,,n=us=er,r=abc"},
		{name: "not a message", first: "hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rfcServer(t)
			_, _, err := s.Step([]byte(tc.first))
			if err == nil && tc.final != "" {
				_, _, err = s.Step([]byte(tc.final))
			}
			if err == nil {
				t.Fatal("accepted")
			}
			var ae *AuthenticationError
			if got := errors.As(err, &ae); got != (tc.visible != "") || (got && ae.Message != tc.visible) {
				t.Fatalf("error %v: client-visible %v, want %q", err, got, tc.visible)
			}
			if msg := FailureMessage(err, "SCRAM-SHA-256", false); tc.visible == "" &&
				msg != "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" {
				t.Fatalf("failure message %q", msg)
			}
		})
	}
}

// librdkafka 2.0 repeats its own nonce in client-final ("r=" + client
// nonce + the whole server nonce); Kafka accepts a nonce that ends with
// the server's, and so does Samsa, as long as the proof is right.
func TestScramLibrdkafkaNonce(t *testing.T) {
	cred := ScramSHA256.NewCredential("pencil", []byte("salt"), 4096)
	s := NewScramServer(ScramSHA256, func(ScramMechanism, string) (ScramCredential, bool) { return cred, true }).(*scramServer)
	s.nonce = func() string { return "SERVER" }
	first := "n,,n=user,r=CLIENT"
	serverFirst, _, err := s.Step([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	withoutProof := "c=biws,r=CLIENT" + "CLIENTSERVER"
	auth := first[3:] + "," + string(serverFirst) + "," + withoutProof
	salted := ScramSHA256.SaltedPassword("pencil", []byte("salt"), 4096)
	clientKey := ScramSHA256.hmac(salted, []byte("Client Key"))
	sig := ScramSHA256.hmac(ScramSHA256.digest(clientKey), []byte(auth))
	proof := make([]byte, len(sig))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	final := withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)
	if _, done, err := s.Step([]byte(final)); err != nil || !done {
		t.Fatalf("librdkafka's client-final refused: %v", err)
	}
}

func TestScramTooFewIterations(t *testing.T) {
	cred := ScramSHA512.NewCredential("pw", []byte("salt"), 4095)
	s := NewScramServer(ScramSHA512, func(ScramMechanism, string) (ScramCredential, bool) { return cred, true })
	if _, _, err := s.Step([]byte("n,,n=u,r=abc")); err == nil {
		t.Fatal("a credential of 4095 iterations was used")
	}
}

// TestScramAgainstFranz runs franz-go's SCRAM client against the server,
// for both mechanisms, with names that need escaping and an authzid.
func TestScramAgainstFranz(t *testing.T) {
	for _, m := range []ScramMechanism{ScramSHA256, ScramSHA512} {
		for _, user := range []string{"alice", "a,b=c", "zoë"} {
			cred := m.NewCredential("s3cret", []byte("0123456789abcdef"), 4096)
			creds := func(mm ScramMechanism, u string) (ScramCredential, bool) { return cred, mm == m && u == user }
			for _, pass := range []string{"s3cret", "wrong"} {
				auth := scram.Auth{User: user, Pass: pass, Zid: user}
				mech := auth.AsSha256Mechanism()
				if m == ScramSHA512 {
					mech = auth.AsSha512Mechanism()
				}
				sess, msg, err := mech.Authenticate(t.Context(), "host")
				if err != nil {
					t.Fatal(err)
				}
				srv := NewScramServer(m, creds)
				var done bool
				for !done {
					var out []byte
					var srvDone bool
					out, srvDone, err = srv.Step(msg)
					if err != nil {
						break
					}
					done, msg, err = sess.Challenge(out)
					if err != nil {
						t.Fatalf("%s %q: client refused the server: %v", m, user, err)
					}
					if done != srvDone {
						t.Fatalf("client done %v, server done %v", done, srvDone)
					}
				}
				if ok := err == nil; ok != (pass == "s3cret") {
					t.Fatalf("%s user %q password %q: authenticated %v (%v)", m, user, pass, ok, err)
				}
				if err == nil && srv.Principal() != User(user) {
					t.Fatalf("principal %v", srv.Principal())
				}
			}
		}
	}
}

func TestScramCredentialFromSalted(t *testing.T) {
	salt := []byte("pepper")
	salted := ScramSHA512.SaltedPassword("pw", salt, 4096)
	a := ScramSHA512.CredentialFromSalted(salt, salted, 4096)
	b := ScramSHA512.NewCredential("pw", salt, 4096)
	if !bytes.Equal(a.StoredKey, b.StoredKey) || !bytes.Equal(a.ServerKey, b.ServerKey) || len(a.StoredKey) != 64 {
		t.Fatalf("credentials differ: %x %x", a.StoredKey, b.StoredKey)
	}
}
