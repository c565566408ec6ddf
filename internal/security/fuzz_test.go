package security

import (
	"bytes"
	"strings"
	"testing"
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
