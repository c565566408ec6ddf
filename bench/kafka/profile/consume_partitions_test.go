package profile

import (
	"context"
	"crypto/rand"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// BenchmarkConsume1KiB6Partitions: read a six-partition topic of 60,000
// records of 1 KiB (10,000 per partition) from the start with a fresh
// client per iteration: the consume case of bench/kafka/run.sh where
// Samsa trailed Kafka, in one process.
func BenchmarkConsume1KiB6Partitions(b *testing.B) {
	const parts, perPart, size = 6, 10_000, 1024
	addr := servertest.Addr(servertest.Start(b))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("consume6"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(10000),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, parts, -1, nil, "consume6"); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, size)
	rand.Read(value)
	for range parts * perPart {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(parts * perPart * size)
	// CPU time (user + system, broker and client together: one process)
	// is steadier than wall time on a machine others load.
	cpu0 := cpuTime()
	for b.Loop() {
		c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("consume6"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < parts*perPart; {
			fs := c.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				b.Fatalf("after %d records: %v", n, err)
			}
			n += fs.NumRecords()
		}
		c.Close()
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
