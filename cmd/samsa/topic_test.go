package main

import (
	"regexp"
	"strings"
	"testing"
)

// fields splits each non-empty output line into whitespace-separated cells.
func fields(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			rows = append(rows, strings.Fields(line))
		}
	}
	return rows
}

func TestTopicCreateList(t *testing.T) {
	b := startTestCluster(t)
	r := mustRun(t, "", "topic", "create", "orders", "--partitions", "3", "--replication-factor", "1", "--bootstrap", b)
	if want := "created topic orders: 3 partitions, replication factor 1\n"; r.stdout != want {
		t.Errorf("create stdout = %q, want %q", r.stdout, want)
	}
	mustRun(t, "", "topic", "create", "--bootstrap", b, "audit", "--partitions", "1")

	r = mustRun(t, "", "topic", "list", "--bootstrap", b)
	want := [][]string{
		{"NAME", "PARTITIONS", "REPLICATION-FACTOR"},
		{"audit", "1", "1"},
		{"orders", "3", "1"},
	}
	if got := fields(r.stdout); !equalRows(got, want) {
		t.Errorf("list = %q, want %q", got, want)
	}
}

func TestTopicCreateExisting(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "x", "--partitions", "2", "--bootstrap", b)
	r := samsa(t, "", "topic", "create", "x", "--bootstrap", b)
	if r.code != 1 || r.stderr != "samsa: topic \"x\" already exists\n" || r.stdout != "" {
		t.Errorf("second create: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = mustRun(t, "", "topic", "create", "x", "--if-not-exists", "--bootstrap", b)
	if r.stdout != "" || r.stderr != "" {
		t.Errorf("--if-not-exists printed stdout %q stderr %q", r.stdout, r.stderr)
	}
}

func TestTopicDescribe(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "logs", "--partitions", "2", "--bootstrap", b,
		"--config", "cleanup.policy=compact", "--config", "retention.ms=60000")
	// Keyed: a compacted topic refuses records without keys.
	mustRun(t, "k1:a\nk2:b\nk3:c\n", "produce", "logs", "--partition", "1", "--key-separator", ":", "--bootstrap", b)

	r := mustRun(t, "", "topic", "describe", "logs", "--bootstrap", b)
	rows := fields(r.stdout)
	header := map[string]string{}
	for _, row := range rows[:6] {
		header[row[0]] = strings.Join(row[1:], " ")
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`).MatchString(header["ID"]) {
		t.Errorf("ID %q is not a Kafka-style base64url topic id", header["ID"])
	}
	for k, v := range map[string]string{
		"NAME": "logs", "INTERNAL": "false", "PARTITIONS": "2", "REPLICAS": "1",
		"CONFIGS": "cleanup.policy=compact,retention.ms=60000",
	} {
		if header[k] != v {
			t.Errorf("%s = %q, want %q", k, header[k], v)
		}
	}
	want := [][]string{
		{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "LOG-START", "LOG-END"},
		{"0", "1", "0", "[1]", "[1]", "0", "0"},
		{"1", "1", "0", "[1]", "[1]", "0", "3"},
	}
	if got := rows[6:]; !equalRows(got, want) {
		t.Errorf("partitions = %q, want %q", got, want)
	}
}

func TestTopicDeleteThenDescribe(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "gone", "--bootstrap", b)
	r := mustRun(t, "", "topic", "delete", "gone", "--bootstrap", b)
	if r.stdout != "deleted topic gone\n" {
		t.Errorf("delete stdout = %q", r.stdout)
	}
	r = samsa(t, "", "topic", "describe", "gone", "--bootstrap", b)
	if r.code != 1 || r.stderr != "samsa: topic \"gone\" does not exist\n" {
		t.Errorf("describe deleted: exit %d stderr %q", r.code, r.stderr)
	}
	r = samsa(t, "", "topic", "delete", "gone", "--bootstrap", b)
	if r.code != 1 || r.stderr != "samsa: topic \"gone\" does not exist\n" {
		t.Errorf("delete missing: exit %d stderr %q", r.code, r.stderr)
	}
	r = mustRun(t, "", "topic", "delete", "gone", "--if-exists", "--bootstrap", b)
	if r.stdout != "" || r.stderr != "" {
		t.Errorf("delete --if-exists: stdout %q stderr %q", r.stdout, r.stderr)
	}
	r = samsa(t, "", "topic", "list", "--bootstrap", b)
	if got := fields(r.stdout); len(got) != 1 {
		t.Errorf("list after delete = %q, want only the header", got)
	}
}

func TestTopicDeleteSeveral(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "a", "--bootstrap", b)
	mustRun(t, "", "topic", "create", "c", "--bootstrap", b)
	r := samsa(t, "", "topic", "delete", "a", "b", "c", "--bootstrap", b)
	if r.code != 1 || r.stdout != "deleted topic a\ndeleted topic c\n" ||
		r.stderr != "samsa: topic \"b\" does not exist\n" {
		t.Errorf("delete a b c: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func equalRows(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], "\x00") != strings.Join(b[i], "\x00") {
			return false
		}
	}
	return true
}
