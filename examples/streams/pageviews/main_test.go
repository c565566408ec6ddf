package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// The program over a broker: per page and minute, one final count per
// window once a later view closes it; a view later than the grace is not
// counted.
func TestPageViews(t *testing.T) {
	addr := servertest.Addr(servertest.Start(t))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, topic := range []string{"views", "per-minute"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	view := func(user, page string, at time.Duration) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "views", Key: []byte(user), Value: []byte(page), Timestamp: t0.Add(at)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	view("ann", "/home", 5*time.Second)
	view("bob", "/home", 30*time.Second)
	view("ann", "/cart", 50*time.Second)
	view("bob", "/home", 65*time.Second)
	view("cid", "/home", 55*time.Second) // late, within the 10 s grace
	view("cid", "/cart", 75*time.Second) // stream time 75 s: closes [0, 60 s)
	view("dan", "/home", 40*time.Second) // 35 s late for [0, 60 s): dropped
	view("eve", "/x", 3*time.Minute)     // closes [60 s, 120 s)

	var stderr bytes.Buffer
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"--bootstrap", addr, "--input", "views", "--output", "per-minute",
			"--application-id", "pv", "--exactly-once"}, &stderr)
	}()
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("per-minute"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	want := []string{"/cart@2026-12-02T06:00:00Z=1", "/home@2026-12-02T06:00:00Z=3",
		"/cart@2026-12-02T06:01:00Z=1", "/home@2026-12-02T06:01:00Z=1"}
	for len(got) < len(want) {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("output %v, want %v\n%s", got, want, stderr.String())
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("output\n got %v\nwant %v", got, want)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
}
