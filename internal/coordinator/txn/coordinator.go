package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
)

// PartitionLog is one partition of __transaction_state, provided by the
// broker (the same contract as the group coordinator's PartitionLog).
type PartitionLog interface {
	// Append writes kvs as one batch and returns once committed (acks=all).
	// An error means nothing was written as far as the caller knows.
	Append(ctx context.Context, kvs []KV) error
	// Replay calls fn for every record from the log start to the current
	// end, in order.
	Replay(fn func(kv KV) error) error
}

// MarkerWriter writes transaction markers, provided by the broker.
type MarkerWriter interface {
	// WriteMarkers appends a COMMIT or ABORT control batch for producerID at
	// epoch, stamped with coordinatorEpoch, to every listed partition
	// (Kafka's WriteTxnMarkers), and returns once all are written. It may
	// skip partitions that no longer exist. An error makes the coordinator
	// retry the whole call after Config.MarkerRetryBackoff, so writing a
	// marker twice must be harmless (it is: a second marker for a producer
	// with no open transaction is a no-op in Kafka's producer state).
	// ctx ends when the partition of __transaction_state is unloaded.
	WriteMarkers(ctx context.Context, producerID int64, epoch int16, coordinatorEpoch int32, commit bool, partitions []TopicPartition) error
}

// Errors a PartitionLog may wrap so handlers answer with Kafka's code for
// the same storage failure.
var (
	// ErrNotLeader: this broker lost leadership of the partition (NOT_COORDINATOR).
	ErrNotLeader = errors.New("not the leader of the __transaction_state partition")
	// ErrRecordTooLarge: the batch exceeds the topic's size limits (UNKNOWN_SERVER_ERROR).
	ErrRecordTooLarge = errors.New("record batch too large for __transaction_state")
)

// Coordinator is the transaction coordinator of one broker.
type Coordinator struct {
	cfg Config

	mu struct {
		sync.Mutex
		shards map[int32]*shard
		closed bool
	}
	// wg joins every goroutine the coordinator starts.
	wg   sync.WaitGroup
	stop chan struct{}
}

// shard is one loaded partition of __transaction_state.
type shard struct {
	c         *Coordinator
	partition int32
	epoch     int32 // coordinator epoch: the partition's leader epoch
	log       PartitionLog
	loaded    chan struct{} // closed when replay finished
	ctx       context.Context
	cancel    context.CancelFunc // ends appends and marker writes once unloaded

	// writeMu serializes decide/append/apply so memory follows log order.
	// Lock order: writeMu before mu.
	writeMu sync.Mutex
	mu      struct {
		sync.Mutex
		txns       map[string]*txnMeta
		completing map[string]bool // ids whose markers are being written
		unloaded   bool
		loadErr    error
	}
}

// New returns a coordinator with no loaded partitions and starts its
// timeout and expiry loops.
func New(cfg Config) *Coordinator {
	c := &Coordinator{cfg: cfg.withDefaults(), stop: make(chan struct{})}
	c.mu.shards = map[int32]*shard{}
	c.wg.Add(2)
	go c.loop(c.cfg.AbortTimedOutInterval, (*shard).abortTimedOut)
	go c.loop(c.cfg.RemoveExpiredInterval, (*shard).removeExpired)
	return c
}

// PartitionFor returns the __transaction_state partition that owns
// transactionalID.
func (c *Coordinator) PartitionFor(transactionalID string) int32 {
	return coordinator.PartitionFor(transactionalID, c.cfg.NumPartitions)
}

// Load makes this coordinator the owner of partition at coordinatorEpoch
// (the partition's leader epoch, stamped on every marker). It replays log
// in the background; requests get COORDINATOR_LOAD_IN_PROGRESS until then.
// Transactions found in PrepareCommit or PrepareAbort have their markers
// written again and are completed. Loading a loaded partition replaces it.
func (c *Coordinator) Load(partition, coordinatorEpoch int32, log PartitionLog) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &shard{c: c, partition: partition, epoch: coordinatorEpoch, log: log, loaded: make(chan struct{}), ctx: ctx, cancel: cancel}
	s.mu.txns = map[string]*txnMeta{}
	s.mu.completing = map[string]bool{}
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		cancel()
		return
	}
	old := c.mu.shards[partition]
	c.mu.shards[partition] = s
	c.wg.Add(1)
	c.mu.Unlock()
	if old != nil {
		old.unload()
	}
	go func() {
		defer c.wg.Done()
		s.load()
	}()
}

// Unload drops the partition's state and stops its marker writers.
func (c *Coordinator) Unload(partition int32) {
	c.mu.Lock()
	s := c.mu.shards[partition]
	delete(c.mu.shards, partition)
	c.mu.Unlock()
	if s != nil {
		s.unload()
	}
}

// Close unloads every partition and waits for background work to end.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	shards := c.mu.shards
	c.mu.shards = map[int32]*shard{}
	c.mu.Unlock()
	close(c.stop)
	for _, s := range shards {
		s.unload()
	}
	c.wg.Wait()
}

func (s *shard) load() {
	start := time.Now()
	var n int
	err := s.log.Replay(func(kv KV) error {
		n++
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.mu.unloaded {
			return errUnloaded
		}
		return s.replayLocked(kv)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !errors.Is(err, errUnloaded) {
		// Partial state could commit what was aborted; stay unavailable.
		s.mu.loadErr = fmt.Errorf("replaying __transaction_state-%d: %w", s.partition, err)
		s.c.cfg.Logger.Error("transaction coordinator load failed", "partition", s.partition, "err", err)
	}
	if !s.mu.unloaded && s.mu.loadErr == nil {
		for _, t := range s.mu.txns {
			if t.state == StatePrepareCommit || t.state == StatePrepareAbort {
				s.startCompletionLocked(t)
			}
		}
		s.c.cfg.Logger.Info("loaded transaction coordinator partition", "partition", s.partition,
			"records", n, "transactional_ids", len(s.mu.txns), "elapsed", time.Since(start))
	}
	close(s.loaded)
}

var errUnloaded = errors.New("partition unloaded")

func (s *shard) unload() {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.unloaded = true
	s.mu.txns = nil
}

// replayLocked applies one record. It is the only way transaction state
// changes, on Load and after a successful live append.
func (s *shard) replayLocked(kv KV) error {
	id, t, err := parseRecord(kv)
	if err != nil {
		return err
	}
	old := s.mu.txns[id]
	if t == nil {
		delete(s.mu.txns, id)
		return nil
	}
	if old != nil && t.prevProducerID < 0 {
		t.prevProducerID = old.prevProducerID
		if old.producerID != t.producerID {
			t.prevProducerID = old.producerID
		}
	}
	s.mu.txns[id] = t
	return nil
}

// shardFor finds the loaded shard owning id, or the code to answer.
func (c *Coordinator) shardFor(id string) (*shard, int16) {
	if id == "" {
		return nil, kerr.InvalidRequest.Code
	}
	c.mu.Lock()
	s := c.mu.shards[c.PartitionFor(id)]
	c.mu.Unlock()
	if s == nil {
		return nil, kerr.NotCoordinator.Code
	}
	return s, s.ready()
}

// ready is 0 if the shard serves requests, else the code to answer.
func (s *shard) ready() int16 {
	select {
	case <-s.loaded:
	default:
		return kerr.CoordinatorLoadInProgress.Code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.mu.unloaded:
		return kerr.NotCoordinator.Code
	case s.mu.loadErr != nil:
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// write is the one path by which state is persisted: decide runs under mu
// and returns records plus an apply step; the records are appended without
// mu held; apply runs under mu with the append's outcome. writeMu spans the
// three steps so memory changes in log order. It reports false, having run
// nothing, if the shard was unloaded.
func (s *shard) write(ctx context.Context, decide func() ([]KV, func(err error))) bool {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if s.mu.unloaded {
		s.mu.Unlock()
		return false
	}
	kvs, apply := decide()
	s.mu.Unlock()
	var err error
	if len(kvs) > 0 {
		actx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(s.ctx, cancel)
		err = s.log.Append(actx, kvs)
		stop()
		cancel()
	}
	if apply == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.unloaded && err == nil {
		err = ErrNotLeader
	}
	apply(err)
	return true
}

// persist is write for the common case of one new transaction state: it
// appends t's record and, once written, replays it and then runs after.
// It returns the code for a failed append, or 0.
func (s *shard) persist(ctx context.Context, decide func() (t *txnMeta, code int16), after func(t *txnMeta)) int16 {
	var code int16
	ok := s.write(ctx, func() ([]KV, func(error)) {
		t, c := decide()
		if t == nil {
			code = c
			return nil, nil
		}
		kv := txnRecord(t)
		return []KV{kv}, func(err error) {
			if err != nil {
				code = appendErrorCode(err)
				return
			}
			_ = s.replayLocked(kv) // a record we just encoded always parses
			// Fields the v0 record does not carry stay as decided.
			nt := s.mu.txns[t.id]
			nt.lastEpoch, nt.prevProducerID = t.lastEpoch, t.prevProducerID
			if after != nil {
				after(nt)
			}
		}
	})
	if !ok {
		return kerr.NotCoordinator.Code
	}
	return code
}

// appendErrorCode is Kafka's mapping of a failed __transaction_state append.
func appendErrorCode(err error) int16 {
	switch {
	case errors.Is(err, ErrNotLeader):
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrRecordTooLarge):
		return kerr.UnknownServerError.Code
	default:
		return kerr.CoordinatorNotAvailable.Code
	}
}

// loop runs fn on every loaded shard each interval until Close.
func (c *Coordinator) loop(interval time.Duration, fn func(*shard)) {
	defer c.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			shards := make([]*shard, 0, len(c.mu.shards))
			for _, s := range c.mu.shards {
				shards = append(shards, s)
			}
			c.mu.Unlock()
			for _, s := range shards {
				if s.ready() == 0 {
					fn(s)
				}
			}
		}
	}
}

// goTracked runs fn on a goroutine Close joins, unless closed.
func (c *Coordinator) goTracked(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
}
