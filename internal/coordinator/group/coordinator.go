package group

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// PartitionLog is one partition of __consumer_offsets, provided by the broker.
type PartitionLog interface {
	// Append writes kvs as one batch and returns once committed. An error
	// means nothing was written as far as the caller knows.
	Append(ctx context.Context, kvs []KV) error
	// AppendTransactional writes kvs as one transactional batch of
	// producerID at epoch (TxnOffsetCommit), checked against the
	// partition's producer state like any transactional produce. A wrapped
	// ErrProducerFenced means the epoch is stale.
	AppendTransactional(ctx context.Context, producerID int64, epoch int16, kvs []KV) error
	// Replay calls fn for every record from the log start to the current end,
	// in order, including transaction markers (see KV's Control).
	Replay(fn func(kv KV) error) error
}

// Errors a PartitionLog may wrap so handlers answer with the code Kafka uses
// for the same storage failure.
var (
	// ErrNotLeader: this broker lost leadership of the partition (NOT_COORDINATOR).
	ErrNotLeader = errors.New("not the leader of the __consumer_offsets partition")
	// ErrRecordTooLarge: the batch exceeds the topic's size limits.
	ErrRecordTooLarge = errors.New("record batch too large for __consumer_offsets")
	// ErrProducerFenced: a transactional append's epoch is older than the
	// producer's (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH before TxnOffsetCommit v3).
	ErrProducerFenced = errors.New("producer epoch fenced on __consumer_offsets")
)

// Coordinator is the classic group coordinator of one broker.
type Coordinator struct {
	cfg Config

	mu struct {
		sync.Mutex
		shards map[int32]*shard
		closed bool
	}
	// wg joins every goroutine and timer callback the coordinator starts.
	wg   sync.WaitGroup
	stop chan struct{}
}

// shard is one loaded partition of __consumer_offsets and the groups on it.
type shard struct {
	c         *Coordinator
	partition int32
	log       PartitionLog
	loaded    chan struct{} // closed when replay finished
	ctx       context.Context
	cancel    context.CancelFunc // ends appends of an unloaded shard

	// writeMu serializes decide/append/apply so memory follows log order.
	// Lock order: writeMu before mu.
	writeMu sync.Mutex
	mu      struct {
		sync.Mutex
		groups map[string]*group
		// pending holds transactional offsets until their marker:
		// producer id -> group -> partition -> offset.
		pending  map[int64]map[string]map[tp]offsetEntry
		seq      int64 // records replayed, for offsetEntry.seq
		unloaded bool
		loadErr  error
	}
}

// New returns a coordinator with no loaded partitions and starts its offset
// expiry task.
func New(cfg Config) *Coordinator {
	c := &Coordinator{cfg: cfg.withDefaults(), stop: make(chan struct{})}
	c.mu.shards = map[int32]*shard{}
	c.wg.Add(1)
	go c.expireLoop()
	return c
}

// PartitionFor returns the __consumer_offsets partition that owns groupID.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return partitionFor(groupID, c.cfg.NumPartitions)
}

// Load makes this coordinator the owner of partition: it replays log in the
// background; requests for the partition's groups get
// COORDINATOR_LOAD_IN_PROGRESS until the replay ends. Loading an already
// loaded partition replaces the old state.
func (c *Coordinator) Load(partition int32, log PartitionLog) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &shard{c: c, partition: partition, log: log, loaded: make(chan struct{}), ctx: ctx, cancel: cancel}
	s.mu.groups = map[string]*group{}
	s.mu.pending = map[int64]map[string]map[tp]offsetEntry{}
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

// Unload drops the partition's state: pending JoinGroup and SyncGroup calls
// are answered NOT_COORDINATOR and its timers stop.
func (c *Coordinator) Unload(partition int32) {
	c.mu.Lock()
	s := c.mu.shards[partition]
	delete(c.mu.shards, partition)
	c.mu.Unlock()
	if s != nil {
		s.unload()
	}
}

// Close unloads every partition, stops timers and background work and waits
// for them.
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

// enter registers a callback or goroutine with wg unless the coordinator is
// closed; the caller must call c.wg.Done when enter returns true.
func (c *Coordinator) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// afterFunc runs fn after d on a tracked goroutine.
func (s *shard) afterFunc(d time.Duration, fn func()) *time.Timer {
	return time.AfterFunc(d, func() {
		if !s.c.enter() {
			return
		}
		defer s.c.wg.Done()
		fn()
	})
}

// goTracked runs fn on a tracked goroutine (used to persist from timer
// callbacks, which hold mu and so cannot take writeMu).
func (s *shard) goTracked(fn func()) {
	if !s.c.enter() {
		return
	}
	go func() {
		defer s.c.wg.Done()
		fn()
	}()
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
		return s.replayLocked(kv, true)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !errors.Is(err, errUnloaded) {
		// Serving partial state would hand out wrong offsets; stay unavailable.
		s.mu.loadErr = fmt.Errorf("replaying __consumer_offsets-%d: %w", s.partition, err)
		s.c.cfg.Logger.Error("group coordinator load failed", "partition", s.partition, "err", err)
	}
	if !s.mu.unloaded && s.mu.loadErr == nil {
		for _, g := range s.mu.groups {
			s.finishLoadLocked(g)
		}
		s.c.cfg.Logger.Info("loaded group coordinator partition", "partition", s.partition,
			"records", n, "groups", len(s.mu.groups), "elapsed", time.Since(start))
	}
	close(s.loaded)
}

var errUnloaded = errors.New("partition unloaded")

// finishLoadLocked gives every replayed member a fresh session so that
// consumers that were alive before the move can heartbeat back in.
func (s *shard) finishLoadLocked(g *group) {
	if g.cg != nil {
		s.finishConsumerLoadLocked(g)
		return
	}
	for _, m := range g.members {
		s.scheduleSessionLocked(g, m)
	}
	g.updateSubscriptions()
}

func (s *shard) unload() {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.unloaded {
		return
	}
	s.mu.unloaded = true
	for _, g := range s.mu.groups {
		s.dropGroupLocked(g, kerr.NotCoordinator.Code)
	}
	s.mu.groups = nil
}

// dropGroupLocked stops g's timers and answers its waiters with code.
func (s *shard) dropGroupLocked(g *group, code int16) {
	if g.cg != nil {
		g.cg.stopAllTimers()
	}
	for _, m := range g.members {
		stopTimer(m.sessionTimer)
		m.timerSeq++
		s.answerJoinLocked(m, joinError(code, m.id))
		s.answerSyncLocked(m, &syncResult{code: code})
	}
	for _, t := range g.pending {
		stopTimer(t)
	}
	stopTimer(g.rebalanceTimer)
	stopTimer(g.syncTimer)
	g.rebalanceSeq++
	g.state = stateDead
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// shardFor finds the loaded shard of groupID, or the error code to answer:
// NOT_COORDINATOR if the partition is not ours, COORDINATOR_LOAD_IN_PROGRESS
// while it replays.
func (c *Coordinator) shardFor(groupID string) (*shard, int16) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID.Code
	}
	c.mu.Lock()
	s := c.mu.shards[c.PartitionFor(groupID)]
	c.mu.Unlock()
	if s == nil {
		return nil, kerr.NotCoordinator.Code
	}
	select {
	case <-s.loaded:
	default:
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.unloaded {
		return nil, kerr.NotCoordinator.Code
	}
	if s.mu.loadErr != nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	return s, 0
}

// write is the one path by which handlers persist: decide runs under mu and
// returns records plus an apply step; the records are appended without mu
// held; apply then runs under mu with the append's outcome (nil if there was
// nothing to write). writeMu spans all three so apply order is log order.
//
// write reports false, having run nothing, if the shard was unloaded.
func (s *shard) write(ctx context.Context, decide func() ([]KV, func(err error))) bool {
	return s.writeWith(ctx, s.log.Append, decide)
}

// writeWith is write appending through appendFn (a transactional append).
func (s *shard) writeWith(ctx context.Context, appendFn func(context.Context, []KV) error, decide func() ([]KV, func(err error))) bool {
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
		// Appends outlive neither the request nor the shard's leadership.
		actx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(s.ctx, cancel)
		err = appendFn(actx, kvs)
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

// appendErrorCode maps a failed append to Kafka's answer for group writes.
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

// newMemberID is Kafka's clientId + "-" + random UUID.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

type clientInfoKey struct{}

type clientInfo struct{ id, host string }

// WithClient returns ctx carrying the request's client id and client host
// (e.g. "/127.0.0.1"), which JoinGroup stores for DescribeGroups.
func WithClient(ctx context.Context, clientID, clientHost string) context.Context {
	return context.WithValue(ctx, clientInfoKey{}, clientInfo{clientID, clientHost})
}

func clientFrom(ctx context.Context) clientInfo {
	ci, _ := ctx.Value(clientInfoKey{}).(clientInfo)
	return ci
}
