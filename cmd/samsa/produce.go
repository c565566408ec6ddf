package main

// `samsa produce`: one record per stdin line, like kafka-console-producer.sh
// and `rpk topic produce`.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const produceSynopsis = `samsa produce TOPIC [flags] < lines

Each stdin line becomes one record (the newline is not part of the value).
With --key-separator, the text before the first separator is the key and
the rest the value; a line without the separator is produced with a null key.
Records without --partition are partitioned like Kafka's producer: by the
murmur2 hash of the key, or stickily for null keys.
The topic is created if the broker allows auto-creation.
Prints "produced N records" to stderr; exits 1 if any record failed.`

// produceOpts is the parsed command line of `samsa produce`.
type produceOpts struct {
	cf          clientFlags
	topic       string
	keySep      string
	partition   int
	acks        string
	compression string
	headers     kvList
	maxLine     int
}

func runProduce(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("produce", produceSynopsis, stderr)
	var o produceOpts
	o.cf.register(fs)
	fs.StringVar(&o.keySep, "key-separator", "", "split each line into key and value at the first `SEP`")
	fs.IntVar(&o.partition, "partition", -1, "produce every record to this partition (-1: partition by key)")
	fs.StringVar(&o.acks, "acks", "all", "acknowledgements to wait for: all, 1 or 0")
	fs.StringVar(&o.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fs.Var(&o.headers, "header", "add header `key=value` to every record (repeatable)")
	fs.IntVar(&o.maxLine, "max-line-bytes", 1<<20, "longest accepted input line")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one topic, got %d arguments", len(pos))
	}
	o.topic = pos[0]
	kopts, err := o.clientOpts()
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	cl, err := o.cf.connect(kopts...)
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	if err := o.checkPartition(cl); err != nil {
		return fail(stderr, err)
	}
	return o.produceLines(cl, stdin, stderr)
}

// checkPartition rejects an out-of-range --partition of an existing topic
// before reading stdin; the client would otherwise fail every record with a
// less helpful message. A missing topic is left to auto-creation.
func (o *produceOpts) checkPartition(cl *kgo.Client) error {
	if o.partition < 0 {
		return nil
	}
	ctx, cancel := o.cf.ctx()
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopicsWithInternal(ctx, o.topic)
	if err != nil {
		return fmt.Errorf("look up topic %q: %w", o.topic, err)
	}
	td := topics[o.topic]
	if td.Err == nil && o.partition >= len(td.Partitions) {
		return fmt.Errorf("topic %q has %d partitions: --partition %d does not exist",
			o.topic, len(td.Partitions), o.partition)
	}
	return nil
}

// clientOpts maps the flags onto producer options.
func (o *produceOpts) clientOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(o.topic),
		kgo.AllowAutoTopicCreation(),
		kgo.RecordDeliveryTimeout(o.cf.timeout),
		kgo.ProducerLinger(0),
	}
	switch o.acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		// Idempotence needs acks=all, as in the Java producer.
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("invalid --acks %q: want all, 1 or 0", o.acks)
	}
	codec, err := compressionCodec(o.compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if o.partition < -1 {
		return nil, fmt.Errorf("invalid --partition %d", o.partition)
	}
	if o.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if o.maxLine <= 0 {
		return nil, fmt.Errorf("invalid --max-line-bytes %d", o.maxLine)
	}
	return opts, nil
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("invalid --compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// produceResult counts delivery outcomes reported by the client's callbacks,
// which run on the client's goroutines.
type produceResult struct {
	mu       sync.Mutex
	ok, bad  int
	firstErr error
}

func (r *produceResult) done(_ *kgo.Record, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.ok++
		return
	}
	r.bad++
	if r.firstErr == nil {
		r.firstErr = err
	}
}

// produceLines sends stdin asynchronously, so a large file is batched, then
// waits for every record to be acknowledged or to fail.
func (o *produceOpts) produceLines(cl *kgo.Client, stdin io.Reader, stderr io.Writer) int {
	var res produceResult
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, min(64<<10, o.maxLine)), o.maxLine)
	ctx := context.Background()
	for sc.Scan() {
		cl.Produce(ctx, o.record(sc.Text()), res.done)
	}
	scanErr := sc.Err()
	// Flush waits for every callback; each record is bounded by
	// RecordDeliveryTimeout, so this cannot hang on a dead cluster.
	if err := cl.Flush(ctx); err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stderr, "produced %d records\n", res.ok)
	if res.bad > 0 {
		return fail(stderr, fmt.Errorf("%d records failed: %v", res.bad, o.describeErr(res.firstErr)))
	}
	if scanErr != nil {
		if errors.Is(scanErr, bufio.ErrTooLong) {
			scanErr = fmt.Errorf("a line is longer than --max-line-bytes=%d", o.maxLine)
		}
		return fail(stderr, fmt.Errorf("reading stdin: %v", scanErr))
	}
	return exitOK
}

func (o *produceOpts) record(line string) *kgo.Record {
	r := &kgo.Record{Value: []byte(line)}
	if o.keySep != "" {
		if k, v, ok := strings.Cut(line, o.keySep); ok {
			r.Key, r.Value = []byte(k), []byte(v)
		}
	}
	if o.partition >= 0 {
		r.Partition = int32(o.partition)
	}
	for i, k := range o.headers.keys {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(o.headers.values[i])})
	}
	return r
}

// describeErr names the topic or partition for errors that are about them.
func (o *produceOpts) describeErr(err error) error {
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition) && o.partition >= 0:
		return fmt.Errorf("topic %q has no partition %d, or does not exist", o.topic, o.partition)
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("topic %q does not exist", o.topic)
	case errors.Is(err, kgo.ErrRecordTimeout):
		return fmt.Errorf("not acknowledged within %v", o.cf.timeout)
	}
	return err
}
