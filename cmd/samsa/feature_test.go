package main

import (
	"strings"
	"testing"
)

func TestFeatureDescribeUpgradeDowngrade(t *testing.T) {
	b := startTestCluster(t)
	describe := func() [][]string {
		t.Helper()
		r := mustRun(t, "", "feature", "describe", "--bootstrap", b)
		rows := fields(r.stdout)
		return rows[:len(rows)-1] // the last line is the epoch
	}
	want := [][]string{
		{"FEATURE", "SUPPORTED", "FINALIZED"},
		{"eligible.leader.replicas.version", "0-1", "1"},
		{"group.version", "0-1", "1"},
		{"kraft.version", "0-1", "0"},
		{"metadata.version", "7", "(3.3)-27", "(4.1)", "27", "(4.1)"},
		{"share.version", "0-1", "1"},
		{"streams.version", "0-1", "1"},
		{"transaction.version", "0-2", "2"},
	}
	if got := describe(); !equalRows(got, want) {
		t.Fatalf("describe printed %q, want %q", got, want)
	}

	r := mustRun(t, "", "feature", "downgrade", "--feature", "group.version=0", "--dry-run", "--bootstrap", b)
	if r.stdout != "group.version can be downgraded to 0\n" {
		t.Errorf("dry run printed %q", r.stdout)
	}
	if got := describe(); got[2][2] != "1" {
		t.Fatalf("a dry run changed group.version: %q", got[2])
	}
	r = mustRun(t, "", "feature", "downgrade", "--feature", "group.version=0", "--bootstrap", b)
	if r.stdout != "group.version was downgraded to 0\n" {
		t.Errorf("downgrade printed %q", r.stdout)
	}
	if got := describe(); got[2][2] != "0" {
		t.Fatalf("after the downgrade: %q", got[2])
	}
	mustRun(t, "", "feature", "upgrade", "--feature", "group.version=1", "--bootstrap", b)
	if got := describe(); got[2][2] != "1" {
		t.Fatalf("after the upgrade: %q", got[2])
	}

	// The controller's refusals, with Kafka's error name and message.
	failsWith(t, "INVALID_UPDATE_VERSION: The update failed for all features since the following feature had an error: Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions [0-2]",
		"feature", "upgrade", "--feature", "transaction.version=3", "--bootstrap", b)
	// transaction.version downgrades, as Kafka lets it, and upgrades back.
	mustRun(t, "", "feature", "downgrade", "--feature", "transaction.version=0", "--bootstrap", b)
	if got := describe(); got[7][2] != "0" {
		t.Fatalf("after the transaction.version downgrade: %q", got[7])
	}
	mustRun(t, "", "feature", "upgrade", "--feature", "transaction.version=2", "--bootstrap", b)
	failsWith(t, "Can't downgrade the version of this feature", "feature", "upgrade", "--feature", "group.version=0", "--bootstrap", b)
	// A static quorum (the embedded single-node config) upgrades to
	// kraft.version 1 (KIP-853), and never back.
	mustRun(t, "", "feature", "upgrade", "--feature", "kraft.version=1", "--bootstrap", b)
	if got := describe(); got[3][0] != "kraft.version" || got[3][2] != "1" {
		t.Fatalf("after the kraft.version upgrade: %q", got[3])
	}
	failsWith(t, "kraft.version cannot be downgraded", "feature", "downgrade", "--feature", "kraft.version=0", "--bootstrap", b)
	failsWith(t, "Refusing to perform the requested downgrade because it might delete metadata information",
		"feature", "downgrade", "--feature", "metadata.version=21", "--bootstrap", b)
	// eligible.leader.replicas.version downgrades safely, as Kafka's,
	// and upgrades back.
	mustRun(t, "", "feature", "downgrade", "--feature", "eligible.leader.replicas.version=0", "--bootstrap", b)
	if got := describe(); got[1][2] != "0" {
		t.Fatalf("after the ELR downgrade: %q", got[1])
	}
	mustRun(t, "", "feature", "upgrade", "--feature", "eligible.leader.replicas.version=1", "--bootstrap", b)
	// --release-version names what Samsa does not implement.
	r = samsa(t, "", "feature", "upgrade", "--release-version", "4.2", "--bootstrap", b)
	if r.code != exitUsage || !strings.Contains(r.stderr, "metadata.version=29 (the default of release 4.2) is not supported: Samsa implements") {
		t.Errorf("upgrade --release-version 4.2: exit %d, stderr %q", r.code, r.stderr)
	}
}
