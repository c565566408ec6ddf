package security

import (
	"errors"
	"testing"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required
	username="admin" password="admin-secret"
	user_admin="admin-secret" user_alice='al"ice\'s' user_bob="b\\o\nb";`

func TestPlain(t *testing.T) {
	users, err := PlainUsersFromJAAS(plainJAAS)
	if err != nil {
		t.Fatal(err)
	}
	if users.Len() != 3 {
		t.Fatalf("%d users, want 3 (username/password define none)", users.Len())
	}
	for _, tc := range []struct {
		token string
		user  string // "" : refused
		msg   string
	}{
		{token: "\x00alice\x00al\"ice's", user: "alice"},
		{token: "alice\x00alice\x00al\"ice's", user: "alice"},
		{token: "\x00bob\x00b\\o\nb", user: "bob"},
		{token: "\x00admin\x00admin-secret", user: "admin"},
		{token: "\x00alice\x00wrong", msg: "Authentication failed: Invalid username or password"},
		{token: "\x00alice\x00al\"ice'", msg: "Authentication failed: Invalid username or password"},
		{token: "\x00mallory\x00x", msg: "Authentication failed: Invalid username or password"},
		{token: "\x00admin\x00", msg: "Authentication failed: password not specified"},
		{token: "\x00\x00x", msg: "Authentication failed: username not specified"},
		{token: "bob\x00alice\x00al\"ice's", msg: "Authentication failed: Client requested an authorization id that is different from username"},
		{token: "alice", msg: "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
		{token: "a\x00b\x00c\x00d", msg: "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
	} {
		s := NewPlainServer(users)
		out, done, err := s.Step([]byte(tc.token))
		if tc.user != "" {
			if err != nil || !done || len(out) != 0 || s.Principal() != User(tc.user) {
				t.Fatalf("%q: done %v err %v principal %v", tc.token, done, err, s.Principal())
			}
			continue
		}
		var ae *AuthenticationError
		if err == nil || !errors.As(err, &ae) || ae.Message != tc.msg {
			t.Fatalf("%q: error %v, want %q", tc.token, err, tc.msg)
		}
	}
}

func TestPlainJAASRefused(t *testing.T) {
	for _, jaas := range []string{
		`org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="x";
		 org.apache.kafka.common.security.plain.PlainLoginModule required user_b="y";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="x"`,
	} {
		if _, err := PlainUsersFromJAAS(jaas); err == nil {
			t.Errorf("accepted %q", jaas)
		}
	}
}
