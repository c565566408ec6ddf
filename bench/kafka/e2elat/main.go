// Command e2elat measures end-to-end latency at a fixed produce rate: one
// franz-go producer sends --rate records per second for --duration, each
// value stamped with the time it was scheduled to be sent, and a franz-go
// consumer in the same process (so one clock) reads them back and records
// receive time minus scheduled time.
//
// Why a fixed rate and scheduled times: Kafka's own EndToEndLatency sends
// one record and waits for it before sending the next, so a slow broker
// simply sends fewer records and its tail hides (coordinated omission).
// Here the schedule does not wait for the broker; if the broker falls
// behind, the delay shows up in the latencies. bench/kafka/run.sh runs it
// against Samsa and Apache Kafka alike.
//
// It creates --topic (one partition unless --partitions), consumes it from
// the start, and prints one tab-separated line (see tsvHeader) or, with
// -v, a readable summary. The first --warmup of records are sent and
// awaited but not counted, so that connection set-up and metadata look-ups
// are not measured.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const tsvHeader = "sent received lost e2e_p50_ms e2e_p99_ms e2e_p99.9_ms e2e_max_ms ack_p50_ms ack_p99_ms ack_p99.9_ms"

type options struct {
	bootstrap  string
	topic      string
	partitions int
	rate       int
	duration   time.Duration
	warmup     time.Duration
	size       int
	acks       string
	verbose    bool
}

func main() {
	var o options
	flag.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "broker address")
	flag.StringVar(&o.topic, "topic", "e2elat", "topic to create and use")
	flag.IntVar(&o.partitions, "partitions", 1, "partitions of the topic")
	flag.IntVar(&o.rate, "rate", 1000, "records per second")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long to send at --rate after the warm-up")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "sending time not counted")
	flag.IntVar(&o.size, "size", 1024, "bytes per record value (at least 12: send time and sequence number)")
	flag.StringVar(&o.acks, "acks", "all", "all or 1")
	flag.BoolVar(&o.verbose, "v", false, "print a readable summary instead of a TSV line")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "e2elat:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.size < 12 || o.rate < 1 || o.duration <= 0 {
		return errors.New("want --size >= 12, --rate >= 1 and --duration > 0")
	}
	popts := []kgo.Opt{
		kgo.SeedBrokers(o.bootstrap),
		kgo.DefaultProduceTopic(o.topic),
		// Latency, not batching, is measured: send each record at once,
		// as Kafka's EndToEndLatency does with linger.ms=0.
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	switch o.acks {
	case "all", "-1":
		popts = append(popts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		popts = append(popts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		return fmt.Errorf("invalid --acks %q: want all or 1", o.acks)
	}
	prod, err := kgo.NewClient(popts...)
	if err != nil {
		return err
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.warmup+o.duration+60*time.Second)
	defer cancel()
	if err := createTopic(ctx, prod, o.topic, o.partitions); err != nil {
		return err
	}
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(o.bootstrap),
		kgo.ConsumeTopics(o.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return err
	}
	defer cons.Close()

	warm := int(o.warmup.Seconds() * float64(o.rate))
	total := warm + int(o.duration.Seconds()*float64(o.rate))
	e2e := make([]float64, 0, total)
	acks := make([]float64, 0, total)
	var (
		mu      sync.Mutex
		ackErrs int
		wg      sync.WaitGroup
	)

	// The consumer goroutine stops once it has seen every record or the
	// context ends (a lost record must not hang the run).
	received := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for received < total && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				seq := int(binary.BigEndian.Uint32(r.Value[8:12]))
				sched := int64(binary.BigEndian.Uint64(r.Value[:8]))
				received++
				if seq >= warm {
					e2e = append(e2e, ms(now.Sub(time.Unix(0, sched))))
				}
			})
		}
	}()

	interval := time.Second / time.Duration(o.rate)
	start := time.Now()
	for i := range total {
		sched := start.Add(time.Duration(i) * interval)
		if d := time.Until(sched); d > 0 {
			time.Sleep(d)
		}
		v := make([]byte, o.size)
		binary.BigEndian.PutUint64(v, uint64(sched.UnixNano()))
		binary.BigEndian.PutUint32(v[8:], uint32(i))
		wg.Add(1)
		prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			lat := ms(time.Since(sched))
			mu.Lock()
			if err != nil {
				ackErrs++
			} else if i >= warm {
				acks = append(acks, lat)
			}
			mu.Unlock()
			wg.Done()
		})
	}
	wg.Wait()
	<-done
	if ackErrs > 0 {
		return fmt.Errorf("%d of %d produce requests failed", ackErrs, total)
	}
	counted := total - warm
	slices.Sort(e2e)
	slices.Sort(acks)
	if o.verbose {
		fmt.Printf("sent %d at %d/s (%d warm-up not counted), received %d\n", total, o.rate, warm, received)
		fmt.Printf("end-to-end ms: p50 %.2f p99 %.2f p99.9 %.2f max %.2f\n", rank(e2e, 50), rank(e2e, 99), rank(e2e, 99.9), rank(e2e, 100))
		fmt.Printf("produce ack ms: p50 %.2f p99 %.2f p99.9 %.2f\n", rank(acks, 50), rank(acks, 99), rank(acks, 99.9))
		return nil
	}
	fmt.Printf("%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n", counted, len(e2e), counted-len(e2e),
		rank(e2e, 50), rank(e2e, 99), rank(e2e, 99.9), rank(e2e, 100), rank(acks, 50), rank(acks, 99), rank(acks, 99.9))
	return nil
}

// createTopic creates the topic with the broker's default replication
// factor, accepting one that already exists.
func createTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int) error {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(partitions), -1, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, resp.Err)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rank is the nearest-rank percentile of sorted values (NaN when empty).
func rank(sorted []float64, pct float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(pct/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
