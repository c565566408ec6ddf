package main

import (
	"strings"
	"testing"
)

func TestUserCreateLoginListDelete(t *testing.T) {
	srv := startSASL(t)
	b := srv.Addr("SASL_PLAINTEXT")
	admin := func(args ...string) []string {
		return append(args, "--bootstrap", b, "--sasl-mechanism", "PLAIN", "--sasl-user", "admin", "--sasl-password", "admin-secret")
	}
	dave := func(mech, pw string) []string {
		return []string{"--bootstrap", b, "--sasl-mechanism", mech, "--user", "dave", "--password", pw, "--timeout", "3s"}
	}
	// The password from stdin, so it is neither on the command line nor in
	// the environment.
	r := mustRun(t, "dave-256\n", admin("user", "create", "dave")...)
	if want := "created SCRAM-SHA-256 credential for user dave (4096 iterations)\n"; r.stdout != want {
		t.Errorf("create printed %q, want %q", r.stdout, want)
	}
	t.Setenv(newPasswordEnv, "dave-512")
	mustRun(t, "", admin("user", "create", "dave", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")...)

	// dave logs in with either credential.
	mustRun(t, "", append([]string{"topic", "list"}, dave("SCRAM-SHA-256", "dave-256")...)...)
	mustRun(t, "", append([]string{"topic", "list"}, dave("SCRAM-SHA-512", "dave-512")...)...)
	failsWith(t, "SASL_AUTHENTICATION_FAILED", append([]string{"topic", "list"}, dave("SCRAM-SHA-512", "dave-256")...)...)

	r = mustRun(t, "", admin("user", "list")...)
	want := [][]string{
		{"USER", "MECHANISM", "ITERATIONS"},
		{"dave", "SCRAM-SHA-256", "4096"},
		{"dave", "SCRAM-SHA-512", "8192"},
	}
	if got := fields(r.stdout); !equalRows(got, want) {
		t.Errorf("list printed %q, want %q", got, want)
	}

	r = mustRun(t, "", admin("user", "delete", "dave", "--mechanism", "SCRAM-SHA-512")...)
	if want := "deleted SCRAM-SHA-512 credential of user dave\n"; r.stdout != want {
		t.Errorf("delete printed %q, want %q", r.stdout, want)
	}
	failsWith(t, "SASL_AUTHENTICATION_FAILED", append([]string{"topic", "list"}, dave("SCRAM-SHA-512", "dave-512")...)...)
	mustRun(t, "", append([]string{"topic", "list"}, dave("SCRAM-SHA-256", "dave-256")...)...)
	r = mustRun(t, "", admin("user", "list", "dave")...)
	if got := fields(r.stdout); len(got) != 2 || got[1][1] != "SCRAM-SHA-256" {
		t.Errorf("list dave after delete printed %q", got)
	}

	failsWith(t, "RESOURCE_NOT_FOUND: ", admin("user", "delete", "dave", "--mechanism", "SCRAM-SHA-512")...)
	failsWith(t, "RESOURCE_NOT_FOUND: ", admin("user", "list", "nobody")...)
}

func TestUserUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"user"},
		{"user", "create"},
		{"user", "create", "a", "b", "--password", "x"},
		{"user", "create", "a", "--mechanism", "SCRAM-SHA-1", "--password", "x"},
		{"user", "create", "a"}, // no password anywhere
		{"user", "delete", "a"}, // no mechanism
	} {
		r := samsa(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "usage: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with usage", args, r.code, r.stderr)
		}
	}
}
