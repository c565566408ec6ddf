package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// The share-group commands against a share group whose one member read
// and accepted five records: list, describe (member, start offset 5, lag
// 0), a reset back to offset 2 once the member left, and delete.
func TestShareGroupCLI(t *testing.T) {
	ctx := groupCtx(t)
	b := servertest.Addr(servertest.Start(t))
	admCl, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, 1, 1, nil, "jobs"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.ClientID("worker"), kgo.ShareGroup("workers"),
		kgo.ConsumeTopics("jobs"), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The member's first fetch starts the share partition at the log end;
	// then five records come.
	for {
		d := samsa(t, "", "share-group", "describe", "workers", "--bootstrap", b)
		if strings.Contains(d.stdout, "jobs   0") || strings.Contains(d.stdout, "START-OFFSET") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the group never read its partition:\n%s%s", d.stdout, d.stderr)
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		cl.PollFetches(pctx)
		cancel()
	}
	produceTo(t, b, "jobs", 0, 5, time.Now())
	got := 0
	for got < 5 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 5", got)
		}
		cl.MarkAcks(kgo.AckAccept, fs.Records()...)
		got += len(fs.Records())
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}

	if out := mustRun(t, "", "share-group", "list", "--bootstrap", b).stdout; !strings.Contains(out, "workers  Stable") {
		t.Fatalf("list:\n%s", out)
	}
	out := mustRun(t, "", "share-group", "describe", "workers", "--bootstrap", b).stdout
	for _, want := range []string{"STATE             Stable", "MEMBERS           1", "worker", "jobs:0", "jobs   0          5             0"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}

	// samsa group describe, for consumer groups, points to share-group.
	if r := samsa(t, "", "group", "describe", "workers", "--bootstrap", b); r.code == 0 ||
		r.stderr != "samsa: group \"workers\" is a share group: use samsa share-group describe workers\n" {
		t.Fatalf("group describe of a share group: exit %d\n%s", r.code, r.stderr)
	}

	// A group with a member is neither reset nor deleted.
	if r := samsa(t, "", "share-group", "reset-offsets", "workers", "--topic", "jobs", "--to-offset", "2", "--execute", "--bootstrap", b); r.code == 0 || !strings.Contains(r.stderr, "active members") {
		t.Fatalf("reset of an active group: exit %d\n%s", r.code, r.stderr)
	}
	cl.Close()
	plan := mustRun(t, "", "share-group", "reset-offsets", "workers", "--topic", "jobs", "--to-offset", "2", "--bootstrap", b).stdout
	if !strings.Contains(plan, "jobs   0          2") || !strings.Contains(plan, "dry run") {
		t.Fatalf("plan:\n%s", plan)
	}
	mustRun(t, "", "share-group", "reset-offsets", "workers", "--topic", "jobs", "--to-offset", "2", "--execute", "--bootstrap", b)
	out = mustRun(t, "", "share-group", "describe", "workers", "--bootstrap", b).stdout
	if !strings.Contains(out, "jobs   0          2             3") || !strings.Contains(out, "STATE             Empty") {
		t.Fatalf("describe after reset:\n%s", out)
	}
	if out := mustRun(t, "", "share-group", "delete", "workers", "--bootstrap", b).stdout; !strings.Contains(out, "deleted share group workers") {
		t.Fatalf("delete:\n%s", out)
	}
	if r := samsa(t, "", "share-group", "describe", "workers", "--bootstrap", b); r.code == 0 || !strings.Contains(r.stderr, "does not exist") {
		t.Fatalf("describe after delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
