package replica

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/samsa-io/samsa/internal/storage"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Config configures a Manager.
type Config struct {
	NodeID int32
	Logs   *storage.LogManager
	Logger *slog.Logger
	Now    func() time.Time
	// ProducerIDExpirationMs is producer.id.expiration.ms: a producer
	// idle this long is forgotten. Zero means Kafka's default, 24 hours.
	ProducerIDExpirationMs int64
	// ProducerIDExpirationCheckIntervalMs is
	// producer.id.expiration.check.interval.ms, how often a partition
	// looks for expired producers. Zero means 10 minutes.
	ProducerIDExpirationCheckIntervalMs int64
}

// Manager holds the partitions this node hosts.
type Manager struct {
	cfg Config

	mu struct {
		sync.RWMutex
		partitions map[TopicPartition]*Partition
	}
}

// NewManager returns an empty manager; partitions arrive through Ensure as
// metadata is published.
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
	m := &Manager{cfg: cfg}
	m.mu.partitions = make(map[TopicPartition]*Partition)
	return m
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
func (m *Manager) Ensure(topic string, topicID [16]byte, partition int32, st PartitionState, cfg PartitionConfig) (*Partition, error) {
	leaderEpoch := st.LeaderEpoch
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.mu.partitions[tp]; ok {
		p.mu.Lock()
		p.mu.cfg = cfg
		p.mu.leaderEpoch = leaderEpoch
		p.mu.Unlock()
		if err := p.log.SetConfig(cfg.Log); err != nil {
			return nil, fmt.Errorf("configure log of %s-%d: %w", topic, partition, err)
		}
		return p, nil
	}
	log, err := m.cfg.Logs.GetOrCreate(topic, partition, topicID, cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("open log for %s-%d: %w", topic, partition, err)
	}
	p := &Partition{Topic: topic, TopicID: topicID, Index: partition, now: m.cfg.Now, log: log,
		logger:                  m.cfg.Logger.With("topic", topic, "partition", partition),
		producerExpirationMs:    m.cfg.ProducerIDExpirationMs,
		producerCheckIntervalMs: m.cfg.ProducerIDExpirationCheckIntervalMs}
	p.mu.cfg = cfg
	p.mu.leaderEpoch = leaderEpoch
	p.mu.highWatermark = log.LogEndOffset()
	p.mu.appended = make(chan struct{})
	if err := p.loadProducerStateLocked(); err != nil {
		return nil, fmt.Errorf("rebuild producer state of %s-%d: %w", topic, partition, err)
	}
	log.SetCloseHook(p.writeFinalSnapshot)
	m.mu.partitions[tp] = p
	return p, nil
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
	close(p.mu.appended)
	p.mu.appended = make(chan struct{})
	p.mu.Unlock()
	return m.cfg.Logs.Delete(topic, partition)
}
