package group

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/samsa-io/samsa/internal/coordinator/share"
)

// Config configures a Coordinator. Zero fields take Kafka's defaults
// (see withDefaults); the Kafka property each field mirrors is named beside it.
type Config struct {
	// NumPartitions is offsets.topic.num.partitions (50). It must match the
	// partition count of __consumer_offsets, or groups land on the wrong broker.
	NumPartitions int32
	// MinSessionTimeout and MaxSessionTimeout bound a member's session timeout:
	// group.min.session.timeout.ms (6 s) and group.max.session.timeout.ms (30 min).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3 s): how long
	// the first rebalance of an empty group waits for more members. Set it
	// negative for no delay (0 means the default).
	InitialRebalanceDelay time.Duration
	// MaxGroupSize is group.max.size (MaxInt32).
	MaxGroupSize int
	// OffsetsRetention is offsets.retention.minutes (7 days).
	OffsetsRetention time.Duration
	// RetentionCheckInterval is offsets.retention.check.interval.ms (10 min).
	RetentionCheckInterval time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096).
	OffsetMetadataMaxBytes int
	// PartitionExists reports whether a topic partition exists; commits to
	// partitions it rejects get UNKNOWN_TOPIC_OR_PARTITION. Nil accepts all.
	PartitionExists func(topic string, partition int32) bool
	// TopicName and TopicID translate topic IDs for OffsetCommit and
	// OffsetFetch v10+. Nil means such requests get UNKNOWN_TOPIC_ID.
	TopicName func(id [16]byte) (string, bool)
	TopicID   func(name string) ([16]byte, bool)
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms (45 s): a
	// KIP-848 member that sends no ConsumerGroupHeartbeat for this long is
	// removed. The coordinator decides it, not the client.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms (5 s),
	// returned to KIP-848 members as the pace of their heartbeats.
	ConsumerHeartbeatInterval time.Duration
	// ConsumerMaxGroupSize is group.consumer.max.size (MaxInt32).
	ConsumerMaxGroupSize int
	// ConsumerAssignors is group.consumer.assignors by name ("uniform",
	// "range"); the first is the default. Empty means both, uniform first.
	ConsumerAssignors []string
	// Share configures KIP-932 share groups (share_group.go).
	Share ShareConfig
	// PerGroup, when set, applies one group's GROUP config overrides
	// (kafka-configs --entity-type groups) to g, which holds the
	// broker-level values above; nil: every group has those.
	PerGroup func(groupID string, g *GroupSettings)
	// SharePersister is the share coordinator, where share groups'
	// offsets live (share_offsets.go); nil answers the share offset APIs
	// COORDINATOR_NOT_AVAILABLE.
	SharePersister share.Persister
	// ShareStateReset tells this node's share partitions that the state
	// of a group's partition was replaced (offsets altered or deleted).
	// HighWatermark is a partition's high watermark, wherever it is led,
	// for the lag DescribeShareGroupOffsets reports (-1 when false).
	ShareStateReset func(group string, topicID [16]byte, partition int32)
	HighWatermark   func(ctx context.Context, topic string, partition int32) (int64, bool)
	// Topics lists the cluster's topics by name, for KIP-848 subscriptions
	// (regexes need the full list). Nil falls back to TopicID and
	// PartitionExists for subscriptions by name, and regexes match nothing.
	Topics func() map[string]TopicInfo
	// Streams configures streams groups (group.streams.*).
	Streams StreamsConfig
	// Now is the clock for record timestamps and offset expiry (time.Now).
	// Timers use the runtime clock, so tests use testing/synctest.
	Now func() time.Time
	// Logger receives state changes worth an operator's attention.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.NumPartitions == 0 {
		c.NumPartitions = 50
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 6 * time.Second
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 30 * time.Minute
	}
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = 3 * time.Second
	} else if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.MaxGroupSize == 0 {
		c.MaxGroupSize = math.MaxInt32
	}
	if c.OffsetsRetention == 0 {
		c.OffsetsRetention = 7 * 24 * time.Hour
	}
	if c.RetentionCheckInterval == 0 {
		c.RetentionCheckInterval = 10 * time.Minute
	}
	if c.OffsetMetadataMaxBytes == 0 {
		c.OffsetMetadataMaxBytes = 4096
	}
	if c.ConsumerSessionTimeout == 0 {
		c.ConsumerSessionTimeout = 45 * time.Second
	}
	if c.ConsumerHeartbeatInterval == 0 {
		c.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if c.ConsumerMaxGroupSize == 0 {
		c.ConsumerMaxGroupSize = math.MaxInt32
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = []string{"uniform", "range"}
	}
	c.Streams = c.Streams.withDefaults()
	c.Share = c.Share.withDefaults()
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first invalid field, naming Kafka's property.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.NumPartitions < 1:
		return fmt.Errorf("invalid value %d for offsets.topic.num.partitions: want at least 1", c.NumPartitions)
	case c.MinSessionTimeout < 0 || c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("invalid group.min.session.timeout.ms %v / group.max.session.timeout.ms %v: want 0 <= min <= max",
			c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.MaxGroupSize < 1:
		return fmt.Errorf("invalid value %d for group.max.size: want at least 1", c.MaxGroupSize)
	case c.OffsetsRetention < 0:
		return fmt.Errorf("invalid value %v for offsets.retention.minutes: want at least 1 minute", c.OffsetsRetention)
	case c.RetentionCheckInterval < 0:
		return fmt.Errorf("invalid value %v for offsets.retention.check.interval.ms: want a positive duration", c.RetentionCheckInterval)
	case c.ConsumerSessionTimeout < 0 || c.ConsumerHeartbeatInterval < 0 || c.ConsumerHeartbeatInterval >= c.ConsumerSessionTimeout:
		return fmt.Errorf("invalid group.consumer.heartbeat.interval.ms %v / group.consumer.session.timeout.ms %v: want 0 < interval < session timeout",
			c.ConsumerHeartbeatInterval, c.ConsumerSessionTimeout)
	case c.ConsumerMaxGroupSize < 1:
		return fmt.Errorf("invalid value %d for group.consumer.max.size: want at least 1", c.ConsumerMaxGroupSize)
	case c.OffsetMetadataMaxBytes < 0:
		return fmt.Errorf("invalid value %d for offset.metadata.max.bytes: want at least 0", c.OffsetMetadataMaxBytes)
	}
	for _, a := range c.ConsumerAssignors {
		if assignors[a] == nil {
			return fmt.Errorf("invalid value %q in group.consumer.assignors: want uniform or range", a)
		}
	}
	return nil
}

// partitionFor places a group as Kafka does (see coordinator.PartitionFor).
func partitionFor(groupID string, n int32) int32 {
	return coordinator.PartitionFor(groupID, n)
}

// GroupSettings are the settings a group may override with GROUP configs:
// the session timeouts, heartbeat intervals and streams assignment knobs.
type GroupSettings struct {
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	Share                                             ShareConfig
	Streams                                           StreamsConfig
}

// settings returns groupID's settings: the broker-level values with the
// group's overrides applied.
func (c *Coordinator) settings(groupID string) GroupSettings {
	g := GroupSettings{
		ConsumerSessionTimeout:    c.cfg.ConsumerSessionTimeout,
		ConsumerHeartbeatInterval: c.cfg.ConsumerHeartbeatInterval,
		Share:                     c.cfg.Share,
		Streams:                   c.cfg.Streams,
	}
	if c.cfg.PerGroup != nil {
		c.cfg.PerGroup(groupID, &g)
	}
	return g
}
