package main

import (
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/servertest"
)

// startAuthz starts a node with Kafka's StandardAuthorizer, admin as the
// super user, and PLAIN users admin, alice and bob on a SASL listener.
func startAuthz(t *testing.T) string {
	t.Helper()
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
	srv := servertest.Start(t,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin",
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+jaas)
	return srv.Addr("SASL_PLAINTEXT")
}

// as are the connection flags of a PLAIN user of startAuthz's node.
func as(b, user string) []string {
	return []string{"--bootstrap", b, "--sasl-mechanism", "PLAIN", "--user", user, "--password", user + "-secret", "--timeout", "5s"}
}

func TestACLCreateListDelete(t *testing.T) {
	b := startAuthz(t)
	admin := func(args ...string) []string { return append(args, as(b, "admin")...) }
	alice := func(args ...string) []string { return append(args, as(b, "alice")...) }
	mustRun(t, "", admin("topic", "create", "orders", "--partitions", "1")...)

	failsWithInput(t, "x\n", "TOPIC_AUTHORIZATION_FAILED", alice("produce", "orders")...)

	r := mustRun(t, "", admin("acl", "create", "--allow-principal", "User:alice", "--operation", "Write",
		"--operation", "describe", "--topic", "orders")...)
	want := [][]string{
		{"created", "2", "ACLs:"},
		{"RESOURCE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "PERMISSION", "OPERATION"},
		{"TOPIC", "orders", "LITERAL", "User:alice", "*", "ALLOW", "DESCRIBE"},
		{"TOPIC", "orders", "LITERAL", "User:alice", "*", "ALLOW", "WRITE"},
	}
	if got := fields(r.stdout); !equalRows(got, want) {
		t.Errorf("create printed %q, want %q", got, want)
	}
	mustRun(t, "", admin("acl", "create", "--deny-principal", "User:bob", "--deny-host", "127.0.0.1",
		"--operation", "All", "--group", "billing-", "--resource-pattern-type", "prefixed")...)
	mustRun(t, "", admin("acl", "create", "--allow-principal", "User:*", "--operation", "IdempotentWrite", "--cluster")...)

	// Alice may write now.
	mustRun(t, "a\nb\n", alice("produce", "orders")...)

	r = mustRun(t, "", admin("acl", "list")...)
	want = [][]string{
		{"RESOURCE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "PERMISSION", "OPERATION"},
		{"CLUSTER", "kafka-cluster", "LITERAL", "User:*", "*", "ALLOW", "IDEMPOTENT_WRITE"},
		{"GROUP", "billing-", "PREFIXED", "User:bob", "127.0.0.1", "DENY", "ALL"},
		{"TOPIC", "orders", "LITERAL", "User:alice", "*", "ALLOW", "DESCRIBE"},
		{"TOPIC", "orders", "LITERAL", "User:alice", "*", "ALLOW", "WRITE"},
	}
	if got := fields(r.stdout); !equalRows(got, want) {
		t.Errorf("list printed %q, want %q", got, want)
	}
	// Filters: a resource (match: literal, prefixed and * ACLs that apply
	// to the name), a principal, an operation.
	r = mustRun(t, "", admin("acl", "list", "--group", "billing-eu", "--resource-pattern-type", "match")...)
	if got := fields(r.stdout); len(got) != 2 || got[1][3] != "User:bob" {
		t.Errorf("list --group billing-eu --resource-pattern-type match printed %q, want bob's prefixed ACL", got)
	}
	r = mustRun(t, "", admin("acl", "list", "--principal", "User:alice", "--operation", "write")...)
	if got := fields(r.stdout); len(got) != 2 || got[1][6] != "WRITE" {
		t.Errorf("list --principal User:alice --operation write printed %q", got)
	}

	// Delete alice's WRITE only, then everything on the topic.
	r = mustRun(t, "", admin("acl", "delete", "--topic", "orders", "--allow-principal", "User:alice", "--operation", "Write")...)
	if got := fields(r.stdout); len(got) != 3 || got[0][1] != "1" || got[2][6] != "WRITE" {
		t.Errorf("delete WRITE printed %q", got)
	}
	failsWithInput(t, "x\n", "TOPIC_AUTHORIZATION_FAILED", alice("produce", "orders")...)
	r = mustRun(t, "", admin("acl", "delete", "--topic", "orders")...)
	if got := fields(r.stdout); len(got) != 3 || got[2][6] != "DESCRIBE" {
		t.Errorf("delete --topic orders printed %q", got)
	}
	r = mustRun(t, "", admin("acl", "delete", "--topic", "orders")...)
	if r.stdout != "deleted 0 ACLs\n" {
		t.Errorf("second delete printed %q", r.stdout)
	}
	r = mustRun(t, "", admin("acl", "list", "--topic", "orders")...)
	if got := fields(r.stdout); len(got) != 1 {
		t.Errorf("list after delete printed %q, want the header only", got)
	}

	// Only super users and those allowed ALTER on the cluster manage ACLs.
	failsWith(t, "CLUSTER_AUTHORIZATION_FAILED", alice("acl", "list")...)
	failsWith(t, "CLUSTER_AUTHORIZATION_FAILED", alice("acl", "create", "--allow-principal", "User:alice",
		"--operation", "Read", "--topic", "orders")...)
}

func TestACLSecurityDisabled(t *testing.T) {
	b := startTestCluster(t)
	for _, args := range [][]string{
		{"acl", "list"},
		{"acl", "create", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t"},
		{"acl", "delete", "--topic", "t"},
	} {
		r := samsa(t, "", append(args, "--bootstrap", b)...)
		if r.code != exitFail || !strings.Contains(r.stderr, "SECURITY_DISABLED: ") ||
			!strings.Contains(r.stderr, "set authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer") {
			t.Errorf("%v: exit %d, stderr %q; want 1, SECURITY_DISABLED and how to enable the authorizer", args, r.code, r.stderr)
		}
	}
}

func TestACLUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"acl"},
		{"acl", "create", "--operation", "Read", "--topic", "t"},
		{"acl", "create", "--allow-principal", "alice", "--operation", "Read", "--topic", "t"},
		{"acl", "create", "--allow-principal", "User:alice", "--topic", "t"},
		{"acl", "create", "--allow-principal", "User:alice", "--operation", "Read"},
		{"acl", "create", "--allow-principal", "User:alice", "--operation", "Any", "--topic", "t"},
		{"acl", "create", "--allow-principal", "User:alice", "--operation", "Fly", "--topic", "t"},
		{"acl", "create", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t", "--resource-pattern-type", "match"},
		{"acl", "create", "--deny-host", "1.2.3.4", "--allow-principal", "User:a", "--operation", "Read", "--topic", "t"},
		{"acl", "create", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"},
		{"acl", "create", "--allow-principal", "User:a", "--operation", "Read", "--cluster"},
		{"acl", "list", "--resource-pattern-type", "glob"},
		{"acl", "delete", "--allow-principal", "User:alice"},
	} {
		r := samsa(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "usage: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with usage", args, r.code, r.stderr)
		}
	}
}
