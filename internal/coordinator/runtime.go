package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// KV is one record of a coordinator's partition. Key and Value are the
// record's; the other fields describe its batch: Transactional data of
// ProducerID (TxnOffsetCommit), or, when Control, that producer's COMMIT
// (Commit) or ABORT marker, which has no key or value here.
type KV struct {
	Key, Value    []byte
	Transactional bool
	Control       bool
	Commit        bool
	ProducerID    int64
}

// PartitionLog is one partition of a coordinator's internal topic: Kafka's
// PartitionWriter and CoordinatorLoader over the replicated log
// (ReplicaLog), or a memory log in tests.
type PartitionLog interface {
	// Append writes kvs as one batch and returns once committed. An error
	// means nothing was written as far as the caller knows.
	Append(ctx context.Context, kvs []KV) error
	// AppendTransactional writes kvs as one transactional batch of
	// producerID at epoch, checked against the partition's producer state
	// like any transactional produce. A wrapped ErrProducerFenced means the
	// epoch is stale.
	AppendTransactional(ctx context.Context, producerID int64, epoch int16, kvs []KV) error
	// Replay calls fn for every record from the log start to the current
	// end, in order, transaction markers included (KV.Control).
	Replay(fn func(kv KV) error) error
}

// Errors a PartitionLog wraps so that coordinators answer a storage
// failure with Kafka's code (AppendErrorCode).
var (
	// ErrNotLeader: this node lost leadership of the partition (NOT_COORDINATOR).
	ErrNotLeader = errors.New("not the leader of the coordinator partition")
	// ErrRecordTooLarge: the batch exceeds the topic's size limits.
	ErrRecordTooLarge = errors.New("record batch too large for the coordinator partition")
	// ErrProducerFenced: a transactional append's epoch is older than the
	// producer's.
	ErrProducerFenced = errors.New("producer epoch fenced on the coordinator partition")
)

// AppendErrorCode is Kafka's answer for a coordinator write that failed.
func AppendErrorCode(err error) int16 {
	switch {
	case errors.Is(err, ErrNotLeader):
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrRecordTooLarge):
		return kerr.UnknownServerError.Code
	default:
		return kerr.CoordinatorNotAvailable.Code
	}
}

// Shard is the state machine of one loaded partition (Kafka's
// CoordinatorShard). The runtime holds the shard's lock when it calls the
// Locked methods; the shard's handlers take it themselves.
type Shard interface {
	sync.Locker
	// ReplayLocked applies one record: every record of the partition on
	// load, and each record a Write appended (if the shard replays its own
	// writes in apply). It is how state changes.
	ReplayLocked(kv KV) error
	// OnLoadedLocked runs once the partition is replayed to its end,
	// before any request is served.
	OnLoadedLocked()
	// OnUnloadedLocked runs when leadership moved away or the runtime
	// closes: answer waiters NOT_COORDINATOR and stop timers. The shard
	// is never used again.
	OnUnloadedLocked()
}

// Config configures a Runtime.
type Config struct {
	// Topic is the internal topic, for logs: __consumer_offsets.
	Topic string
	// NumPartitions is the topic's partition count, which places ids
	// (PartitionFor).
	NumPartitions int32
	// Logger, nil for none.
	Logger *slog.Logger
}

// Runtime runs the shards of one coordinator (Kafka's CoordinatorRuntime):
// it loads a partition by replaying its log in the background, unloads it
// when leadership moves, finds the shard of an id, serialises writes so
// that memory follows log order, and owns every goroutine and timer the
// shards start, so Close joins them all.
type Runtime[S Shard] struct {
	cfg      Config
	newShard func(*Partition[S]) S

	mu struct {
		sync.Mutex
		parts  map[int32]*Partition[S]
		closed bool
	}
	// wg joins every goroutine and timer callback the runtime starts.
	wg   sync.WaitGroup
	stop chan struct{}
}

// NewRuntime returns a runtime with no loaded partitions; newShard makes
// the empty state of a partition being loaded.
func NewRuntime[S Shard](cfg Config, newShard func(*Partition[S]) S) *Runtime[S] {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runtime[S]{cfg: cfg, newShard: newShard, stop: make(chan struct{})}
	r.mu.parts = map[int32]*Partition[S]{}
	return r
}

// PartitionFor returns the partition that owns id.
func (r *Runtime[S]) PartitionFor(id string) int32 { return PartitionFor(id, r.cfg.NumPartitions) }

// Partition is one partition of the internal topic loaded on this node.
type Partition[S Shard] struct {
	// ID is the partition; Epoch its leader epoch when it was loaded
	// (the transaction coordinator's epoch).
	ID, Epoch int32
	Shard     S
	log       PartitionLog
	rt        *Runtime[S]
	loaded    chan struct{} // closed when replay finished
	ctx       context.Context
	cancel    context.CancelFunc // ends appends of an unloaded partition

	// writeMu serialises decide/append/apply so memory follows log
	// order. Lock order: writeMu before the shard's lock.
	writeMu sync.Mutex
	// Guarded by the shard's lock.
	unloaded bool
	loadErr  error
}

// Load makes this node the owner of partition at leader epoch: its log is
// replayed in the background, and Lookup answers
// COORDINATOR_LOAD_IN_PROGRESS until that ends. Loading a loaded partition
// replaces it.
func (r *Runtime[S]) Load(partition, epoch int32, log PartitionLog) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Partition[S]{ID: partition, Epoch: epoch, log: log, rt: r, loaded: make(chan struct{}), ctx: ctx, cancel: cancel}
	p.Shard = r.newShard(p)
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		cancel()
		return
	}
	old := r.mu.parts[partition]
	r.mu.parts[partition] = p
	r.wg.Add(1)
	r.mu.Unlock()
	if old != nil {
		old.unload()
	}
	go func() {
		defer r.wg.Done()
		p.load()
	}()
}

// Unload drops the partition's state.
func (r *Runtime[S]) Unload(partition int32) {
	r.mu.Lock()
	p := r.mu.parts[partition]
	delete(r.mu.parts, partition)
	r.mu.Unlock()
	if p != nil {
		p.unload()
	}
}

// Close unloads every partition, stops the periodic tasks and waits for
// every goroutine and timer callback.
func (r *Runtime[S]) Close() {
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return
	}
	r.mu.closed = true
	parts := r.mu.parts
	r.mu.parts = map[int32]*Partition[S]{}
	r.mu.Unlock()
	close(r.stop)
	for _, p := range parts {
		p.unload()
	}
	r.wg.Wait()
}

// Lookup finds the loaded partition of id, or the code to answer:
// NOT_COORDINATOR when the partition is not led here,
// COORDINATOR_LOAD_IN_PROGRESS while it replays, COORDINATOR_NOT_AVAILABLE
// when its replay failed.
func (r *Runtime[S]) Lookup(id string) (*Partition[S], int16) {
	p, ok := r.Get(r.PartitionFor(id))
	if !ok {
		return nil, kerr.NotCoordinator.Code
	}
	if code := p.Ready(); code != 0 {
		return nil, code
	}
	return p, 0
}

// Shard is Lookup's shard.
func (r *Runtime[S]) Shard(id string) (S, int16) {
	p, code := r.Lookup(id)
	if code != 0 {
		var none S
		return none, code
	}
	return p.Shard, 0
}

// Get returns partition if it is loaded or loading here.
func (r *Runtime[S]) Get(partition int32) (*Partition[S], bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.mu.parts[partition]
	return p, ok
}

// Partitions returns the partitions loaded or loading here.
func (r *Runtime[S]) Partitions() []*Partition[S] {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Partition[S], 0, len(r.mu.parts))
	for _, p := range r.mu.parts {
		out = append(out, p)
	}
	return out
}

// Every runs fn on each partition that serves, every interval, on a
// goroutine Close joins.
func (r *Runtime[S]) Every(interval time.Duration, fn func(*Partition[S])) {
	r.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				for _, p := range r.Partitions() {
					if p.Ready() == 0 {
						fn(p)
					}
				}
			}
		}
	})
}

// Go runs fn on a goroutine Close joins, unless the runtime is closed.
func (r *Runtime[S]) Go(fn func()) {
	if !r.enter() {
		return
	}
	go func() {
		defer r.wg.Done()
		fn()
	}()
}

// AfterFunc runs fn after d on a goroutine Close joins, unless the
// runtime is closed by then.
func (r *Runtime[S]) AfterFunc(d time.Duration, fn func()) *time.Timer {
	return time.AfterFunc(d, func() {
		if !r.enter() {
			return
		}
		defer r.wg.Done()
		fn()
	})
}

// enter registers a goroutine with wg unless the runtime is closed; the
// caller calls wg.Done when enter returns true.
func (r *Runtime[S]) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return false
	}
	r.wg.Add(1)
	return true
}

var errUnloaded = errors.New("partition unloaded")

func (p *Partition[S]) load() {
	start := time.Now()
	var n int
	err := p.log.Replay(func(kv KV) error {
		n++
		p.Shard.Lock()
		defer p.Shard.Unlock()
		if p.unloaded {
			return errUnloaded
		}
		return p.Shard.ReplayLocked(kv)
	})
	p.Shard.Lock()
	defer p.Shard.Unlock()
	logger := p.rt.cfg.Logger
	if err != nil && !errors.Is(err, errUnloaded) {
		// Serving partial state would answer wrongly; stay unavailable.
		p.loadErr = fmt.Errorf("replaying %s-%d: %w", p.rt.cfg.Topic, p.ID, err)
		logger.Error("coordinator load failed", "topic", p.rt.cfg.Topic, "partition", p.ID, "err", err)
	}
	if !p.unloaded && p.loadErr == nil {
		p.Shard.OnLoadedLocked()
		logger.Info("loaded coordinator partition", "topic", p.rt.cfg.Topic, "partition", p.ID,
			"leader.epoch", p.Epoch, "records", n, "elapsed", time.Since(start))
	}
	close(p.loaded)
}

func (p *Partition[S]) unload() {
	p.cancel()
	p.Shard.Lock()
	defer p.Shard.Unlock()
	if p.unloaded {
		return
	}
	p.unloaded = true
	p.Shard.OnUnloadedLocked()
}

// Context ends when the partition is unloaded: the context of work a
// shard starts on its own (timers, marker writes).
func (p *Partition[S]) Context() context.Context { return p.ctx }

// Loaded is closed once the replay ended.
func (p *Partition[S]) Loaded() <-chan struct{} { return p.loaded }

// Ready is 0 if the partition serves requests, else the code to answer.
func (p *Partition[S]) Ready() int16 {
	select {
	case <-p.loaded:
	default:
		return kerr.CoordinatorLoadInProgress.Code
	}
	p.Shard.Lock()
	defer p.Shard.Unlock()
	return p.readyLocked()
}

func (p *Partition[S]) readyLocked() int16 {
	switch {
	case p.unloaded:
		return kerr.NotCoordinator.Code
	case p.loadErr != nil:
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// UnloadedLocked reports whether the partition was unloaded; a timer or a
// waiter that finds it so must not act.
func (p *Partition[S]) UnloadedLocked() bool { return p.unloaded }

// Write is the one path by which a shard persists: decide runs under the
// shard's lock and returns records plus an apply step; the records are
// appended without the lock held; apply then runs under the lock with the
// append's outcome (nil when there was nothing to write, ErrNotLeader when
// the partition was unloaded meanwhile). Writes of one partition are
// serialised, so apply order is log order. Write reports false, having run
// nothing, if the partition was unloaded.
func (p *Partition[S]) Write(ctx context.Context, decide func() ([]KV, func(err error))) bool {
	return p.write(ctx, p.log.Append, decide)
}

// WriteTransactional is Write appending one transactional batch of
// producerID at epoch.
func (p *Partition[S]) WriteTransactional(ctx context.Context, producerID int64, epoch int16, decide func() ([]KV, func(err error))) bool {
	return p.write(ctx, func(ctx context.Context, kvs []KV) error {
		return p.log.AppendTransactional(ctx, producerID, epoch, kvs)
	}, decide)
}

func (p *Partition[S]) write(ctx context.Context, appendFn func(context.Context, []KV) error, decide func() ([]KV, func(err error))) bool {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.Shard.Lock()
	if p.unloaded {
		p.Shard.Unlock()
		return false
	}
	kvs, apply := decide()
	p.Shard.Unlock()
	var err error
	if len(kvs) > 0 {
		// Appends outlive neither the request nor the leadership.
		actx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(p.ctx, cancel)
		err = appendFn(actx, kvs)
		stop()
		cancel()
	}
	if apply == nil {
		return true
	}
	p.Shard.Lock()
	defer p.Shard.Unlock()
	if p.unloaded && err == nil {
		err = ErrNotLeader
	}
	apply(err)
	return true
}

// Apply runs fn in log order with the shard's lock held, once the replay
// ended and only while the partition serves: for a record another path
// appended (a transaction marker the broker wrote).
func (p *Partition[S]) Apply(fn func()) {
	<-p.loaded // a marker must not overtake the replay of what it ends
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.Shard.Lock()
	defer p.Shard.Unlock()
	if p.readyLocked() == 0 {
		fn()
	}
}
