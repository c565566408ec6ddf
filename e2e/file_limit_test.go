package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestManyPartitionsUnderLowFileLimit runs a node whose open-file limit
// (RLIMIT_NOFILE 256, set by the child process on itself) is far below the
// files of its partitions (300 partitions, three files each): the node must
// still accept connections, take writes to every partition, serve them back,
// stop cleanly, start again on the same directory and serve everything once
// more, new writes included.
func TestManyPartitionsUnderLowFileLimit(t *testing.T) {
	ctx := testContext(t)
	const limit, topics, partitions, perPartition = 256, 30, 10, 3
	dir := t.TempDir()
	env := childNofileEnv + "=" + strconv.Itoa(limit)
	addr, stop, _ := startChild(t, dir, env)

	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", topicName("franz", "file-limit"), i)
	}
	resps, err := newKadm(t, addr).CreateTopics(ctx, partitions, 1, nil, names...)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	for _, r := range resps.Sorted() {
		if r.Err != nil || r.NumPartitions != partitions {
			t.Fatalf("CreateTopics %s: %v %s, %d partitions", r.Topic, r.Err, r.ErrMessage, r.NumPartitions)
		}
	}
	produceEach(t, ctx, addr, names, partitions, 0, perPartition)
	checkEach(t, ctx, addr, names, partitions, perPartition)
	stop()

	addr, stop, _ = startChild(t, dir, env)
	checkEach(t, ctx, addr, names, partitions, perPartition)
	produceEach(t, ctx, addr, names, partitions, perPartition, 1)
	checkEach(t, ctx, addr, names, partitions, perPartition+1)
	stop()
}

// produceEach writes n records to every partition of every topic, valued
// "<topic>/<partition>/<i>" for i from first on, and checks each offset.
func produceEach(t *testing.T, ctx context.Context, addr string, topics []string, partitions int32, first, n int) {
	t.Helper()
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	var recs []*kgo.Record
	for _, topic := range topics {
		for p := range partitions {
			for i := first; i < first+n; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s/%d/%d", topic, p, i)})
			}
		}
	}
	res := cl.ProduceSync(ctx, recs...)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("produce %s: %v", r.Record.Value, r.Err)
		}
		var p int32
		var i int64
		if _, err := fmt.Sscanf(string(r.Record.Value[len(r.Record.Topic):]), "/%d/%d", &p, &i); err != nil || r.Record.Offset != i {
			t.Fatalf("record %s stored at offset %d", r.Record.Value, r.Record.Offset)
		}
	}
}

// checkEach consumes every partition from offset 0 and checks that it
// holds exactly the records produceEach wrote, in order.
func checkEach(t *testing.T, ctx context.Context, addr string, topics []string, partitions int32, n int) {
	t.Helper()
	offsets := map[string]map[int32]kgo.Offset{}
	for _, topic := range topics {
		offsets[topic] = map[int32]kgo.Offset{}
		for p := range partitions {
			offsets[topic][p] = kgo.NewOffset().At(0)
		}
	}
	cl := newKgo(t, addr, kgo.ConsumePartitions(offsets))
	defer cl.Close()
	next := map[string]int64{}
	want := len(topics) * int(partitions) * n
	for got := 0; got < want; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", got, want)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			tp := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			if r.Offset != next[tp] || string(r.Value) != fmt.Sprintf("%s/%d", tp, r.Offset) {
				t.Fatalf("%s: offset %d holds %q, want offset %d holding %s/%d", tp, r.Offset, r.Value, next[tp], tp, next[tp])
			}
			next[tp]++
			got++
		})
	}
	for tp, off := range next {
		if off != int64(n) {
			t.Fatalf("%s: consumed %d records, want %d", tp, off, n)
		}
	}
}
