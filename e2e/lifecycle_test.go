package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// Log lifecycle through a real client: retention changed at runtime
// deletes old segments, and compaction leaves the latest value per key.

func lifecycleBroker(t *testing.T) string {
	t.Helper()
	return servertest.Addr(servertest.Start(t,
		"log.retention.check.interval.ms=200",
		"log.cleaner.backoff.ms=100",
	))
}

// produceKV writes n records of size bytes to partition 0, keys cycling
// over keys (nil keys when keys is 0), and returns the last value per key.
func produceKV(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n, keys, size int) map[string]string {
	t.Helper()
	last := map[string]string{}
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%08d-", i)
		for len(v) < size {
			v += "x"
		}
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
		if keys > 0 {
			k := fmt.Sprintf("key-%03d", i%keys)
			r.Key = []byte(k)
			last[k] = v
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return last
}

func lifecycleClient(t *testing.T, addr string) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // so segment.bytes rolls predictably
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

func TestRetentionChangeTakesEffectLive(t *testing.T) {
	ctx := testContext(t)
	addr := lifecycleBroker(t)
	cl, adm := lifecycleClient(t, addr)
	segment := "1048576"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &segment}, "expiring"); err != nil {
		t.Fatal(err)
	}
	produceKV(t, ctx, cl, "expiring", 3000, 0, 1024) // about 3 segments
	time.Sleep(20 * time.Millisecond)                // the records age past 1 ms

	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "expiring")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("alter retention.ms: %v %v", err, resps)
	}
	var start int64
	for start == 0 {
		starts, err := adm.ListStartOffsets(ctx, "expiring")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := starts.Lookup("expiring", 0)
		start = o.Offset
		if ctx.Err() != nil {
			t.Fatal("log start offset never advanced after retention.ms=1")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if start < 1000 {
		t.Fatalf("log start offset %d: expected whole old segments (about 1000 records each) deleted", start)
	}

	// Consumers carry on from the new start; offsets keep counting.
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "expiring")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("reset retention.ms: %v %v", err, resps)
	}
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: "expiring", Partition: 0, Value: []byte("after")})
	r, err := res.First()
	if err != nil || r.Offset != 3000 {
		t.Fatalf("produce after retention: offset %d, %v; want 3000", r.Offset, err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"expiring": {0: kgo.NewOffset().AtStart()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []*kgo.Record
	for len(got) == 0 || got[len(got)-1].Offset < 3000 {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records", len(got))
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got = append(got, fs.Records()...)
	}
	if got[0].Offset < start || string(got[len(got)-1].Value) != "after" {
		t.Fatalf("consumed from %d to %d (%q); log start %d", got[0].Offset, got[len(got)-1].Offset, got[len(got)-1].Value, start)
	}
}

func TestCompactionKeepsLatestPerKey(t *testing.T) {
	ctx := testContext(t)
	addr := lifecycleBroker(t)
	cl, adm := lifecycleClient(t, addr)
	configs := map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("1048576"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, configs, "profiles"); err != nil {
		t.Fatal(err)
	}
	const n, keys = 5000, 100
	last := produceKV(t, ctx, cl, "profiles", n, keys, 1000)
	// The cleaner never touches the active segment. More than a segment of
	// records under one other key closes every segment holding the keyed
	// records, so all of them become cleanable.
	const filler = 1200
	if err := produceFiller(ctx, cl, "profiles", filler, 1000); err != nil {
		t.Fatal(err)
	}

	// Wait for the cleaner, then read from offset 0: a reader must end up
	// with exactly one record per key, holding its latest value.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := readAll(t, ctx, addr, "profiles", n+filler)
		view := map[string]string{}
		perKey := map[string]int{}
		prev := int64(-1)
		for _, r := range got {
			if r.Offset <= prev {
				t.Fatalf("offsets not increasing: %d after %d", r.Offset, prev)
			}
			prev = r.Offset
			if string(r.Key) == fillerKey {
				continue
			}
			view[string(r.Key)] = string(r.Value)
			perKey[string(r.Key)]++
		}
		for k, v := range last {
			if view[k] != v {
				t.Fatalf("key %s reads %q, want the latest %q", k, view[k], v)
			}
		}
		if len(perKey) != keys {
			t.Fatalf("%d keys read, want %d", len(perKey), keys)
		}
		var dup []string
		for k, c := range perKey {
			if c > 1 {
				dup = append(dup, fmt.Sprintf("%s×%d", k, c))
			}
		}
		if len(dup) == 0 {
			t.Logf("%d of %d records left after compaction", len(got), n+filler)
			return
		}
		if time.Now().After(deadline) {
			slices.Sort(dup)
			t.Fatalf("after 30 s, %d keys still have more than one record (%d records read): %v", len(dup), len(got), dup[:min(len(dup), 10)])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fillerKey is the key of the records produceFiller writes.
const fillerKey = "~filler"

// produceFiller appends n records of size bytes under fillerKey.
func produceFiller(ctx context.Context, cl *kgo.Client, topic string, n, size int) error {
	v := make([]byte, size)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fillerKey), Value: v}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// readAll reads partition 0 of topic from the start to the high watermark.
func readAll(t *testing.T, ctx context.Context, addr, topic string, max int) []*kgo.Record {
	t.Helper()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	for len(got) == 0 || got[len(got)-1].Offset < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d records of %s", len(got), topic)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got = append(got, fs.Records()...)
		if len(got) > max {
			t.Fatalf("read %d records, more than the %d produced", len(got), max)
		}
	}
	return got
}
