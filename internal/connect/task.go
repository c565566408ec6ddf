package connect

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/connector"
)

// taskBase is what source and sink task runners share: identity, the
// converters and transforms of the connector config, error handling and
// the pause/stop plumbing.
type taskBase struct {
	taskSpec

	keyConv, valueConv connector.Converter
	chain              *connector.Chain
	tolerateAll        bool
	logErrors          bool

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	paused   atomic.Bool
	resumed  chan struct{} // signalled on resume
	isFailed atomic.Bool
}

// taskSpec names a task and holds its configs.
type taskSpec struct {
	h          *herder
	conn       string
	id         int
	connConfig map[string]string
	props      map[string]string
}

// setup builds converters and transforms; the runner fails the task on
// an error.
func (b *taskBase) setup() error {
	var err error
	if b.keyConv, err = b.converter("key.converter", true); err != nil {
		return err
	}
	if b.valueConv, err = b.converter("value.converter", false); err != nil {
		return err
	}
	if b.chain, err = connector.NewChain(b.connConfig); err != nil {
		return err
	}
	switch t := b.connConfig["errors.tolerance"]; t {
	case "", "none":
	case "all":
		b.tolerateAll = true
	default:
		return fmt.Errorf("invalid value %s for configuration errors.tolerance: String must be one of: none, all", t)
	}
	b.logErrors = b.connConfig["errors.log.enable"] == "true"
	return nil
}

// converter is the connector's own converter when its config names one,
// else the worker's, configured with the matching sub-keys.
func (b *taskBase) converter(key string, isKey bool) (connector.Converter, error) {
	conf := b.connConfig
	if conf[key] == "" {
		conf = b.h.cfg.Props
	}
	c, err := connector.NewConverter(conf[key])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if err := c.Configure(connector.SubConfig(conf, key+"."), isKey); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return c, nil
}

func (b *taskBase) init() {
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.done = make(chan struct{})
	b.resumed = make(chan struct{}, 1)
}

func (b *taskBase) setPaused(p bool) {
	if b.paused.Swap(p) && !p {
		select {
		case b.resumed <- struct{}{}:
		default:
		}
	}
	if b.isFailed.Load() {
		return
	}
	// The status follows at once; the loop pauses at its next turn.
	if p {
		b.h.setStatus(b.conn, b.id, statePaused, "")
	} else {
		b.h.setStatus(b.conn, b.id, stateRunning, "")
	}
}

// waitResumed blocks while paused; false when the task is stopping.
func (b *taskBase) waitResumed() bool {
	for b.paused.Load() {
		select {
		case <-b.ctx.Done():
			return false
		case <-b.resumed:
		case <-time.After(time.Second):
		}
	}
	return b.ctx.Err() == nil
}

func (b *taskBase) stop() {
	b.cancel()
	select {
	case <-b.done:
	case <-time.After(b.h.cfg.ShutdownTimeout):
		b.h.logger.Warn("connect: task did not stop within task.shutdown.graceful.timeout.ms", "connector", b.conn, "task", b.id)
	}
}

func (b *taskBase) failed() bool { return b.isFailed.Load() }

func (b *taskBase) fail(err error) {
	b.isFailed.Store(true)
	b.h.logger.Error("connect: task failed", "connector", b.conn, "task", b.id, "err", err)
	b.h.setStatus(b.conn, b.id, stateFailed, trace(err))
}

// tolerate decides about a record that failed in a stage: true to skip
// it (errors.tolerance=all), false to fail the task.
func (b *taskBase) tolerate(stage string, err error) bool {
	if b.tolerateAll && b.logErrors {
		b.h.logger.Warn("connect: skipping a record (errors.tolerance=all)", "connector", b.conn, "task", b.id, "stage", stage, "err", err)
	}
	return b.tolerateAll
}

func (b *taskBase) client(extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append([]kgo.Opt{}, b.h.clientOpt...)
	opts = append(opts, kgo.ClientID(fmt.Sprintf("connector-%s-%d", b.conn, b.id)))
	return kgo.NewClient(append(opts, extra...)...)
}

// sourceRunner runs a SourceTask: poll, transform, convert, produce; every
// offset.flush.interval.ms (and when stopping) it waits for the produced
// records' acks, stores their source offsets and calls Commit.
type sourceRunner struct {
	taskBase
	task    connector.SourceTask
	cl      *kgo.Client
	pending map[string]offsetEntry // offsets of records polled since the last flush
	sendErr atomic.Value           // the first produce error
	errMu   sync.Mutex
}

func startSource(spec taskSpec, task connector.SourceTask) taskRunner {
	r := &sourceRunner{taskBase: taskBase{taskSpec: spec}, task: task, pending: map[string]offsetEntry{}}
	r.init()
	go r.run()
	return r
}

func (r *sourceRunner) run() {
	defer close(r.done)
	if err := r.setup(); err != nil {
		r.fail(err)
		return
	}
	// As Kafka's producer, let the broker create a missing topic when
	// auto.create.topics.enable allows.
	cl, err := r.client(kgo.AllowAutoTopicCreation())
	if err != nil {
		r.fail(err)
		return
	}
	r.cl = cl
	defer cl.Close()
	// The task may have run on another worker until now: read the offset
	// topic to its end first, so it resumes where that worker stored.
	if l, ok := r.h.offsets.log.(*kafkaLog); ok {
		if err := l.catchUp(r.ctx); err != nil {
			if r.ctx.Err() == nil {
				r.fail(err)
			}
			return
		}
	}
	if err := r.task.Start(offsetReader{r.h.offsets, r.conn}, r.props); err != nil {
		r.fail(err)
		return
	}
	defer r.task.Stop()
	if !r.paused.Load() {
		r.h.setStatus(r.conn, r.id, stateRunning, "")
	}
	lastFlush := time.Now()
	for r.waitResumed() {
		recs, err := r.task.Poll(r.ctx)
		if err != nil {
			r.fail(err)
			return
		}
		for _, rec := range recs {
			if err := r.send(rec); err != nil {
				r.fail(err)
				return
			}
		}
		if time.Since(lastFlush) >= r.h.cfg.OffsetFlushInterval {
			if err := r.flush(); err != nil {
				r.fail(err)
				return
			}
			lastFlush = time.Now()
		}
	}
	if err := r.flush(); err != nil {
		r.fail(err)
	}
}

func (r *sourceRunner) send(rec *connector.Record) error {
	if rec.SourcePartition != nil {
		r.pending[offsetKey(r.conn, rec.SourcePartition)] = offsetEntry{r.conn, rec.SourcePartition, rec.SourceOffset}
	}
	out, err := r.chain.Apply(rec)
	if err != nil {
		if r.tolerate("TRANSFORMATION", err) {
			return nil
		}
		return fmt.Errorf("Tolerance exceeded in error handler: transformation: %w", err)
	}
	if out == nil {
		return nil // dropped by a transform; its offset still counts
	}
	kr := &kgo.Record{Topic: out.Topic, Timestamp: out.Timestamp}
	if kr.Key, err = r.keyConv.FromConnect(out.Topic, out.KeySchema, out.Key); err == nil {
		kr.Value, err = r.valueConv.FromConnect(out.Topic, out.ValueSchema, out.Value)
	}
	if err != nil {
		if r.tolerate("VALUE_CONVERTER", err) {
			return nil
		}
		return fmt.Errorf("Tolerance exceeded in error handler: converting: %w", err)
	}
	for _, hd := range out.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: hd.Key, Value: hd.Value})
	}
	r.h.recordTopic(r.conn, r.id, out.Topic)
	// Not r.ctx: stopping must not abort records in flight, whose offsets
	// the final flush stores once they are acknowledged.
	r.cl.Produce(context.Background(), kr, func(_ *kgo.Record, err error) {
		if err != nil {
			r.sendErr.CompareAndSwap(nil, err)
		}
	})
	return nil
}

// flush waits for every produced record, then stores the offsets of
// everything polled so far: an offset is never stored before its record
// was acknowledged.
func (r *sourceRunner) flush() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flushing records: %w", err)
	}
	if err, _ := r.sendErr.Load().(error); err != nil {
		return fmt.Errorf("Unrecoverable exception from producer send callback: %w", err)
	}
	if len(r.pending) == 0 {
		return nil
	}
	entries := make([]offsetEntry, 0, len(r.pending))
	for _, e := range r.pending {
		entries = append(entries, e)
	}
	if err := r.h.offsets.put(ctx, r.conn, entries); err != nil {
		return fmt.Errorf("storing offsets: %w", err)
	}
	r.pending = map[string]offsetEntry{}
	return r.task.Commit()
}

// sinkRunner runs a SinkTask as a member of the consumer group
// connect-<connector>: poll, convert, transform, Put; every
// offset.flush.interval.ms (and before partitions are revoked or the task
// stops) Flush and then commit the offsets after the records put.
type sinkRunner struct {
	taskBase
	task connector.SinkTask
	cl   *kgo.Client
	dlq  *kgo.Client

	mu   sync.Mutex // guards task calls and next between the loop and revocation
	next map[string]map[int32]kgo.EpochOffset
}

func startSink(spec taskSpec, task connector.SinkTask) taskRunner {
	r := &sinkRunner{taskBase: taskBase{taskSpec: spec}, task: task, next: map[string]map[int32]kgo.EpochOffset{}}
	r.init()
	go r.run()
	return r
}

func (r *sinkRunner) run() {
	defer close(r.done)
	if err := r.setup(); err != nil {
		r.fail(err)
		return
	}
	topics := r.connConfig["topics"]
	opts := []kgo.Opt{kgo.ConsumerGroup("connect-" + r.conn), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(r.h.cfg.ConsumerSessionTimeout), kgo.HeartbeatInterval(r.h.cfg.ConsumerHeartbeatInterval),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, _ map[string][]int32) { r.flushCommit(ctx) }),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) {
			r.mu.Lock()
			r.next = map[string]map[int32]kgo.EpochOffset{}
			r.mu.Unlock()
		})}
	if re := r.connConfig["topics.regex"]; re != "" {
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(re))
	} else {
		opts = append(opts, kgo.ConsumeTopics(splitCSV(topics)...))
	}
	cl, err := r.client(opts...)
	if err != nil {
		r.fail(err)
		return
	}
	r.cl = cl
	defer cl.Close()
	if err := r.task.Start(r.props); err != nil {
		r.fail(err)
		return
	}
	defer func() {
		if r.dlq != nil {
			r.dlq.Close()
		}
	}()
	defer r.task.Stop()
	if !r.paused.Load() {
		r.h.setStatus(r.conn, r.id, stateRunning, "")
	}
	lastFlush := time.Now()
	for r.waitResumed() {
		// Poll no longer than until the next flush is due, so buffered
		// records are flushed and committed while the topic is idle.
		wait := max(r.h.cfg.OffsetFlushInterval-time.Since(lastFlush), 10*time.Millisecond)
		pollCtx, cancel := context.WithTimeout(r.ctx, wait)
		fs := cl.PollRecords(pollCtx, 500)
		cancel()
		if r.ctx.Err() != nil {
			break
		}
		if err := r.put(fs.Records()); err != nil {
			r.fail(err)
			return
		}
		if time.Since(lastFlush) >= r.h.cfg.OffsetFlushInterval {
			if err := r.flushCommit(r.ctx); err != nil {
				r.fail(err)
				return
			}
			lastFlush = time.Now()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.flushCommit(ctx); err != nil {
		r.fail(err)
	}
}

func (r *sinkRunner) put(recs []*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	batch := make([]*connector.Record, 0, len(recs))
	for _, kr := range recs {
		rec, stage, err := r.convert(kr)
		if err != nil {
			if !r.tolerate(stage, err) {
				return fmt.Errorf("Tolerance exceeded in error handler: %s of %s-%d at offset %d: %w", stage, kr.Topic, kr.Partition, kr.Offset, err)
			}
			if err := r.deadLetter(kr, stage, err); err != nil {
				return err
			}
		} else if rec != nil {
			batch = append(batch, rec)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(batch) > 0 {
		if err := r.task.Put(batch); err != nil {
			return err
		}
	}
	for _, kr := range recs {
		r.h.recordTopic(r.conn, r.id, kr.Topic) // Kafka records the topic of every record consumed
		if r.next[kr.Topic] == nil {
			r.next[kr.Topic] = map[int32]kgo.EpochOffset{}
		}
		r.next[kr.Topic][kr.Partition] = kgo.EpochOffset{Epoch: kr.LeaderEpoch, Offset: kr.Offset + 1}
	}
	return nil
}

func (r *sinkRunner) convert(kr *kgo.Record) (*connector.Record, string, error) {
	rec := &connector.Record{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Timestamp: kr.Timestamp}
	var err error
	if rec.KeySchema, rec.Key, err = r.keyConv.ToConnect(kr.Topic, kr.Key); err != nil {
		return nil, "KEY_CONVERTER", err
	}
	if rec.ValueSchema, rec.Value, err = r.valueConv.ToConnect(kr.Topic, kr.Value); err != nil {
		return nil, "VALUE_CONVERTER", err
	}
	for _, h := range kr.Headers {
		rec.Headers = append(rec.Headers, connector.Header{Key: h.Key, Value: h.Value})
	}
	out, err := r.chain.Apply(rec)
	if err != nil {
		return nil, "TRANSFORMATION", err
	}
	return out, "", nil
}

// deadLetter sends the original record to errors.deadletterqueue.topic.name
// with Kafka's __connect.errors.* headers when context headers are on.
func (r *sinkRunner) deadLetter(kr *kgo.Record, stage string, cause error) error {
	topic := r.connConfig["errors.deadletterqueue.topic.name"]
	if topic == "" {
		return nil
	}
	if r.dlq == nil {
		cl, err := r.client(kgo.AllowAutoTopicCreation())
		if err != nil {
			return err
		}
		r.dlq = cl
	}
	out := &kgo.Record{Topic: topic, Key: kr.Key, Value: kr.Value, Headers: append([]kgo.RecordHeader(nil), kr.Headers...)}
	if r.connConfig["errors.deadletterqueue.context.headers.enable"] == "true" {
		add := func(k, v string) {
			out.Headers = append(out.Headers, kgo.RecordHeader{Key: "__connect.errors." + k, Value: []byte(v)})
		}
		add("topic", kr.Topic)
		add("partition", strconv.Itoa(int(kr.Partition)))
		add("offset", strconv.FormatInt(kr.Offset, 10))
		add("connector.name", r.conn)
		add("task.id", strconv.Itoa(r.id))
		add("stage", stage)
		add("exception.class.name", "org.apache.kafka.connect.errors.DataException")
		add("exception.message", cause.Error())
	}
	if err := r.dlq.ProduceSync(r.ctx, out).FirstErr(); err != nil {
		return fmt.Errorf("writing to the dead letter queue %s: %w", topic, err)
	}
	return nil
}

// flushCommit flushes the task and, only if that succeeded, commits the
// offsets after the records it was given.
func (r *sinkRunner) flushCommit(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.next) == 0 {
		return nil
	}
	offsets := map[connector.TopicPartition]int64{}
	for t, ps := range r.next {
		for p, o := range ps {
			offsets[connector.TopicPartition{Topic: t, Partition: p}] = o.Offset
		}
	}
	if err := r.task.Flush(offsets); err != nil {
		return fmt.Errorf("flushing the sink task: %w", err)
	}
	var commitErr error
	r.cl.CommitOffsetsSync(ctx, r.next, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if err == nil {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil && commitErr == nil {
						commitErr = e
					}
				}
			}
		}
	})
	if commitErr != nil {
		// A failed commit is retried at the next flush: the records are
		// durable in the sink, so only duplicates can follow.
		r.h.logger.Warn("connect: committing sink offsets", "connector", r.conn, "task", r.id, "err", commitErr)
		return nil
	}
	r.next = map[string]map[int32]kgo.EpochOffset{}
	return nil
}
