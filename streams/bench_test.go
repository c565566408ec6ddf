package streams_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
	"github.com/samsa-io/samsa/streams"
)

// BenchmarkWordCount runs the word-count topology over b.N lines (of 1 to
// 4 words) on a local broker, from start until a read_committed reader has
// read every count update, and reports input lines/s.
func BenchmarkWordCount(b *testing.B) {
	for _, g := range []string{streams.AtLeastOnce, streams.ExactlyOnceV2} {
		b.Run(g, func(b *testing.B) {
			var seen atomic.Int64
			updates := 0
			for i := range b.N {
				updates += i%4 + 1
			}
			benchTopology(b, g, updates, func(t testing.TB) *streams.Topology { return wordCount(t, "in", "out", &seen) })
		})
	}
}

// BenchmarkWindowedCount counts lines per key and tumbling minute (keys
// are line numbers mod 100, timestamps one second apart).
func BenchmarkWindowedCount(b *testing.B) {
	for _, g := range []string{streams.AtLeastOnce, streams.ExactlyOnceV2} {
		b.Run(g, func(b *testing.B) {
			benchTopology(b, g, b.N, func(testing.TB) *streams.Topology {
				bl := streams.NewBuilder()
				s := streams.From(bl, streams.String(), streams.String(), "in")
				w := streams.WindowedBy(streams.GroupByKey(s, streams.String(), streams.String()), streams.TumblingWindows(time.Minute, 0))
				streams.CountWindows(w, "per-minute").ToStream().To("out", streams.TimeWindowedSerde(streams.String(), time.Minute), streams.Int64())
				top, err := bl.Build()
				if err != nil {
					b.Fatal(err)
				}
				return top
			})
		})
	}
}

func benchTopology(b *testing.B, guarantee string, outputs int, build func(testing.TB) *streams.Topology) {
	addr := servertest.Addr(servertest.Start(b))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, tp := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, 4, 1, nil, tp); err != nil {
			b.Fatal(err)
		}
	}
	words := []string{"apple", "banana", "cherry", "date", "elder", "fig", "grape"}
	rs := make([]*kgo.Record, 0, b.N)
	for i := range b.N {
		line := ""
		for j := 0; j <= i%4; j++ {
			line += words[(i+j)%len(words)] + " "
		}
		rs = append(rs, &kgo.Record{Topic: "in", Key: []byte(strconv.Itoa(i % 100)), Value: []byte(line),
			Timestamp: time.UnixMilli(int64(i) * 1000)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	top := build(b)
	app, err := streams.New(top, streams.Config{ApplicationID: "bench", Bootstrap: []string{addr},
		ProcessingGuarantee: guarantee, CommitInterval: 100 * time.Millisecond, Logger: servertest.Logger()})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	go app.Run(context.Background())
	defer app.Close()
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	for n := 0; n < outputs; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("%d of %d outputs", n, outputs)
		}
		n += fs.NumRecords()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "lines/s")
}
