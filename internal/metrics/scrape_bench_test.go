//go:build unix

package metrics_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
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
// and reads /metrics once a second meanwhile. The two sub-benchmarks
// share the node when run in one process, so the second writes to a
// longer log; -count repeats each back to back, comparing different
// minutes of a shared machine's load. Run each in its own process,
// alternately, and compare records/s with benchstat -col /scrape; use a
// -benchtime of several seconds so that a run holds several scrapes:
//
//	go test -c -o metrics.test ./internal/metrics
//	for i in 1 2 3 4 5 6; do for m in off 1s; do
//		./metrics.test -test.run '^$' -test.bench "ProduceWhileScraped/scrape=$m\$" -test.benchtime 10s
//	done; done
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

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// What one scrape costs, in CPU rather than wall-clock time (which a
// loaded machine inflates): a node with a 6-partition topic and a
// committed group answers GET /metrics and the body is read. The CPU of
// the whole process is counted, the client's included, so this is an
// upper bound of the node's share. At one scrape a second, cpu-ms/op
// divided by 1000 is the fraction of one core scraping takes.
func BenchmarkScrapeCPU(b *testing.B) {
	srv := servertest.Start(b, "http.listeners=http://127.0.0.1:0", "group.initial.rebalance.delay.ms=0")
	ctx := context.Background()
	const topic = "scraped"
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumerGroup("scraper"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	for range 60 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	for got := 0; got < 60; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			b.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		b.Fatal(err)
	}
	url := "http://" + srv.HTTPAddr() + "/metrics"
	var size int64
	start := cpuTime(b)
	for b.Loop() {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		size, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(size), "body-bytes")
}
