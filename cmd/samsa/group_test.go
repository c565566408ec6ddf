package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// startGroupCluster starts a Samsa server (no initial rebalance delay) for
// the group CLI tests and returns its bootstrap address.
func startGroupCluster(t *testing.T) string {
	t.Helper()
	return servertest.Addr(servertest.Start(t, "group.initial.rebalance.delay.ms=0"))
}

// groupCtx bounds one group test's client calls.
func groupCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produceTo writes n records to one partition with timestamps ts, ts+1s, ...
// and returns nothing: the tests read offsets back through the CLI.
func produceTo(t *testing.T, b, topic string, partition int32, n int, ts time.Time) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: partition,
			Value: fmt.Appendf(nil, "v%d", i), Timestamp: ts.Add(time.Duration(i) * time.Second)})
	}
	if err := cl.ProduceSync(groupCtx(t), rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s:%d: %v", topic, partition, err)
	}
}

// joinAndConsume starts a member of group that reads topic from the start
// until it has n records, commits what it read, and stays in the group
// until the test closes it (or the test ends).
func joinAndConsume(t *testing.T, b, group, topic string, n int) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.ClientID("billing"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.RoundRobinBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := groupCtx(t)
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("group %s: consumed %d of %d records before timeout", group, got, n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s:%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	waitGroupState(t, b, group, "Stable")
	return cl
}

// waitGroupState polls DescribeGroups until group is in state: a member
// that has read nothing yet may still be joining.
func waitGroupState(t *testing.T, b, group, state string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := groupCtx(t)
	var last string
	for ctx.Err() == nil {
		ds, err := adm.DescribeGroups(ctx, group)
		if err == nil {
			if last = ds[group].State; last == state {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("group %s: state %q, want %q", group, last, state)
}

// committed returns the group's committed offsets of topic by partition.
func committed(t *testing.T, b, group string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	os, err := kadm.NewClient(cl).FetchOffsets(groupCtx(t), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{} // some brokers say so for a deleted group
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	os.Each(func(o kadm.OffsetResponse) { out[o.Partition] = o.At })
	return out
}

// describeSections splits `group describe` output into its header (key ->
// value) and the rows of its member and partition tables.
func describeSections(out string) (header map[string]string, members, parts [][]string) {
	header = map[string]string{}
	blocks := strings.Split(strings.TrimSpace(out), "\n\n")
	for _, line := range strings.Split(blocks[0], "\n") {
		f := strings.Fields(line)
		header[f[0]] = strings.Join(f[1:], " ")
	}
	for _, blk := range blocks[1:] {
		rows := fields(blk)
		switch rows[0][0] {
		case "MEMBER-ID":
			members = rows
		case "TOPIC":
			parts = rows
		}
	}
	return header, members, parts
}

func TestGroupDescribeLagAndList(t *testing.T) {
	b := startGroupCluster(t)
	mustRun(t, "", "topic", "create", "orders", "--partitions", "3", "--bootstrap", b)
	now := time.Now().Truncate(time.Millisecond)
	for p, n := range []int{4, 3, 2} {
		produceTo(t, b, "orders", int32(p), n, now)
	}
	cl := joinAndConsume(t, b, "g1", "orders", 9)

	r := mustRun(t, "", "group", "describe", "g1", "--bootstrap", b)
	header, members, parts := describeSections(r.stdout)
	for k, v := range map[string]string{"GROUP": "g1", "STATE": "Stable", "PROTOCOL-TYPE": "consumer",
		"PROTOCOL": "roundrobin", "MEMBERS": "1", "TOTAL-LAG": "0"} {
		if header[k] != v {
			t.Errorf("%s = %q, want %q\n%s", k, header[k], v, r.stdout)
		}
	}
	if len(members) != 2 {
		t.Fatalf("members table = %q, want header + 1 member", members)
	}
	memberID := members[1][0]
	if m := members[1]; m[1] != "-" || m[2] != "billing" || !strings.Contains(m[3], "127.0.0.1") || m[4] != "orders:0,1,2" {
		t.Errorf("member row = %q, want [id - billing /127.0.0.1 orders:0,1,2]", m)
	}
	want := [][]string{
		{"TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID"},
		{"orders", "0", "4", "4", "0", memberID},
		{"orders", "1", "3", "3", "0", memberID},
		{"orders", "2", "2", "2", "0", memberID},
	}
	if !equalRows(parts, want) {
		t.Errorf("partitions = %q, want %q", parts, want)
	}

	// New records the member has not committed yet show up as lag.
	produceTo(t, b, "orders", 1, 5, now)
	r = mustRun(t, "", "group", "describe", "g1", "--bootstrap", b)
	header, _, parts = describeSections(r.stdout)
	if header["TOTAL-LAG"] != "5" || len(parts) != 4 || strings.Join(parts[2], " ") != "orders 1 3 8 5 "+memberID {
		t.Errorf("after 5 more records on partition 1: TOTAL-LAG %q, rows %q", header["TOTAL-LAG"], parts)
	}

	r = mustRun(t, "", "group", "list", "--bootstrap", b)
	if got, want := fields(r.stdout), [][]string{{"GROUP", "STATE", "PROTOCOL-TYPE"}, {"g1", "Stable", "consumer"}}; !equalRows(got, want) {
		t.Errorf("list = %q, want %q", got, want)
	}
	r = mustRun(t, "", "group", "list", "--state", "empty,PreparingRebalance", "--bootstrap", b)
	if got := fields(r.stdout); len(got) != 1 {
		t.Errorf("list --state empty = %q, want only the header", got)
	}
	r = mustRun(t, "", "group", "list", "--state", "stable", "--bootstrap", b)
	if got := fields(r.stdout); len(got) != 2 || got[1][0] != "g1" {
		t.Errorf("list --state stable = %q, want g1", got)
	}
	r = samsa(t, "", "group", "list", "--state", "sleepy", "--bootstrap", b)
	if r.code != 2 || !strings.HasPrefix(r.stderr, "samsa group list: unknown group state \"sleepy\"") {
		t.Errorf("list --state sleepy: exit %d stderr %q", r.code, r.stderr)
	}

	// A member that leaves takes its assignment with it; the commits stay.
	cl.Close()
	r = mustRun(t, "", "group", "describe", "g1", "--bootstrap", b)
	header, members, parts = describeSections(r.stdout)
	if header["STATE"] != "Empty" || header["MEMBERS"] != "0" || members != nil {
		t.Errorf("after leave: state %q members %q table %q", header["STATE"], header["MEMBERS"], members)
	}
	want = [][]string{
		{"TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID"},
		{"orders", "0", "4", "4", "0", "-"},
		{"orders", "1", "3", "8", "5", "-"},
		{"orders", "2", "2", "2", "0", "-"},
	}
	if !equalRows(parts, want) {
		t.Errorf("partitions after leave = %q, want %q", parts, want)
	}
	r = mustRun(t, "", "group", "list", "--state", "Empty", "--bootstrap", b)
	if got, want := fields(r.stdout), [][]string{{"GROUP", "STATE", "PROTOCOL-TYPE"}, {"g1", "Empty", "consumer"}}; !equalRows(got, want) {
		t.Errorf("list --state Empty = %q, want %q", got, want)
	}
}

func TestGroupDescribeMissing(t *testing.T) {
	b := startGroupCluster(t)
	r := samsa(t, "", "group", "describe", "nobody", "--bootstrap", b)
	if r.code != 1 || r.stderr != "samsa: group \"nobody\" does not exist\n" || r.stdout != "" {
		t.Errorf("describe missing group: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = samsa(t, "", "group", "describe", "--bootstrap", b)
	if r.code != 2 || !strings.Contains(r.stderr, "want at least one group name") {
		t.Errorf("describe without name: exit %d stderr %q", r.code, r.stderr)
	}
	r = samsa(t, "", "group", "frobnicate")
	if r.code != 2 || !strings.HasPrefix(r.stderr, "samsa group: unknown subcommand \"frobnicate\"") {
		t.Errorf("unknown subcommand: exit %d stderr %q", r.code, r.stderr)
	}
	r = samsa(t, "", "group", "list", "--bootstrap", deadAddr(t), "--timeout", "300ms")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "samsa: cannot reach ") {
		t.Errorf("list against a dead address: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestGroupResetOffsets(t *testing.T) {
	b := startGroupCluster(t)
	mustRun(t, "", "topic", "create", "events", "--partitions", "2", "--bootstrap", b)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	produceTo(t, b, "events", 0, 5, t0)
	produceTo(t, b, "events", 1, 5, t0)
	joinAndConsume(t, b, "g2", "events", 10).Close()
	assertCommitted := func(what string, want map[int32]int64) {
		t.Helper()
		if got := committed(t, b, "g2"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: committed %v, want %v", what, got, want)
		}
	}
	assertCommitted("after consuming", map[int32]int64{0: 5, 1: 5})

	// Dry run (the default) prints the plan and commits nothing.
	r := mustRun(t, "", "group", "reset-offsets", "g2", "--topic", "events", "--to-earliest", "--bootstrap", b)
	want := [][]string{{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}, {"g2", "events", "0", "0"}, {"g2", "events", "1", "0"}}
	if got := fields(r.stdout); !equalRows(got, want) {
		t.Errorf("dry run plan = %q, want %q", got, want)
	}
	if !strings.Contains(r.stderr, "dry run, nothing committed") {
		t.Errorf("dry run stderr = %q, want a note that nothing was committed", r.stderr)
	}
	assertCommitted("after dry run", map[int32]int64{0: 5, 1: 5})

	for _, c := range []struct {
		args    []string
		planned []int32 // partitions the plan must list
		want    map[int32]int64
	}{
		{[]string{"--topic", "events:1", "--to-offset", "2"}, []int32{1}, map[int32]int64{0: 5, 1: 2}},
		{[]string{"--topic", "events", "--to-earliest"}, []int32{0, 1}, map[int32]int64{0: 0, 1: 0}},
		{[]string{"--topic", "events", "--to-latest"}, []int32{0, 1}, map[int32]int64{0: 5, 1: 5}},
		// The first record at or after t0+3s is the fourth of each partition.
		{[]string{"--topic", "events", "--to-datetime", t0.Add(3 * time.Second).UTC().Format(time.RFC3339)},
			[]int32{0, 1}, map[int32]int64{0: 3, 1: 3}},
		{[]string{"--topic", "events:0", "--to-timestamp", fmt.Sprint(t0.Add(1500 * time.Millisecond).UnixMilli())},
			[]int32{0}, map[int32]int64{0: 2, 1: 3}},
		// No record that late: the end offset.
		{[]string{"--topic", "events:1", "--to-timestamp", fmt.Sprint(time.Now().Add(time.Hour).UnixMilli())},
			[]int32{1}, map[int32]int64{0: 2, 1: 5}},
		{[]string{"--topic", "events", "--shift-by", "-3"}, []int32{0, 1}, map[int32]int64{0: 0, 1: 2}},
		// Out-of-range targets are clamped to the log, as Kafka does.
		{[]string{"--topic", "events:0,1", "--to-offset", "99"}, []int32{0, 1}, map[int32]int64{0: 5, 1: 5}},
	} {
		args := append([]string{"group", "reset-offsets", "g2", "--execute", "--bootstrap", b}, c.args...)
		r := mustRun(t, "", args...)
		want := [][]string{{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}}
		for _, p := range c.planned {
			want = append(want, []string{"g2", "events", fmt.Sprint(p), fmt.Sprint(c.want[p])})
		}
		if got := fields(r.stdout); !equalRows(got, want) {
			t.Errorf("%v: plan %q, want %q", c.args, got, want)
		}
		if r.stderr != "" {
			t.Errorf("%v: stderr %q", c.args, r.stderr)
		}
		assertCommitted(strings.Join(c.args, " "), c.want)
	}

	// An active member would overwrite whatever we commit: refuse.
	joinAndConsume(t, b, "g2", "events", 0)
	r = samsa(t, "", "group", "reset-offsets", "g2", "--topic", "events", "--to-earliest", "--execute", "--bootstrap", b)
	if r.code != 1 || r.stderr != "samsa: group \"g2\" is Stable with 1 member: offsets can only be reset while it is inactive (Empty); stop its consumers first\n" {
		t.Errorf("reset of an active group: exit %d stderr %q", r.code, r.stderr)
	}
	assertCommitted("after refused reset", map[int32]int64{0: 5, 1: 5})

	// A group that never existed can be given offsets to start from.
	mustRun(t, "", "group", "reset-offsets", "fresh", "--topic", "events:1", "--to-offset", "4", "--execute", "--bootstrap", b)
	if got := committed(t, b, "fresh"); fmt.Sprint(got) != "map[1:4]" {
		t.Errorf("new group committed %v, want map[1:4]", got)
	}
}

func TestGroupResetOffsetsBadInput(t *testing.T) {
	b := startGroupCluster(t)
	mustRun(t, "", "topic", "create", "events", "--partitions", "2", "--bootstrap", b)
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"g", "--topic", "events"}, 2, "want exactly one of --to-earliest"},
		{[]string{"g", "--topic", "events", "--to-earliest", "--to-latest"}, 2, "want exactly one of --to-earliest"},
		{[]string{"g", "--to-earliest"}, 2, "want at least one --topic"},
		{[]string{"--topic", "events", "--to-earliest"}, 2, "want exactly one group name, got 0"},
		{[]string{"g", "--topic", "events:x", "--to-earliest"}, 2, `invalid partition "x" in --topic "events:x"`},
		{[]string{"g", "--topic", "events", "--to-offset", "-1"}, 2, `invalid --to-offset "-1"`},
		{[]string{"g", "--topic", "events", "--to-datetime", "yesterday"}, 2, `invalid --to-datetime "yesterday"`},
		{[]string{"g", "--topic", "events", "--to-earliest", "--execute", "--dry-run"}, 2, "--execute and --dry-run exclude each other"},
		{[]string{"g", "--topic", "nope", "--to-earliest"}, 1, "samsa: topic \"nope\" does not exist\n"},
		{[]string{"g", "--topic", "events:0,7", "--to-earliest"}, 1, "samsa: topic \"events\" has no partition 7 (it has 2)\n"},
		{[]string{"g", "--topic", "events", "--shift-by", "1"}, 1, "samsa: cannot shift events:0: group \"g\" has no committed offset for it\n"},
	} {
		r := samsa(t, "", append([]string{"group", "reset-offsets", "--bootstrap", b}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.stderr) || r.stdout != "" {
			t.Errorf("reset-offsets %v: exit %d stdout %q stderr %q, want exit %d and %q",
				c.args, r.code, r.stdout, r.stderr, c.code, c.stderr)
		}
	}
}

func TestGroupDelete(t *testing.T) {
	b := startGroupCluster(t)
	mustRun(t, "", "topic", "create", "jobs", "--partitions", "1", "--bootstrap", b)
	produceTo(t, b, "jobs", 0, 3, time.Now())
	cl := joinAndConsume(t, b, "g3", "jobs", 3)

	r := samsa(t, "", "group", "delete", "g3", "--bootstrap", b)
	if r.code != 1 || r.stderr != "samsa: group \"g3\" still has active members: stop its consumers first\n" {
		t.Errorf("delete active group: exit %d stderr %q", r.code, r.stderr)
	}
	if got := committed(t, b, "g3"); got[0] != 3 {
		t.Errorf("committed after refused delete = %v, want partition 0 at 3", got)
	}

	cl.Close()
	r = samsa(t, "", "group", "delete", "g3", "ghost", "--bootstrap", b)
	if r.code != 1 || r.stdout != "deleted group g3\n" || r.stderr != "samsa: group \"ghost\" does not exist\n" {
		t.Errorf("delete g3 ghost: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := committed(t, b, "g3"); len(got) != 0 {
		t.Errorf("committed after delete = %v, want none", got)
	}
	r = samsa(t, "", "group", "describe", "g3", "--bootstrap", b)
	if r.code != 1 || r.stderr != "samsa: group \"g3\" does not exist\n" {
		t.Errorf("describe deleted group: exit %d stderr %q", r.code, r.stderr)
	}
	r = mustRun(t, "", "group", "list", "--bootstrap", b)
	if got := fields(r.stdout); len(got) != 1 {
		t.Errorf("list after delete = %q, want only the header", got)
	}
}
