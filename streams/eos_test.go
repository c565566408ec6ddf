package streams_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
	"github.com/samsa-io/samsa/streams"
)

func startEOS(t *testing.T, top *streams.Topology, addr, appID string) *streams.App {
	t.Helper()
	app, err := streams.New(top, streams.Config{ApplicationID: appID, Bootstrap: []string{addr},
		ProcessingGuarantee: streams.ExactlyOnceV2, Logger: servertest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	go app.Run(context.Background())
	return app
}

// readExactlyOnce reads topic read_committed until every word's latest
// count equals want. Under exactly-once each count of a word appears once
// and in order: 1, 2, 3, ... Anything else (a repeat, a gap, a count going
// back) fails.
func readExactlyOnce(t *testing.T, addr, topic string, want map[string]int64) {
	t.Helper()
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := map[string]int64{}
	done := func() bool {
		for w, n := range want {
			if got[w] != n {
				return false
			}
		}
		return len(got) == len(want)
	}
	deadline := time.Now().Add(120 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("counts in %s:\n got %v\nwant %v", topic, got, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := rd.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				t.Fatalf("output %q=%q: not a decimal count", r.Key, r.Value)
			}
			if prev := got[string(r.Key)]; n != prev+1 {
				t.Fatalf("word %q: count %d after %d (offset %d of partition %d)", r.Key, n, prev, r.Offset, r.Partition)
			}
			got[string(r.Key)] = n
		})
	}
}

// Two instances under exactly_once_v2; one stops halfway and a third
// joins, so tasks move while input flows. A read_committed reader sees each
// count exactly once.
func TestWordCountExactlyOnce(t *testing.T) {
	c := newCluster(t, "lines", "counts")
	var seen atomic.Int64
	want := map[string]int64{}
	a := startEOS(t, wordCount(t, "lines", "counts", &seen), c.addr, "wc-eos")
	b := startEOS(t, wordCount(t, "lines", "counts", &seen), c.addr, "wc-eos")
	defer b.Close()
	c.produceLines("lines", 0, 300, want)
	readExactlyOnce(t, c.addr, "counts", want)

	if err := a.Close(); err != nil {
		t.Fatalf("closing the first instance: %v", err)
	}
	d := startEOS(t, wordCount(t, "lines", "counts", &seen), c.addr, "wc-eos")
	defer d.Close()
	c.produceLines("lines", 300, 300, want)
	readExactlyOnce(t, c.addr, "counts", want)

	// The internal topics carry only committed data: the changelog read
	// read_committed holds each word's final count last.
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumeTopics("wc-eos-counts-store-changelog"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	last := map[string]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(last) < len(want) || !equalCounts(last, want) {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("changelog: %v, want %v", last, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n, _ := streams.Int64().Deserialize("", r.Value)
			last[string(r.Key)] = n
		})
	}
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
