package profile

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/servertest"
)

const valueSize = 100

// produce writes n records of valueSize bytes to a new one-partition topic
// with acks=all (idempotent, franz-go's default), no compression, and waits
// for every acknowledgement.
func produce(tb testing.TB, addr, topic string, n int) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(10000))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		tb.Fatal(err)
	}
	// Random, so incompressible like `samsa bench`'s values.
	value := make([]byte, valueSize)
	rand.Read(value)
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				tb.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
}

// consume reads the topic from offset 0 with a fresh client and returns the
// offsets in the order seen.
func consume(tb testing.TB, addr, topic string, n int) []int64 {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	offsets := make([]int64, 0, n)
	for len(offsets) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			tb.Fatalf("after %d records: %v", len(offsets), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != valueSize {
				tb.Fatalf("offset %d: %d-byte value, want %d", r.Offset, len(r.Value), valueSize)
			}
			offsets = append(offsets, r.Offset)
		})
	}
	return offsets
}

// TestRoundTrip checks the harness itself: every produced record comes
// back once, in offset order, at its full size.
func TestRoundTrip(t *testing.T) {
	addr := servertest.Addr(servertest.Start(t))
	produce(t, addr, "roundtrip", 5000)
	got := consume(t, addr, "roundtrip", 5000)
	if len(got) != 5000 {
		t.Fatalf("consumed %d records, want 5000", len(got))
	}
	for i, o := range got {
		if o != int64(i) {
			t.Fatalf("record %d has offset %d, want %d", i, o, i)
		}
	}
}

// BenchmarkProduce100B: 200,000 records of 100 B, acks=all, to a new
// one-partition topic per iteration.
func BenchmarkProduce100B(b *testing.B) {
	addr := servertest.Addr(servertest.Start(b))
	b.SetBytes(200000 * valueSize)
	for i := 0; b.Loop(); i++ {
		produce(b, addr, fmt.Sprintf("produce-%d", i), 200000)
	}
}

// BenchmarkConsume100B: read a one-partition topic of 200,000 records of
// 100 B from the start with a fresh client per iteration.
func BenchmarkConsume100B(b *testing.B) {
	addr := servertest.Addr(servertest.Start(b))
	produce(b, addr, "consume", 200000)
	b.SetBytes(200000 * valueSize)
	for b.Loop() {
		consume(b, addr, "consume", 200000)
	}
}

// produceAcksAll writes n records of size bytes round robin over the
// partitions of a new topic, as `samsa bench` does (acks=all, idempotent,
// linger 10 ms, 10,000 records buffered, no compression), and waits for
// every acknowledgement.
func produceAcksAll(tb testing.TB, addr, topic string, partitions int32, n, size int) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(10000),
		kgo.ProducerLinger(10*time.Millisecond), kgo.ProducerBatchMaxBytes(1000000),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		tb.Fatal(err)
	}
	value := make([]byte, size)
	rand.Read(value)
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				tb.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkProduce6P is bench/kafka/run.sh's franz-go acks=all case on 6
// partitions, 1 KiB and 100 B records, one new topic per iteration.
func BenchmarkProduce6P(b *testing.B) {
	for _, bc := range []struct {
		name    string
		size, n int
	}{{"1KiB", 1024, 50000}, {"100B", 100, 200000}} {
		b.Run(bc.name, func(b *testing.B) {
			addr := servertest.Addr(servertest.Start(b))
			b.SetBytes(int64(bc.n * bc.size))
			for i := 0; b.Loop(); i++ {
				produceAcksAll(b, addr, fmt.Sprintf("p6-%d", i), 6, bc.n, bc.size)
			}
		})
	}
}

// BenchmarkProduceRequest sends one prebuilt Produce request at a time
// (6 partitions, a batch of 100 records of 100 B on each, not idempotent)
// and waits for its answer: the broker's cost per request, with little
// client work beside it.
func BenchmarkProduceRequest(b *testing.B) {
	for _, acks := range []int16{1, -1} {
		b.Run(fmt.Sprintf("acks=%d", acks), func(b *testing.B) {
			addr := servertest.Addr(servertest.Start(b))
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			const topic, partitions, records = "requests", 6, 100
			created, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic)
			if err != nil {
				b.Fatal(err)
			}
			value := make([]byte, valueSize)
			rand.Read(value)
			recs := make([]record.Record, records)
			for i := range recs {
				recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Value: value}
			}
			batch := record.Build(record.BuildOptions{}, recs)
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = acks, 30000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic, rt.TopicID = topic, created.ID // v13 names topics by id
			for p := range int32(partitions) {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = p, batch
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			b.SetBytes(partitions * records * valueSize)
			for b.Loop() {
				kresp, err := req.RequestWith(ctx, cl)
				if err != nil {
					b.Fatal(err)
				}
				for _, t := range kresp.Topics {
					for _, p := range t.Partitions {
						if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
							b.Fatalf("partition %d: %v", p.Partition, err)
						}
					}
				}
			}
		})
	}
}
