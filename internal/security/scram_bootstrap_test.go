package security

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
)

func TestParseScramArg(t *testing.T) {
	a, err := ParseScramArg(" SCRAM-SHA-256=[name=alice,password=alice-secret] ", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	want := ScramSHA256.NewCredential("alice-secret", a.Credential.Salt, 4096)
	if a.Name != "alice" || a.Mechanism != ScramSHA256 || len(a.Credential.Salt) != 32 ||
		!bytes.Equal(a.Credential.StoredKey, want.StoredKey) || a.Credential.Iterations != 4096 {
		t.Fatalf("parsed %+v", a)
	}
	salt := []byte("fixed salt")
	salted := ScramSHA512.SaltedPassword("pw", salt, 8192)
	a, err = ParseScramArg(`SCRAM-SHA-512=[name="bob",iterations=8192,salt="`+base64.StdEncoding.EncodeToString(salt)+
		`",saltedpassword="`+base64.StdEncoding.EncodeToString(salted)+`"]`, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	want = ScramSHA512.NewCredential("pw", salt, 8192)
	if a.Name != "bob" || !bytes.Equal(a.Credential.ServerKey, want.ServerKey) || !bytes.Equal(a.Credential.Salt, salt) {
		t.Fatalf("parsed %+v", a)
	}
	for arg, msg := range map[string]string{
		"SCRAM-SHA-256":                                  "equals sign",
		"SCRAM-SHA-1=[name=a,password=b]":                "not supported",
		"SCRAM-SHA-256=name=a,password=b]":               "start with [",
		"SCRAM-SHA-256=[name=a,password=b":               "end with ]",
		"SCRAM-SHA-256=[password=b]":                     "'name'",
		"SCRAM-SHA-256=[name=a]":                         "'password' or 'saltedpassword'",
		"SCRAM-SHA-256=[name=a,saltedpassword=AAAA]":     "'salt' with 'saltedpassword'",
		"SCRAM-SHA-256=[name=a,password=b,iterations=9]": "between 4096 and 16384",
		"SCRAM-SHA-256=[name=a,password=b,salt=!!]":      "decode given salt",
		"SCRAM-SHA-256=[name=a,password=b,color=red]":    "unknown SCRAM configurations: color",
		"SCRAM-SHA-256=[name=a,password]":                "no equals sign",
	} {
		if _, err := ParseScramArg(arg, rand.Reader); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error with %q", arg, err, msg)
		}
	}
}
