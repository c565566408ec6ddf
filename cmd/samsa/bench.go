package main

// `samsa bench`: a produce-then-consume load generator against any Kafka
// cluster, in the spirit of kafka-producer-perf-test.sh and
// kafka-consumer-perf-test.sh. It is how docs/benchmarks.md compares Samsa
// with franz-go's in-memory kfake cluster (bench/run.sh).

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const benchSynopsis = `samsa bench [flags]

Creates a topic, produces --records (or for --duration) records of --size
random bytes each with a null key, then consumes the whole topic from the
start. Reports produce and consume throughput and the per-record produce
latency: the time from the Produce call to its acknowledgement callback,
which includes any wait for buffer space once --max-buffered records are in
flight. The topic is deleted at the end unless --keep is given.`

// benchOpts is the parsed command line of `samsa bench`.
type benchOpts struct {
	cf          clientFlags
	topic       string
	partitions  int
	rf          int
	records     int
	duration    time.Duration
	size        int
	acks        string
	compression string
	linger      time.Duration
	maxBuffered int
	batchMax    int
	txnSize     int // records per transaction; 0: not transactional
	keep        bool
	noConsume   bool
	jsonOut     bool
	tsvOut      bool
}

// benchSettings echoes what was measured, so a result never travels without
// the parameters that produced it.
type benchSettings struct {
	Bootstrap     string `json:"bootstrap"`
	Topic         string `json:"topic"`
	Partitions    int    `json:"partitions"`
	RecordBytes   int    `json:"record_bytes"`
	Payload       string `json:"payload"`
	Acks          string `json:"acks"`
	Compression   string `json:"compression"`
	LingerMs      int64  `json:"linger_ms"`
	MaxBuffered   int    `json:"max_buffered_records"`
	BatchMaxBytes int    `json:"batch_max_bytes"`
	// TxnRecords is the number of records per transaction (0: none).
	TxnRecords int `json:"txn_records,omitempty"`
}

// benchLatency is a produce latency distribution in milliseconds.
type benchLatency struct {
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p99_9_ms"`
	Max  float64 `json:"max_ms"`
}

// benchPhase is the outcome of the produce or the consume phase. MB is
// 10^6 bytes of record values (keys, headers and framing not counted).
type benchPhase struct {
	Records    int64         `json:"records"`
	Bytes      int64         `json:"bytes"`
	Seconds    float64       `json:"seconds"`
	MBPerSec   float64       `json:"mb_per_sec"`
	RecsPerSec float64       `json:"records_per_sec"`
	Errors     int64         `json:"errors,omitempty"`
	Latency    *benchLatency `json:"latency,omitempty"`
}

type benchResult struct {
	Settings benchSettings `json:"settings"`
	Produce  benchPhase    `json:"produce"`
	Consume  *benchPhase   `json:"consume,omitempty"`
}

func runBench(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench", benchSynopsis, stderr)
	var o benchOpts
	o.cf.register(fs)
	fs.StringVar(&o.topic, "topic", "", "topic to create and use (default: samsa-bench-<random>)")
	fs.IntVar(&o.partitions, "partitions", 1, "partitions of the benchmark topic")
	fs.IntVar(&o.rf, "replication-factor", -1, "replicas per partition (-1: the broker's default)")
	fs.IntVar(&o.records, "records", 100000, "records to produce (ignored with --duration)")
	fs.DurationVar(&o.duration, "duration", 0, "produce for this `duration` instead of a record count")
	fs.IntVar(&o.size, "size", 1024, "bytes per record value")
	fs.StringVar(&o.acks, "acks", "all", "acknowledgements to wait for: all, 1 or 0")
	fs.StringVar(&o.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&o.linger, "linger", 10*time.Millisecond, "producer linger (franz-go's default)")
	fs.IntVar(&o.maxBuffered, "max-buffered", 10000, "records the producer holds unacknowledged before Produce blocks")
	fs.IntVar(&o.batchMax, "batch-max-bytes", 1000012, "largest record batch the producer builds (Kafka's max.message.bytes default)")
	fs.IntVar(&o.txnSize, "txn-size", 0, "produce in transactions of this many records, each committed (0: no transactions)")
	fs.BoolVar(&o.keep, "keep", false, "keep the topic afterwards")
	fs.BoolVar(&o.noConsume, "no-consume", false, "skip the consume phase")
	fs.BoolVar(&o.jsonOut, "json", false, "print the result as one JSON object")
	fs.BoolVar(&o.tsvOut, "tsv", false, "print one tab-separated line for scripts: "+benchTSVHeader)
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	kopts, err := o.producerOpts()
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if o.topic == "" {
		o.topic = fmt.Sprintf("samsa-bench-%08x", rand.Uint32())
	}
	res, err := o.run(kopts)
	if err != nil {
		return fail(stderr, err)
	}
	switch {
	case o.tsvOut:
		res.printTSV(stdout)
	case o.jsonOut:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	default:
		res.print(stdout)
	}
	if res.Produce.Errors > 0 || (res.Consume != nil && res.Consume.Records != res.Produce.Records) {
		return exitFail
	}
	return exitOK
}

// producerOpts validates the flags and turns them into client options.
func (o *benchOpts) producerOpts() ([]kgo.Opt, error) {
	switch {
	case o.partitions < 1:
		return nil, fmt.Errorf("invalid --partitions %d", o.partitions)
	case o.size < 0:
		return nil, fmt.Errorf("invalid --size %d", o.size)
	case o.duration < 0:
		return nil, fmt.Errorf("invalid --duration %v", o.duration)
	case o.duration == 0 && o.records < 1:
		return nil, fmt.Errorf("invalid --records %d: want at least 1", o.records)
	case o.maxBuffered < 1:
		return nil, fmt.Errorf("invalid --max-buffered %d", o.maxBuffered)
	case o.batchMax < 1:
		return nil, fmt.Errorf("invalid --batch-max-bytes %d", o.batchMax)
	case o.txnSize < 0:
		return nil, fmt.Errorf("invalid --txn-size %d", o.txnSize)
	case o.txnSize > 0 && o.acks != "all" && o.acks != "-1":
		return nil, fmt.Errorf("--txn-size needs --acks all: transactions are idempotent")
	}
	codec, err := compressionCodec(o.compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(o.linger),
		kgo.MaxBufferedRecords(o.maxBuffered),
		kgo.ProducerBatchMaxBytes(int32(o.batchMax)),
		// A benchmark must not hide a stall behind retries forever.
		kgo.RecordDeliveryTimeout(o.cf.timeout + time.Minute),
		// A retriable error on a new topic (Kafka answers the first
		// produce before its leader is known) is retried after a
		// metadata refresh; franz-go's 5 s minimum metadata age would
		// add a 5 s stall to the measured time.
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	switch o.acks {
	case "all", "-1":
		o.acks = "all"
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("invalid --acks %q: want all, 1 or 0", o.acks)
	}
	if o.txnSize > 0 {
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("samsa-bench-%08x", rand.Uint32())))
	}
	return opts, nil
}

func (o *benchOpts) run(kopts []kgo.Opt) (*benchResult, error) {
	res := &benchResult{Settings: benchSettings{
		Bootstrap:     o.cf.bootstrap,
		Topic:         o.topic,
		Partitions:    o.partitions,
		RecordBytes:   o.size,
		Payload:       "random (ChaCha8), null keys",
		Acks:          o.acks,
		Compression:   o.compression,
		LingerMs:      o.linger.Milliseconds(),
		MaxBuffered:   o.maxBuffered,
		BatchMaxBytes: o.batchMax,
		TxnRecords:    o.txnSize,
	}}
	cl, err := o.cf.connect(append(kopts, kgo.DefaultProduceTopic(o.topic))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(o.cf.timeout.Milliseconds()))
	if err := o.createTopic(adm); err != nil {
		return nil, err
	}
	if !o.keep {
		defer o.deleteTopic(adm)
	}
	res.Produce, err = o.produce(cl)
	if err != nil {
		return nil, err
	}
	if !o.noConsume {
		c, err := o.consume(adm, res.Produce.Records)
		if err != nil {
			return nil, err
		}
		res.Consume = &c
	}
	return res, nil
}

func (o *benchOpts) createTopic(adm *kadm.Client) error {
	ctx, cancel := o.cf.ctx()
	defer cancel()
	r, err := adm.CreateTopic(ctx, int32(o.partitions), int16(o.rf), nil, o.topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return topicError(o.topic, err, r.ErrMessage)
	}
	// Wait until every partition has a leader, so the first produce
	// requests measure the broker rather than topic creation.
	for {
		td, err := adm.ListTopics(ctx, o.topic)
		if err == nil {
			t := td[o.topic]
			ready := t.Err == nil && len(t.Partitions) == o.partitions
			for _, p := range t.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
			if ready {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %q: partitions have no leader after %v", o.topic, o.cf.timeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// deleteTopic is best effort: a failure leaves a topic behind but does not
// invalidate the figures already measured.
func (o *benchOpts) deleteTopic(adm *kadm.Client) {
	ctx, cancel := o.cf.ctx()
	defer cancel()
	adm.DeleteTopic(ctx, o.topic)
}

// payloadPool is random bytes that record values are sliced from at random
// offsets. Fresh random bytes per record would cost the client (which shares
// the machine with the broker) more CPU than the broker spends; a pool much
// larger than a batch keeps values incompressible for every codec's window.
type payloadPool struct {
	buf  []byte
	size int
	rng  *rand.ChaCha8
}

func newPayloadPool(size int) *payloadPool {
	var seed [32]byte
	crand.Read(seed[:])
	p := &payloadPool{buf: make([]byte, 16<<20+size), size: size, rng: rand.NewChaCha8(seed)}
	p.rng.Read(p.buf)
	return p
}

func (p *payloadPool) next() []byte {
	off := int(p.rng.Uint64() % uint64(len(p.buf)-p.size+1))
	return p.buf[off : off+p.size : off+p.size]
}

// latencies collects per-record produce latencies from the promise
// callbacks, which the client runs on its own goroutines.
type latencies struct {
	mu     sync.Mutex
	d      []time.Duration
	errs   int64
	first  error
	last   time.Time
	nbytes int64
}

func (l *latencies) add(d time.Duration, n int, err error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = now
	if err != nil {
		l.errs++
		if l.first == nil {
			l.first = err
		}
		return
	}
	l.d = append(l.d, d)
	l.nbytes += int64(n)
}

// quantile is the nearest-rank q-quantile of sorted d in milliseconds.
func quantile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / float64(time.Millisecond)
}

func (o *benchOpts) produce(cl *kgo.Client) (benchPhase, error) {
	pool := newPayloadPool(o.size)
	lat := &latencies{d: make([]time.Duration, 0, max(o.records, 1024))}
	ctx := context.Background()
	start := time.Now()
	var deadline time.Time
	if o.duration > 0 {
		deadline = start.Add(o.duration)
	}
	var sent int64
	for {
		if o.duration > 0 {
			// Checking the clock every record would cost more than
			// producing on a fast loopback.
			if sent%256 == 0 && !time.Now().Before(deadline) {
				break
			}
		} else if sent == int64(o.records) {
			break
		}
		if o.txnSize > 0 && sent%int64(o.txnSize) == 0 {
			if err := o.nextTxn(ctx, cl, sent > 0); err != nil {
				return benchPhase{}, err
			}
		}
		v := pool.next()
		t0 := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			lat.add(time.Since(t0), len(v), err)
		})
		sent++
	}
	if err := cl.Flush(ctx); err != nil {
		return benchPhase{}, fmt.Errorf("flush: %w", err)
	}
	if o.txnSize > 0 {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return benchPhase{}, fmt.Errorf("commit: %w", err)
		}
	}
	lat.mu.Lock()
	defer lat.mu.Unlock()
	if lat.errs == sent {
		return benchPhase{}, fmt.Errorf("every record failed: %w", lat.first)
	}
	slices.Sort(lat.d)
	secs := lat.last.Sub(start).Seconds()
	ph := benchPhase{
		Records: int64(len(lat.d)),
		Bytes:   lat.nbytes,
		Seconds: secs,
		Errors:  lat.errs,
		Latency: &benchLatency{
			P50:  quantile(lat.d, 0.50),
			P99:  quantile(lat.d, 0.99),
			P999: quantile(lat.d, 0.999),
			Max:  quantile(lat.d, 1),
		},
	}
	ph.rates()
	return ph, nil
}

// nextTxn commits the open transaction, if any, once its records are
// acknowledged, and begins the next.
func (o *benchOpts) nextTxn(ctx context.Context, cl *kgo.Client, open bool) error {
	if open {
		if err := cl.Flush(ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	return nil
}

func (ph *benchPhase) rates() {
	if ph.Seconds > 0 {
		ph.MBPerSec = float64(ph.Bytes) / 1e6 / ph.Seconds
		ph.RecsPerSec = float64(ph.Records) / ph.Seconds
	}
}

// consume reads every partition from the start to the end offsets listed
// after producing, with a fresh client so nothing is served from the
// producer's connection state.
//
// With transactions the end offsets count the commit markers too, which no
// consumer sees as records, so reading also stops once every produced
// record has come back.
func (o *benchOpts) consume(adm *kadm.Client, produced int64) (benchPhase, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.cf.timeout+5*time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, o.topic)
	if err != nil {
		return benchPhase{}, fmt.Errorf("list end offsets: %w", err)
	}
	if err := ends.Error(); err != nil {
		return benchPhase{}, fmt.Errorf("list end offsets: %w", err)
	}
	want := map[int32]int64{}
	var total int64
	ends.Each(func(lo kadm.ListedOffset) {
		if lo.Offset > 0 {
			want[lo.Partition] = lo.Offset
			total += lo.Offset
		}
	})
	cl, err := o.cf.connect(
		kgo.ConsumeTopics(o.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return benchPhase{}, err
	}
	defer cl.Close()
	var ph benchPhase
	start := time.Now()
	for len(want) > 0 && ph.Records < produced {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return benchPhase{}, fmt.Errorf("consumed %d of %d records before timing out", ph.Records, total)
		}
		for _, fe := range fetches.Errors() {
			return benchPhase{}, fmt.Errorf("consume partition %d: %w", fe.Partition, fe.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			ph.Records++
			ph.Bytes += int64(len(r.Value))
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	ph.Seconds = time.Since(start).Seconds()
	ph.rates()
	return ph, nil
}

func (r *benchResult) print(w io.Writer) {
	s := r.Settings
	fmt.Fprintf(w, "topic %s on %s: %d partitions, acks=%s, compression=%s, %d-byte values (%s)\n",
		s.Topic, s.Bootstrap, s.Partitions, s.Acks, s.Compression, s.RecordBytes, s.Payload)
	fmt.Fprintf(w, "producer: linger=%dms max-buffered=%d batch-max-bytes=%d", s.LingerMs, s.MaxBuffered, s.BatchMaxBytes)
	if s.TxnRecords > 0 {
		fmt.Fprintf(w, " transactions of %d records", s.TxnRecords)
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\trecords\terrors\tseconds\tMB/s\trecords/s\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\t")
	phaseRow := func(name string, ph benchPhase) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.1f\t%.0f\t", name, ph.Records, ph.Errors, ph.Seconds, ph.MBPerSec, ph.RecsPerSec)
		if l := ph.Latency; l != nil {
			fmt.Fprintf(tw, "%.2f\t%.2f\t%.2f\t%.2f\t\n", l.P50, l.P99, l.P999, l.Max)
		} else {
			fmt.Fprint(tw, "-\t-\t-\t-\t\n")
		}
	}
	phaseRow("produce", r.Produce)
	if r.Consume != nil {
		phaseRow("consume", *r.Consume)
	}
	tw.Flush()
}

// benchTSVHeader names the columns of --tsv, which bench/run.sh reads
// without needing a JSON tool.
const benchTSVHeader = "produced errors produce_MB/s produce_records/s p50_ms p99_ms p99.9_ms max_ms consumed consume_MB/s"

func (r *benchResult) printTSV(w io.Writer) {
	p, l := r.Produce, r.Produce.Latency
	c := benchPhase{}
	if r.Consume != nil {
		c = *r.Consume
	}
	fmt.Fprintf(w, "%d\t%d\t%.1f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%.1f\n",
		p.Records, p.Errors, p.MBPerSec, p.RecsPerSec, l.P50, l.P99, l.P999, l.Max, c.Records, c.MBPerSec)
}
