package streams

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Processing guarantees, Kafka's processing.guarantee values.
const (
	AtLeastOnce   = "at_least_once"
	ExactlyOnceV2 = "exactly_once_v2"
)

// Config configures an App. Field comments give the Kafka Streams property.
type Config struct {
	// ApplicationID (application.id) names the app: the consumer group id
	// and the prefix of its internal topics. Required.
	ApplicationID string
	// Bootstrap (bootstrap.servers) lists host:port seeds. Required.
	Bootstrap []string
	// CommitInterval (commit.interval.ms) is how often processed offsets
	// are committed under at_least_once; 0 means Kafka Streams' default,
	// 30 s. Under exactly_once_v2 each poll's records are committed in
	// their own transaction and CommitInterval is not used.
	CommitInterval time.Duration
	// ProcessingGuarantee (processing.guarantee): AtLeastOnce (the
	// default, also for "") or ExactlyOnceV2.
	ProcessingGuarantee string
	// SessionTimeout is the consumer's session.timeout.ms: how long the
	// group waits for a crashed instance before it hands that instance's
	// tasks to others. 0 means the consumer default, 45 s.
	SessionTimeout time.Duration
	// ReplicationFactor (replication.factor) of the internal topics the
	// app creates; 0 means -1, the broker's default.replication.factor.
	ReplicationFactor int16
	// DeserializationExceptionHandler
	// (default.deserialization.exception.handler) decides about a record
	// whose key or value fails to deserialize: LogAndFail (the default,
	// also for nil) stops Run with the error, before any offset past the
	// record is committed; LogAndContinue logs it and skips it; a function
	// of your own may, say, write the record to a dead-letter topic first.
	DeserializationExceptionHandler DeserializationHandler
	// SkipBadRecords is a shorthand for
	// DeserializationExceptionHandler: LogAndContinue.
	SkipBadRecords bool
	// Logger receives the app's logs; nil discards them.
	Logger *slog.Logger
	// ClientOptions are extra franz-go options for every client the app
	// makes (TLS, SASL, ...).
	ClientOptions []kgo.Opt
}

func (c *Config) validate() error {
	if c.ApplicationID == "" {
		return errors.New("streams: application.id is required")
	}
	if len(c.Bootstrap) == 0 {
		return errors.New("streams: bootstrap.servers is required")
	}
	switch c.ProcessingGuarantee {
	case "", AtLeastOnce:
		c.ProcessingGuarantee = AtLeastOnce
	case ExactlyOnceV2:
	default:
		return fmt.Errorf("streams: invalid value %q for processing.guarantee: want at_least_once or exactly_once_v2", c.ProcessingGuarantee)
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = 30 * time.Second
	}
	if c.CommitInterval < 0 {
		return fmt.Errorf("streams: invalid value %v for commit.interval.ms: want >= 0", c.CommitInterval)
	}
	if c.SessionTimeout < 0 {
		return fmt.Errorf("streams: invalid value %v for session.timeout.ms: want >= 0", c.SessionTimeout)
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return nil
}

// App runs a topology as one instance of an application: a member of the
// consumer group application.id that processes the partitions the group
// gives it. Start more processes with the same topology and application id
// to scale out.
type App struct {
	top *Topology
	cfg Config
	log *slog.Logger

	topicSub   map[string]*subtopology // resolved source topic -> its sub-topology
	changelogs map[string]bool

	cl   *kgo.Client               // consumes sources, produces sinks and changelogs
	sess *kgo.GroupTransactSession // exactly_once_v2: the session around cl

	// mu is held by the poll loop while it processes a batch and by the
	// group callbacks; they never overlap because rebalances are blocked
	// while a batch is processed (BlockRebalanceOnPoll).
	mu struct {
		sync.Mutex
		tasks    map[TaskID]*task
		assigned map[string][]int32
		// revoked is set when partitions were revoked or lost since the
		// last transaction ended (exactly_once_v2 only).
		revoked bool
	}
	// failed is the first error from a produce or a group callback; it has
	// its own lock because produce callbacks run while the loop holds mu.
	failed struct {
		sync.Mutex
		err error
	}

	closeOnce sync.Once
	closing   chan struct{}
	running   chan struct{} // closed when Run starts
	done      chan struct{} // closed when Run returns
	runErr    error
}

// New checks cfg and returns an App for t; Run starts it.
func New(t *Topology, cfg Config) (*App, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &App{top: t, cfg: cfg, log: cfg.Logger.With("application.id", cfg.ApplicationID),
		topicSub: map[string]*subtopology{}, changelogs: map[string]bool{},
		closing: make(chan struct{}), running: make(chan struct{}), done: make(chan struct{})}
	a.mu.tasks = map[TaskID]*task{}
	a.mu.assigned = map[string][]int32{}
	for _, s := range t.subs {
		for _, tr := range s.sourceTopics() {
			a.topicSub[tr.resolve(cfg.ApplicationID)] = s
		}
		for _, st := range s.stores {
			if t.stores[st].logged() {
				a.changelogs[changelogTopic(cfg.ApplicationID, st)] = true
			}
		}
	}
	return a, nil
}

// Close stops Run, if it is running, and waits for it: the app commits what
// it processed, closes its tasks and leaves the group. It returns Run's error.
func (a *App) Close() error {
	a.closeOnce.Do(func() { close(a.closing) })
	select {
	case <-a.running:
		<-a.done
		return a.runErr
	default:
		return nil
	}
}

// Assignment is a copy of the input partitions this instance owns now.
func (a *App) Assignment() map[string][]int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][]int32{}
	for t, ps := range a.mu.assigned {
		out[t] = append([]int32(nil), ps...)
	}
	return out
}

func (a *App) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(a.cfg.Bootstrap...)}
	opts = append(opts, a.cfg.ClientOptions...)
	return append(opts, extra...)
}

// Run creates the internal topics, joins the group and processes records
// until ctx is cancelled or Close is called (then it returns nil after a
// clean shutdown) or processing fails (then it returns the error). Call it
// once.
func (a *App) Run(ctx context.Context) (err error) {
	close(a.running)
	defer func() { a.runErr = err; close(a.done) }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-a.closing:
			cancel()
		case <-ctx.Done():
		}
	}()

	if err := a.setupTopics(ctx); err != nil {
		return err
	}
	var topics []string
	for t := range a.topicSub {
		topics = append(topics, t)
	}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(a.cfg.ApplicationID),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), // auto.offset.reset=earliest
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(500 * time.Millisecond), // the Java consumer's fetch.max.wait.ms, not franz-go's 5 s
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(a.onAssigned),
		kgo.OnPartitionsRevoked(a.onRevoked),
		kgo.OnPartitionsLost(a.onLost),
		kgo.RecordPartitioner(partitioner{a.changelogs, kgo.StickyKeyPartitioner(nil)}),
	}
	if a.cfg.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(a.cfg.SessionTimeout))
	}
	if a.eos() {
		a.sess, err = kgo.NewGroupTransactSession(a.clientOpts(append(eosOpts(a.cfg.ApplicationID), opts...)...)...)
		if err == nil {
			a.cl = a.sess.Client()
		}
	} else {
		a.cl, err = kgo.NewClient(a.clientOpts(opts...)...)
	}
	if err != nil {
		return fmt.Errorf("streams: client: %w", err)
	}
	a.log.Info("streams app started", "topics", topics, "processing.guarantee", a.cfg.ProcessingGuarantee)
	if a.eos() {
		err = a.loopEOS(ctx)
	} else {
		err = a.loop(ctx)
	}
	if err == nil && !a.eos() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		a.mu.Lock()
		err = a.commitLocked(cctx)
		a.mu.Unlock()
		ccancel()
	}
	if err != nil {
		// Recorded first, so that onRevoked, which runs as Close leaves the
		// group, commits nothing past what was processed.
		a.fail(err)
	}
	// Close leaves the group; onRevoked closes the tasks (and commits again,
	// which is a no-op after a clean stop).
	a.cl.Close()
	a.mu.Lock()
	for id, tk := range a.mu.tasks {
		if cerr := tk.close(); cerr != nil && err == nil {
			err = cerr
		}
		delete(a.mu.tasks, id)
	}
	a.mu.Unlock()
	a.log.Info("streams app stopped", "err", err)
	return err
}

func (a *App) loop(ctx context.Context) error {
	lastCommit := time.Now()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fetches := a.cl.PollRecords(pctx, 1000)
		pcancel()
		if fetches.IsClientClosed() {
			a.cl.AllowRebalance()
			return nil
		}
		a.logFetchErrors(fetches)
		// Records polled as ctx ends are processed too: the final commit
		// commits every polled offset.
		a.mu.Lock()
		err := a.processLocked(context.WithoutCancel(ctx), fetches)
		if err == nil {
			err = a.failure()
		}
		a.mu.Unlock()
		a.cl.AllowRebalance()
		if err != nil || ctx.Err() != nil {
			return err
		}
		if time.Since(lastCommit) >= a.cfg.CommitInterval {
			a.mu.Lock()
			err := a.commitLocked(ctx)
			a.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				return err
			}
			lastCommit = time.Now()
		}
	}
}

func (a *App) logFetchErrors(fetches kgo.Fetches) {
	fetches.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			a.log.Warn("fetch error", "topic", t, "partition", p, "err", err)
		}
	})
}

func (a *App) processLocked(ctx context.Context, fetches kgo.Fetches) error {
	if err := a.ensureTasksLocked(ctx); err != nil {
		return err
	}
	var err error
	fetches.EachRecord(func(r *kgo.Record) {
		if err != nil {
			return
		}
		var tk *task
		if tk, err = a.taskLocked(ctx, r.Topic, r.Partition); err != nil {
			return
		}
		var hs []Header
		for _, h := range r.Headers {
			hs = append(hs, Header{h.Key, h.Value})
		}
		err = tk.process(r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Timestamp.UnixMilli(), hs)
	})
	if err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	for _, tk := range a.mu.tasks {
		if err := tk.punctuate(WallClockTime, now); err != nil {
			return err
		}
	}
	return nil
}

// ensureTasksLocked makes the tasks of every assigned partition. Tasks start
// with the assignment, not their first record, so their stores are restored
// and wall-clock punctuators run while input is idle.
func (a *App) ensureTasksLocked(ctx context.Context) error {
	for t, ps := range a.mu.assigned {
		for _, p := range ps {
			if _, err := a.taskLocked(ctx, t, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// taskLocked returns the task for a source partition, making it (and
// restoring its stores) the first time it is asked for.
func (a *App) taskLocked(ctx context.Context, topic string, partition int32) (*task, error) {
	sub := a.topicSub[topic]
	if sub == nil {
		return nil, fmt.Errorf("streams: record from unexpected topic %q", topic)
	}
	id := TaskID{sub.id, partition}
	if tk := a.mu.tasks[id]; tk != nil {
		return tk, nil
	}
	tk := newTask(a.top, sub, partition, a.cfg.ApplicationID, a)
	tk.onDeserErr = a.onDeserErr
	if err := a.restore(ctx, tk); err != nil {
		return nil, err
	}
	if err := tk.init(); err != nil {
		return nil, err
	}
	a.mu.tasks[id] = tk
	a.log.Info("task created", "task", id.String())
	return tk, nil
}

// onDeserErr applies the deserialization exception handler: nil skips
// the record, an error stops the app.
func (a *App) onDeserErr(dc DeserializationContext, err error) error {
	h := a.cfg.DeserializationExceptionHandler
	if h == nil {
		h = LogAndFail
		if a.cfg.SkipBadRecords {
			h = LogAndContinue
		}
	}
	switch h(dc, err) {
	case DeserializationContinue:
		a.log.Warn("skipping a record that does not deserialize", "topic", dc.Topic, "partition", dc.Partition, "offset", dc.Offset, "err", err)
		return nil
	default:
		a.log.Error("a record does not deserialize; stopping (LogAndFail)", "topic", dc.Topic, "partition", dc.Partition, "offset", dc.Offset, "err", err)
		return err
	}
}

// send is the tasks' collector: it produces asynchronously; a failed
// produce fails the app at the next check, before any offset is committed
// past it.
func (a *App) send(topic string, partition int32, key, value []byte, ts int64, headers []Header) {
	r := &kgo.Record{Topic: topic, Partition: partition, Key: key, Value: value, Timestamp: time.UnixMilli(ts)}
	for _, h := range headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	a.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
		if err != nil {
			a.fail(fmt.Errorf("streams: produce to %s: %w", r.Topic, err))
		}
	})
}

func (a *App) fail(err error) {
	a.failed.Lock()
	defer a.failed.Unlock()
	if a.failed.err == nil {
		a.failed.err = err
	}
}

func (a *App) failure() error {
	a.failed.Lock()
	defer a.failed.Unlock()
	return a.failed.err
}

// commitLocked makes everything processed so far durable: first what the
// tasks produced, then the input offsets. Every polled record has been
// processed when this runs, so the uncommitted offsets are the processed ones.
func (a *App) commitLocked(ctx context.Context) error {
	if err := a.cl.Flush(ctx); err != nil {
		return fmt.Errorf("streams: flush: %w", err)
	}
	if err := a.failure(); err != nil {
		return err
	}
	if err := a.cl.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("streams: commit: %w", err)
	}
	return nil
}

func (a *App) onAssigned(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for t, parts := range ps {
		a.mu.assigned[t] = append(a.mu.assigned[t], parts...)
	}
	a.log.Info("partitions assigned", "partitions", ps)
}

func (a *App) onRevoked(ctx context.Context, _ *kgo.Client, ps map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.eos() {
		// No transaction is open while a rebalance runs: the tasks are
		// clean. The session still aborts the next one, so the loop ends
		// it at once and polls again (see loopEOS).
		if len(ps) > 0 {
			a.mu.revoked = true
		}
	} else if err := a.commitLocked(ctx); err != nil {
		a.fail(err)
	}
	a.dropLocked(ps)
	a.log.Info("partitions revoked", "partitions", ps)
}

func (a *App) onLost(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mu.revoked = true
	a.dropLocked(ps)
	a.log.Warn("partitions lost", "partitions", ps)
}

// dropLocked closes the tasks of partitions the instance no longer owns.
func (a *App) dropLocked(ps map[string][]int32) {
	for t, parts := range ps {
		for _, p := range parts {
			if sub := a.topicSub[t]; sub != nil {
				id := TaskID{sub.id, p}
				if tk := a.mu.tasks[id]; tk != nil {
					if err := tk.close(); err != nil {
						a.log.Warn("closing task", "task", id.String(), "err", err)
					}
					delete(a.mu.tasks, id)
				}
			}
		}
		keep := a.mu.assigned[t][:0]
		for _, p := range a.mu.assigned[t] {
			if !containsP(parts, p) {
				keep = append(keep, p)
			}
		}
		a.mu.assigned[t] = keep
		if len(keep) == 0 {
			delete(a.mu.assigned, t)
		}
	}
}

func containsP(ps []int32, p int32) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

// partitioner sends changelog records to the partition the task set (its
// own) and everything else by murmur2 of the key, like Kafka's default.
type partitioner struct {
	changelogs map[string]bool
	keyed      kgo.Partitioner
}

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	if p.changelogs[t] {
		return manualPartition{}
	}
	return p.keyed.ForTopic(t)
}

type manualPartition struct{}

func (manualPartition) RequiresConsistency(*kgo.Record) bool { return true }
func (manualPartition) Partition(r *kgo.Record, _ int) int   { return int(r.Partition) }
