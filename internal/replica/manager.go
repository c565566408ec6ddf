package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// HighWatermarkCheckpointFile is Kafka's replication-offset-checkpoint: the
// high watermarks of a log directory's partitions, in the format of the
// recovery point checkpoint (storage.WriteCheckpoint).
const HighWatermarkCheckpointFile = "replication-offset-checkpoint"

// Defaults of the replication settings.
const (
	DefaultReplicaLagTimeMax               = 30 * time.Second // replica.lag.time.max.ms
	DefaultHighWatermarkCheckpointInterval = 5 * time.Second  // replica.high.watermark.checkpoint.interval.ms
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Config configures a Manager.
type Config struct {
	NodeID int32
	// DecompressionBudget bounds the memory that validating produced
	// compressed batches holds at once, across all partitions (see
	// record.Budget). Nil: unbounded.
	DecompressionBudget *record.Budget
	Logs                *storage.LogManager
	Logger              *slog.Logger
	Now                 func() time.Time
	// ProducerIDExpirationMs is producer.id.expiration.ms: a producer
	// idle this long is forgotten. Zero means Kafka's default, 24 hours.
	ProducerIDExpirationMs int64
	// ProducerIDExpirationCheckIntervalMs is
	// producer.id.expiration.check.interval.ms, how often a partition
	// looks for expired producers. Zero means 10 minutes.
	ProducerIDExpirationCheckIntervalMs int64
	// ReplicaLagTimeMax is replica.lag.time.max.ms: an ISR follower not
	// caught up with the leader for this long is removed from the ISR.
	// Zero means 30 s. The leader checks every half of it.
	ReplicaLagTimeMax time.Duration
	// AlterPartition sends an ISR change to the controller and returns the
	// partition state it committed; errors are kerr codes such as
	// FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION. Nil: the ISR never
	// changes. It is called from a goroutine the Manager owns, one at a
	// time per partition, with a context that ends on Close.
	AlterPartition func(ctx context.Context, req AlterPartitionRequest) (PartitionState, error)
	// ReplicaEligible reports whether a broker may join an ISR: registered,
	// unfenced and not shutting down (KIP-841). The controller refuses the
	// others with INELIGIBLE_REPLICA, so the leader does not ask. Nil:
	// every broker is eligible.
	ReplicaEligible func(id int32) bool
	// HighWatermarkCheckpointInterval is
	// replica.high.watermark.checkpoint.interval.ms: how often the high
	// watermarks are written to each log directory. Zero means 5 s;
	// negative disables the periodic write (Close still writes).
	HighWatermarkCheckpointInterval time.Duration
}

// Manager holds the partitions this node hosts. A background goroutine,
// stopped by Close, shrinks ISRs and writes the high watermark checkpoints.
type Manager struct {
	cfg Config

	mu struct {
		sync.RWMutex
		partitions map[TopicPartition]*Partition
		// hwCheckpoints caches each log directory's checkpoint as read
		// at the first Ensure there, for the starting high watermarks.
		hwCheckpoints map[string]map[storage.TopicPartition]int64
	}
	// ctx ends on Close; background goroutines (AlterPartition senders)
	// run under it and join wg. bg guards starting them; partitions start
	// them under their own lock, so bg is taken after any other.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bg     struct {
		sync.Mutex
		closed bool
	}
	done chan struct{} // closed when the loop ends
	// hwMu serialises checkpoint writes.
	hwMu sync.Mutex
	// fenced is set while this broker has lost its session with the
	// controller quorum (SetFenced). Partitions read it under their own
	// lock; SetFenced takes each partition's lock after changing it.
	fenced atomic.Bool
	// testMoveStep, set by tests before a move starts, runs before each
	// step of a log directory move (move.go) and may block it; it gets
	// the context that ends on Close.
	testMoveStep func(ctx context.Context)
}

// NewManager returns an empty manager and starts its background loop;
// partitions arrive through Ensure as metadata is published. Call Close to
// stop it.
func NewManager(cfg Config) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ProducerIDExpirationMs <= 0 {
		cfg.ProducerIDExpirationMs = 24 * 60 * 60 * 1000
	}
	if cfg.ProducerIDExpirationCheckIntervalMs <= 0 {
		cfg.ProducerIDExpirationCheckIntervalMs = 10 * 60 * 1000
	}
	if cfg.ReplicaLagTimeMax <= 0 {
		cfg.ReplicaLagTimeMax = DefaultReplicaLagTimeMax
	}
	if cfg.HighWatermarkCheckpointInterval == 0 {
		cfg.HighWatermarkCheckpointInterval = DefaultHighWatermarkCheckpointInterval
	}
	m := &Manager{cfg: cfg, done: make(chan struct{})}
	m.mu.partitions = make(map[TopicPartition]*Partition)
	m.mu.hwCheckpoints = make(map[string]map[storage.TopicPartition]int64)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	go m.run()
	return m
}

// run shrinks ISRs every ReplicaLagTimeMax/2 and checkpoints high
// watermarks every HighWatermarkCheckpointInterval until Close.
func (m *Manager) run() {
	defer close(m.done)
	shrink := time.NewTicker(m.cfg.ReplicaLagTimeMax / 2)
	defer shrink.Stop()
	var checkpoint <-chan time.Time
	if m.cfg.HighWatermarkCheckpointInterval > 0 {
		t := time.NewTicker(m.cfg.HighWatermarkCheckpointInterval)
		defer t.Stop()
		checkpoint = t.C
	}
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-shrink.C:
			for _, p := range m.partitions() {
				p.maybeShrinkISR()
			}
		case <-checkpoint:
			if err := m.CheckpointHighWatermarks(); err != nil {
				m.cfg.Logger.Error("writing high watermark checkpoints", "err", err)
			}
		}
	}
}

// SetFenced fences this node for leadership, or lifts the fence. A fenced
// node leads nothing: produce, DeleteRecords, transaction markers,
// consumer and follower fetches get NOT_LEADER_OR_FOLLOWER, acks=all
// produces waiting for their commit are answered NOT_LEADER_OR_FOLLOWER
// at once, and no ISR change is proposed. The broker fences itself when
// its session with the controller lapses (it cannot know whether the
// quorum has elected other leaders), and lifts the fence once a heartbeat
// shows it has caught up with the metadata log again. The partitions'
// states are kept: on lifting, each leads again only if the metadata
// replayed in between still names it leader.
//
// Once SetFenced(true) returns, no append succeeds until SetFenced(false).
func (m *Manager) SetFenced(fenced bool) {
	if m.fenced.Swap(fenced) == fenced {
		return
	}
	for _, p := range m.partitions() {
		p.mu.Lock()
		p.wakeLocked() // waiters re-check leadership
		p.mu.Unlock()
	}
}

// Fenced reports whether SetFenced fenced this node.
func (m *Manager) Fenced() bool { return m.fenced.Load() }

func (m *Manager) partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.mu.partitions))
	for _, p := range m.mu.partitions {
		out = append(out, p)
	}
	return out
}

// goBackground runs fn in a goroutine that Close waits for; false after
// Close.
func (m *Manager) goBackground(fn func()) bool {
	m.bg.Lock()
	defer m.bg.Unlock()
	if m.bg.closed {
		return false
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		fn()
	}()
	return true
}

// Close stops the background loop and the AlterPartition calls in flight
// and writes the high watermark checkpoints. Call it before closing the
// LogManager.
func (m *Manager) Close() error {
	m.bg.Lock()
	if m.bg.closed {
		m.bg.Unlock()
		return nil
	}
	m.bg.closed = true
	m.bg.Unlock()
	m.cancel()
	<-m.done
	m.wg.Wait()
	return m.CheckpointHighWatermarks()
}

// CheckpointHighWatermarks writes replication-offset-checkpoint in every
// log directory that holds a hosted partition (or held one). Entries read
// at start for partitions not hosted yet are kept.
func (m *Manager) CheckpointHighWatermarks() error {
	m.hwMu.Lock()
	defer m.hwMu.Unlock()
	byDir := map[string]map[storage.TopicPartition]int64{}
	m.mu.RLock()
	for dir, hws := range m.mu.hwCheckpoints {
		byDir[dir] = maps.Clone(hws)
	}
	m.mu.RUnlock()
	for _, p := range m.partitions() {
		dir := filepath.Dir(p.Log().Dir())
		if byDir[dir] == nil {
			byDir[dir] = map[storage.TopicPartition]int64{}
		}
		byDir[dir][storage.TopicPartition{Topic: p.Topic, Partition: p.Index}] = p.Offsets().HighWatermark
	}
	var err error
	for dir, hws := range byDir {
		err = errors.Join(err, storage.WriteCheckpoint(filepath.Join(dir, HighWatermarkCheckpointFile), hws))
	}
	return err
}

// checkpointedHWLocked is the high watermark the log directory's
// checkpoint holds for the partition, 0 when none.
func (m *Manager) checkpointedHWLocked(log *storage.Log, topic string, partition int32) int64 {
	dir := filepath.Dir(log.Dir())
	hws, ok := m.mu.hwCheckpoints[dir]
	if !ok {
		var err error
		hws, err = storage.ReadCheckpoint(filepath.Join(dir, HighWatermarkCheckpointFile))
		if err != nil {
			m.cfg.Logger.Warn("ignoring unreadable high watermark checkpoint", "dir", dir, "err", err)
			hws = map[storage.TopicPartition]int64{}
		}
		m.mu.hwCheckpoints[dir] = hws
	}
	return hws[storage.TopicPartition{Topic: topic, Partition: partition}]
}

// Partition returns a hosted partition.
func (m *Manager) Partition(topic string, partition int32) (*Partition, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.mu.partitions[TopicPartition{topic, partition}]
	return p, ok
}

// Ensure makes the node host a partition in the state the metadata image
// gives it — leader when st.Leader is this node, follower otherwise — with
// the given configuration, opening (or creating) its log. It is idempotent:
// an existing partition takes the new state and configuration.
//
// A state older than the one applied (lower leader epoch, or the same with
// a lower partition epoch) is ignored. An existing log starts with the
// high watermark of the checkpoint, at most its log end offset.
func (m *Manager) Ensure(topic string, topicID [16]byte, partition int32, st PartitionState, cfg PartitionConfig) (*Partition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, _, err := m.ensureLocked(topic, topicID, partition, st, cfg, slog.LevelInfo)
	return p, err
}

// ensureLocked is Ensure with m.mu held; level is that of the log line a
// change of role writes. It returns the role change, if any.
func (m *Manager) ensureLocked(topic string, topicID [16]byte, partition int32, st PartitionState, cfg PartitionConfig, level slog.Level) (*Partition, roleChange, error) {
	tp := TopicPartition{topic, partition}
	if p, ok := m.mu.partitions[tp]; ok {
		p.mu.Lock()
		p.mu.cfg = cfg
		change := p.applyStateLogLocked(st, level)
		// Under the lock, so that a move's swap (move.go) carries it over.
		err := p.Log().SetConfig(cfg.Log)
		if fut := p.mu.future; err == nil && fut != nil {
			err = fut.SetConfig(cfg.Log)
		}
		p.mu.Unlock()
		if err != nil {
			return nil, change, fmt.Errorf("configure log of %s-%d: %w", topic, partition, err)
		}
		return p, change, nil
	}
	log, err := m.cfg.Logs.GetOrCreate(topic, partition, topicID, cfg.Log)
	if err != nil {
		return nil, roleUnchanged, fmt.Errorf("open log for %s-%d: %w", topic, partition, err)
	}
	p := &Partition{Topic: topic, TopicID: topicID, Index: partition, now: m.cfg.Now, mgr: m,
		logger:                  m.cfg.Logger.With("topic", topic, "partition", partition),
		producerExpirationMs:    m.cfg.ProducerIDExpirationMs,
		producerCheckIntervalMs: m.cfg.ProducerIDExpirationCheckIntervalMs}
	p.log.Store(log)
	p.mu.cfg = cfg
	p.mu.appended = make(chan struct{})
	p.setHighWatermarkLocked(min(m.checkpointedHWLocked(log, topic, partition), log.LogEndOffset()))
	if err := p.loadProducerStateLocked(); err != nil {
		return nil, roleUnchanged, fmt.Errorf("rebuild producer state of %s-%d: %w", topic, partition, err)
	}
	change := p.applyStateLogLocked(st, level)
	log.SetCloseHook(p.writeFinalSnapshot)
	m.mu.partitions[tp] = p
	if fut, _, ok := m.cfg.Logs.Future(topic, partition); ok {
		// A move a restart interrupted goes on (Kafka resumes it too).
		p.startMove(fut)
	}
	return p, change, nil
}

// Remove stops hosting a partition and deletes its log (the topic was
// deleted). Fetches waiting on it are woken.
func (m *Manager) Remove(topic string, partition int32) error {
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	p, ok := m.mu.partitions[tp]
	delete(m.mu.partitions, tp)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	p.mu.Lock()
	p.mu.leader = false
	p.mu.followers = nil
	p.mu.future = nil
	p.wakeLocked()
	p.mu.Unlock()
	m.mu.Lock()
	delete(m.mu.hwCheckpoints[filepath.Dir(p.Log().Dir())], storage.TopicPartition{Topic: topic, Partition: partition})
	m.mu.Unlock()
	return m.cfg.Logs.Delete(topic, partition)
}
