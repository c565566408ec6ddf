package metrics_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// What scraping /metrics every second costs a node under full produce
// load: one in-process node, a franz-go producer (acks=1, no
// idempotence, no compression) writing 1 KiB records to 6 partitions as
// fast as the node takes them, and, in scrape=1s, a goroutine that GETs
// and reads /metrics once a second meanwhile. Both sub-benchmarks share
// the node and topic, so with -count they alternate on the same state;
// compare their records/s (benchstat -col /scrape). Run with a
// -benchtime of several seconds so that a run holds several scrapes:
//
//	go test ./internal/metrics -run '^$' -bench ProduceWhileScraped -benchtime 10s -count 6
func BenchmarkProduceWhileScraped(b *testing.B) {
	srv := servertest.Start(b, "http.listeners=http://127.0.0.1:0",
		// Keep the disk bounded: a run writes gigabytes.
		"log.segment.bytes=16777216", "log.retention.bytes=67108864", "log.retention.check.interval.ms=1000")
	const topic = "scraped"
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 1024)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	metricsURL := "http://" + srv.HTTPAddr() + "/metrics"

	for _, scrape := range []bool{false, true} {
		name := "scrape=off"
		if scrape {
			name = "scrape=1s"
		}
		b.Run(name, func(b *testing.B) {
			var scrapes atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if scrape {
				wg.Go(func() {
					tick := time.NewTicker(time.Second)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						resp, err := http.Get(metricsURL)
						if err != nil {
							b.Error(err)
							return
						}
						_, err = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if err != nil || resp.StatusCode != http.StatusOK {
							b.Errorf("GET /metrics: %d %v", resp.StatusCode, err)
							return
						}
						scrapes.Add(1)
					}
				})
			}
			var failed atomic.Int64
			var firstErr atomic.Value
			done := func(_ *kgo.Record, err error) {
				if err != nil && failed.Add(1) == 1 {
					firstErr.Store(err)
				}
			}
			b.SetBytes(int64(len(value)))
			b.ResetTimer()
			for range b.N {
				cl.Produce(ctx, &kgo.Record{Value: value}, done)
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d records failed, first: %v", n, b.N, firstErr.Load())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(scrapes.Load()), "scrapes")
		})
	}
}
