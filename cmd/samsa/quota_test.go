package main

import (
	"strings"
	"testing"
)

func TestQuotaSetListDelete(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "quota", "set", "--user", "alice", "--producer-byte-rate", "1048576", "--consumer-byte-rate", "2097152", "--bootstrap", b)
	r := mustRun(t, "", "quota", "set", "--user", "alice", "--client-id", "<default>", "--set", "request_percentage=50.5", "--bootstrap", b)
	if want := "set request_percentage=50.5 for {user=alice, client-id=<default>}\n"; r.stdout != want {
		t.Errorf("set printed %q, want %q", r.stdout, want)
	}
	mustRun(t, "", "quota", "set", "--client-id", "<default>", "--producer-byte-rate", "1024", "--bootstrap", b)
	mustRun(t, "", "quota", "set", "--ip", "10.0.0.1", "--connection-creation-rate", "10", "--bootstrap", b)

	r = mustRun(t, "", "quota", "list", "--bootstrap", b)
	want := [][]string{
		{"ENTITY", "KEY", "VALUE"},
		{"client-id=<default>", "producer_byte_rate", "1024"},
		{"ip=10.0.0.1", "connection_creation_rate", "10"},
		{"user=alice", "consumer_byte_rate", "2097152"},
		{"user=alice", "producer_byte_rate", "1048576"},
		{"user=alice,client-id=<default>", "request_percentage", "50.5"},
	}
	if got := fields(r.stdout); !equalRows(got, want) {
		t.Errorf("list printed %q, want %q", got, want)
	}
	r = mustRun(t, "", "quota", "list", "--user", "alice", "--strict", "--bootstrap", b)
	if got := fields(r.stdout); !equalRows(got, [][]string{want[0], want[3], want[4]}) {
		t.Errorf("list --user alice --strict printed %q", got)
	}

	// One key, then the rest of the entity's quotas.
	mustRun(t, "", "quota", "delete", "--user", "alice", "--key", "consumer_byte_rate", "--bootstrap", b)
	r = mustRun(t, "", "quota", "list", "--user", "alice", "--strict", "--bootstrap", b)
	if got := fields(r.stdout); !equalRows(got, [][]string{want[0], want[4]}) {
		t.Errorf("list after deleting consumer_byte_rate printed %q", got)
	}
	r = mustRun(t, "", "quota", "delete", "--user", "alice", "--bootstrap", b)
	if want := "deleted producer_byte_rate for {user=alice}\n"; r.stdout != want {
		t.Errorf("delete printed %q, want %q", r.stdout, want)
	}
	mustRun(t, "", "quota", "delete", "--client-id", "<default>", "--bootstrap", b)
	r = mustRun(t, "", "quota", "list", "--bootstrap", b)
	if got := fields(r.stdout); !equalRows(got, [][]string{want[0], want[2], want[5]}) {
		t.Errorf("list after deletes printed %q", got)
	}

	// The broker's validation, with Kafka's error name and message.
	failsWith(t, "INVALID_REQUEST: ", "quota", "set", "--ip", "10.0.0.2", "--producer-byte-rate", "5", "--bootstrap", b)
	failsWith(t, "{user=nobody} has no quotas", "quota", "delete", "--user", "nobody", "--bootstrap", b)
}

func TestQuotaUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"quota"},
		{"quota", "set", "--producer-byte-rate", "5"},
		{"quota", "set", "--user", "a"},
		{"quota", "set", "--user", "a", "--producer-byte-rate", "fast"},
		{"quota", "set", "--user", "a", "--set", "novalue"},
		{"quota", "delete"},
	} {
		r := samsa(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "usage: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with usage", args, r.code, r.stderr)
		}
	}
}
