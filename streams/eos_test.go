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
	t.Cleanup(func() {
		if err := app.Close(); err != nil {
			t.Errorf("app %s: %v", appID, err)
		}
	})
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
	startEOS(t, wordCount(t, "lines", "counts", &seen), c.addr, "wc-eos")
	c.produceLines("lines", 0, 300, want)
	readExactlyOnce(t, c.addr, "counts", want)

	if err := a.Close(); err != nil {
		t.Fatalf("closing the first instance: %v", err)
	}
	startEOS(t, wordCount(t, "lines", "counts", &seen), c.addr, "wc-eos")
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

// A deserialization handler of one's own sees the bad record as it came
// from the topic; under exactly_once_v2 the output holds each good record
// once.
func TestDeserializationHandlerUnderEOS(t *testing.T) {
	c := newCluster(t, "nums", "out")
	i32 := func(v int32) []byte { b, _ := streams.Int32().Serialize("", v); return b }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, v := range [][]byte{i32(1), {0xff}, i32(3)} {
		if err := c.cl.ProduceSync(ctx, &kgo.Record{Topic: "nums", Key: []byte("k"), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b := streams.NewBuilder()
	streams.MapValues(streams.From(b, streams.String(), streams.Int32(), "nums"),
		func(_ string, v int32) string { return strconv.Itoa(int(v)) }).To("out", streams.String(), streams.String())
	top, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	bad := make(chan streams.DeserializationContext, 10)
	app, err := streams.New(top, streams.Config{ApplicationID: "dlq", Bootstrap: []string{c.addr},
		ProcessingGuarantee: streams.ExactlyOnceV2, Logger: servertest.Logger(),
		DeserializationExceptionHandler: func(dc streams.DeserializationContext, err error) streams.DeserializationResponse {
			bad <- dc
			return streams.DeserializationContinue
		}})
	if err != nil {
		t.Fatal(err)
	}
	go app.Run(context.Background())
	defer app.Close()

	rd, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) < 2 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("output %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 2 || got[0] != "1" || got[1] != "3" {
		t.Fatalf("output %v, want [1 3]", got)
	}
	dc := <-bad
	if dc.Topic != "nums" || dc.Offset != 1 || string(dc.Key) != "k" || string(dc.Value) != "\xff" {
		t.Fatalf("handler saw %+v", dc)
	}
}
