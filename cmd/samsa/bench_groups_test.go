package main

import (
	"encoding/json"
	"testing"

	"github.com/samsa-io/samsa/internal/servertest"
)

// benchGroups runs `samsa bench-groups ... --json` and decodes the result.
func benchGroups(t *testing.T, args ...string) benchGroupsResult {
	t.Helper()
	r := mustRun(t, "", append([]string{"bench-groups", "--json"}, args...)...)
	var res benchGroupsResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bench-groups --json output: %v\n%s", err, r.stdout)
	}
	return res
}

// TestBenchGroups runs every mode with tiny sizes against an in-process
// server and checks that the report adds up.
func TestBenchGroups(t *testing.T) {
	addr := servertest.Addr(servertest.Start(t, "group.initial.rebalance.delay.ms=0",
		"group.consumer.heartbeat.interval.ms=100"))

	res := benchGroups(t, "commit", "--bootstrap", addr, "--clients", "1,2", "--duration", "200ms", "--partitions", "3")
	if len(res.Commit) != 4 {
		t.Fatalf("commit cases = %+v, want simple and member for 1 and 2 clients", res.Commit)
	}
	for i, want := range []struct {
		mode    string
		clients int
	}{{"simple", 1}, {"simple", 2}, {"member", 1}, {"member", 2}} {
		c := res.Commit[i]
		if c.Mode != want.mode || c.Clients != want.clients || c.Partitions != 3 || c.Errors != 0 ||
			c.Commits < int64(want.clients) || c.Seconds < 0.2 || c.P50 <= 0 || c.P50 > c.P99 {
			t.Errorf("case %d = %+v, want %s with %d clients, 3 partitions, no errors", i, c, want.mode, want.clients)
		}
	}

	res = benchGroups(t, "rebalance", "--bootstrap", addr, "--members", "3", "--partitions", "4",
		"--runs", "2", "--heartbeat", "100ms")
	if len(res.Rebalance) != 3 {
		t.Fatalf("rebalance cases = %+v, want range, cooperative-sticky, consumer", res.Rebalance)
	}
	for i, proto := range []string{"range", "cooperative-sticky", "consumer"} {
		c := res.Rebalance[i]
		if c.Protocol != proto || c.Members != 3 || c.Partitions != 4 || len(c.RunsMs) != 2 || len(c.JoinMs) != 2 ||
			c.MinMs <= 0 || c.MinMs > c.MedianMs || c.MedianMs > c.MaxMs {
			t.Errorf("%s = %+v", proto, c)
		}
	}

	res = benchGroups(t, "offsets", "--bootstrap", addr, "--groups", "40", "--partitions", "5", "--concurrency", "4",
		"--group-prefix", "g")
	if o := res.Offsets; o == nil || o.Groups != 40 || o.Partitions != 5 || o.Errors != 0 || o.GroupsOK != 40 {
		t.Fatalf("offsets = %+v, want 40 groups of 5 partitions committed", o)
	}
	// --check reads back exactly what was committed: group i, partition p
	// at i*100+p+1.
	res = benchGroups(t, "offsets", "--bootstrap", addr, "--groups", "40", "--partitions", "5", "--group-prefix", "g", "--check")
	if o := res.Offsets; o == nil || o.GroupsOK != 40 || o.Errors != 0 || o.LoadMs <= 0 || o.LoadedAtMs == 0 {
		t.Fatalf("offsets --check = %+v, want 40 groups ok", o)
	}
	// A group whose offsets differ fails the check.
	mustRun(t, "", "group", "delete", "g-00007", "--bootstrap", addr)
	r := samsa(t, "", "bench-groups", "offsets", "--bootstrap", addr, "--groups", "40", "--partitions", "5",
		"--group-prefix", "g", "--check", "--tsv")
	if r.code != exitFail {
		t.Errorf("check after deleting a group: exit %d, want %d\n%s%s", r.code, exitFail, r.stdout, r.stderr)
	}
}

func TestBenchGroupsUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"commit", "--clients", "0"},
		{"rebalance", "--protocols", "roundrobin"},
		{"rebalance", "--members", "1"},
		{"offsets", "--groups", "0"},
	} {
		r := samsa(t, "", append([]string{"bench-groups", "--bootstrap", "127.0.0.1:1"}, args...)...)
		if r.code != exitUsage {
			t.Errorf("bench-groups %v: exit %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
}
