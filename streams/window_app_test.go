package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/streams"
)

// A windowed count over a broker under exactly_once_v2: the window store
// is logged to a compact,delete changelog, and a new instance restores it
// and continues the counts of open windows.
func TestWindowedCountRestoresOverBroker(t *testing.T) {
	c := newCluster(t, "clicks", "per-minute")
	size := time.Minute
	build := func() *streams.Topology {
		b := streams.NewBuilder()
		s := streams.From(b, streams.String(), streams.String(), "clicks")
		w := streams.WindowedBy(streams.GroupByKey(s, streams.String(), streams.String()), streams.TumblingWindows(size, time.Minute))
		streams.CountWindows(w, "clicks-per-minute").ToStream().To("per-minute", streams.TimeWindowedSerde(streams.String(), size), streams.Int64())
		top, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return top
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	produce := func(key string, ts ...int64) {
		for _, ms := range ts {
			if err := c.cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Key: []byte(key), Value: []byte("x"), Timestamp: time.UnixMilli(ms)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumeTopics("per-minute"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	latest := map[string]int64{}
	wait := func(want map[string]int64) {
		t.Helper()
		for !equalCounts(latest, want) {
			fs := rd.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("windowed counts %v, want %v", latest, want)
			}
			fs.EachRecord(func(r *kgo.Record) {
				k, err := streams.TimeWindowedSerde(streams.String(), size).Deserialize(r.Topic, r.Key)
				if err != nil {
					t.Fatal(err)
				}
				n, _ := streams.Int64().Deserialize(r.Topic, r.Value)
				latest[fmt.Sprintf("%s@%d", k.Key, k.Window.Start)] = n
			})
		}
	}

	app := startEOS(t, build(), c.addr, "win")
	produce("alice", 1000, 2000, 61000)
	produce("bob", 5000)
	wait(map[string]int64{"alice@0": 2, "alice@60000": 1, "bob@0": 1})
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}

	startEOS(t, build(), c.addr, "win")
	// Stream time restarts with the new task; these windows are still
	// within size + grace of the records before, so the counts continue
	// from the restored store. The last alice record is late for [0,60000)
	// (stream time 200000, grace 1 min) and dropped: alice's updates are
	// in order in one partition, so by the one for 200001 any for 4000
	// would have been read.
	produce("alice", 3000, 62000, 200000, 4000, 200001)
	produce("bob", 6000)
	wait(map[string]int64{"alice@0": 3, "alice@60000": 2, "alice@180000": 2, "bob@0": 2})

	cfgs, err := c.adm.DescribeTopicConfigs(ctx, "win-clicks-per-minute-changelog")
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range cfgs {
		for _, kv := range rc.Configs {
			if kv.Key == "cleanup.policy" && (kv.Value == nil || *kv.Value != "compact,delete") {
				t.Fatalf("changelog cleanup.policy %v, want compact,delete", kv.Value)
			}
		}
	}
}
