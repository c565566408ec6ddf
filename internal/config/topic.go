package config

import (
	"errors"
	"fmt"
	"sort"
)

// TopicKey is a topic-level key (Kafka's LogConfig) and the broker key whose
// value is its default on this broker (Kafka's ServerTopicConfigSynonyms).
type TopicKey struct {
	Key
	BrokerKey string // "" when no broker key supplies the default
}

func tk(broker string, key *Key) *TopicKey {
	key.Dynamic = ClusterWide // topic configs can always be altered
	return &TopicKey{Key: *key, BrokerKey: broker}
}

// topicKeyList is Kafka 4's LogConfig. message.format.version,
// message.downconversion.enable and message.timestamp.difference.max.ms were
// removed in Kafka 4.0 and are unknown here too.
var topicKeyList = []*TopicKey{
	tk("log.cleanup.policy", k("cleanup.policy", List, "delete", listOf{"compact", "delete"}, Medium, 0, "delete removes old segments, compact keeps the latest record per key; both may be given.")),
	tk("compression.type", k("compression.type", String, "producer", compressionTypes, Medium, 0, "Compression of stored batches; producer keeps what the producer sent.")),
	tk("compression.gzip.level", k("compression.gzip.level", Int, "-1", gzipLevel{}, Medium, 0, "Level used when compression.type is gzip.")),
	tk("compression.lz4.level", k("compression.lz4.level", Int, "9", between(1, 17), Medium, 0, "Level used when compression.type is lz4.")),
	tk("compression.zstd.level", k("compression.zstd.level", Int, "3", between(-131072, 22), Medium, 0, "Level used when compression.type is zstd.")),
	tk("log.cleaner.delete.retention.ms", k("delete.retention.ms", Long, "86400000", atLeast(0), Medium, 0, "Time to keep tombstones in a compacted topic.")),
	tk("log.segment.delete.delay.ms", k("file.delete.delay.ms", Long, "60000", atLeast(0), Medium, 0, "Delay before a deleted segment's files are removed.")),
	tk("log.flush.interval.messages", k("flush.messages", Long, maxLong, atLeast(1), Medium, 0, "Records appended before the partition is fsynced.")),
	tk("log.flush.interval.ms", k("flush.ms", Long, maxLong, atLeast(0), Medium, 0, "Longest a record stays unflushed.")),
	tk("", k("follower.replication.throttled.replicas", List, "", nil, Medium, 0, "Replicas throttled on the follower side, as partition:broker pairs or *.")),
	tk("log.index.interval.bytes", k("index.interval.bytes", Int, "4096", atLeast(0), Medium, 0, "Bytes of log between offset index entries.")),
	tk("", k("leader.replication.throttled.replicas", List, "", nil, Medium, 0, "Replicas throttled on the leader side, as partition:broker pairs or *.")),
	tk("log.local.retention.bytes", k("local.retention.bytes", Long, "-2", atLeast(-2), Medium, 0, "Local size limit with tiered storage; -2 means retention.bytes.")),
	tk("log.local.retention.ms", k("local.retention.ms", Long, "-2", atLeast(-2), Medium, 0, "Local retention with tiered storage; -2 means retention.ms.")),
	tk("log.cleaner.max.compaction.lag.ms", k("max.compaction.lag.ms", Long, maxLong, atLeast(1), Medium, 0, "Greatest age of a record before it must be eligible for compaction.")),
	tk("message.max.bytes", k("max.message.bytes", Int, "1048588", atLeast(0), Medium, 0, "Largest record batch accepted, after compression.")),
	tk("log.message.timestamp.after.max.ms", k("message.timestamp.after.max.ms", Long, "3600000", atLeast(0), Medium, 0, "How far in the future a CreateTime timestamp may be.")),
	tk("log.message.timestamp.before.max.ms", k("message.timestamp.before.max.ms", Long, maxLong, atLeast(0), Medium, 0, "How far in the past a CreateTime timestamp may be.")),
	tk("log.message.timestamp.type", k("message.timestamp.type", String, "CreateTime", oneOf{"CreateTime", "LogAppendTime"}, Medium, 0, "Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime).")),
	tk("log.cleaner.min.cleanable.ratio", k("min.cleanable.dirty.ratio", Double, "0.5", between(0, 1), Medium, 0, "Least dirty share of the log before it is compacted.")),
	tk("log.cleaner.min.compaction.lag.ms", k("min.compaction.lag.ms", Long, "0", atLeast(0), Medium, 0, "Least age of a record before it may be compacted.")),
	tk("min.insync.replicas", k("min.insync.replicas", Int, "1", atLeast(1), Medium, 0, "Fewest in-sync replicas that must have a write before an acks=all produce succeeds.")),
	tk("log.preallocate", k("preallocate", Boolean, "false", nil, Medium, 0, "Preallocate segment files at full size.")),
	tk("", k("remote.storage.enable", Boolean, "false", nil, Medium, 0, "Tier this topic's old segments to remote storage.")),
	tk("", k("remote.log.copy.disable", Boolean, "false", nil, Medium, 0, "Stop copying segments to remote storage.")),
	tk("", k("remote.log.delete.on.disable", Boolean, "false", nil, Medium, 0, "Delete remote data when tiering is turned off.")),
	tk("log.retention.bytes", k("retention.bytes", Long, "-1", nil, Medium, 0, "Size a partition may reach before old segments are deleted; -1 means no limit.")),
	tk("log.retention.ms", k("retention.ms", Long, "604800000", atLeast(-1), Medium, 0, "Time to keep a segment before deleting it; -1 means forever.")),
	tk("log.segment.bytes", k("segment.bytes", Int, "1073741824", atLeast(1024*1024), Medium, 0, "Size at which a segment is rolled.")),
	tk("log.index.size.max.bytes", k("segment.index.bytes", Int, "10485760", atLeast(4), Medium, 0, "Maximum size of a segment's offset index.")),
	tk("log.roll.jitter.ms", k("segment.jitter.ms", Long, "0", atLeast(0), Medium, 0, "Most random jitter subtracted from segment.ms.")),
	tk("log.roll.ms", k("segment.ms", Long, "604800000", atLeast(1), Medium, 0, "Age at which a segment is rolled even if not full.")),
	tk("unclean.leader.election.enable", k("unclean.leader.election.enable", Boolean, "false", nil, Medium, 0, "Allow an out-of-sync replica to become leader, at the risk of losing data.")),
}

var topicKeys = func() map[string]*TopicKey {
	m := make(map[string]*TopicKey, len(topicKeyList))
	for _, key := range topicKeyList {
		if b := key.BrokerKey; b != "" && brokerKeys[b] == nil {
			panic("config: topic key " + key.Name + " defaults from unknown broker key " + b)
		}
		m[key.Name] = key
	}
	return m
}()

// LookupTopicKey returns the definition of a topic key.
func LookupTopicKey(name string) (*TopicKey, bool) { key, ok := topicKeys[name]; return key, ok }

// TopicKeys returns every topic key, sorted by name.
func TopicKeys() []*TopicKey {
	out := append([]*TopicKey(nil), topicKeyList...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ErrUnknownTopicConfig is wrapped by errors for topic keys that do not exist.
var ErrUnknownTopicConfig = errors.New("unknown topic config")

// ValidateTopicConfig checks one topic-level setting, as CreateTopics and
// AlterConfigs must before accepting it.
func ValidateTopicConfig(name, value string) error {
	_, err := parseTopic(name, value)
	return err
}

func parseTopic(name, value string) (any, error) {
	key, ok := topicKeys[name]
	if !ok {
		return nil, fmt.Errorf("%w %s", ErrUnknownTopicConfig, name)
	}
	return key.parse(value)
}

// TopicConfig is the effective configuration of one topic: its overrides on
// top of this broker's defaults. Field types follow the matching Config
// fields. Durations are milliseconds.
type TopicConfig struct {
	CleanupPolicy []string // subset of delete, compact
	Compact       bool     // CleanupPolicy contains compact
	Delete        bool     // CleanupPolicy contains delete

	CompressionType string // uncompressed, zstd, lz4, snappy, gzip or producer
	GzipLevel       int32
	LZ4Level        int32
	ZstdLevel       int32

	SegmentBytes       int64
	SegmentMs          int64
	SegmentJitterMs    int64
	SegmentIndexBytes  int
	IndexIntervalBytes int
	Preallocate        bool
	FileDeleteDelayMs  int64

	FlushMessages int64
	FlushMs       int64

	RetentionMs    int64 // -1: forever
	RetentionBytes int64 // -1: no limit

	DeleteRetentionMs      int64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	MinCleanableDirtyRatio float64

	MaxMessageBytes              int32
	MessageTimestampType         string // CreateTime or LogAppendTime
	MessageTimestampBeforeMaxMs  int64
	MessageTimestampAfterMaxMs   int64
	MinInsyncReplicas            int
	UncleanLeaderElectionEnable  bool
	RemoteStorageEnable          bool
	LocalRetentionMs             int64
	LocalRetentionBytes          int64
	LeaderReplicationThrottled   []string
	FollowerReplicationThrottled []string
}

// TopicConfig returns the effective configuration of a topic with the given
// overrides. Every override is validated; like Kafka's LogConfig it also
// rejects min.compaction.lag.ms greater than max.compaction.lag.ms.
func (c *Config) TopicConfig(overrides map[string]string) (TopicConfig, error) {
	v := make(map[string]any, len(topicKeyList))
	var errs []error
	for _, key := range topicKeyList {
		v[key.Name] = c.topicDefault(key)
	}
	for _, name := range sortedNames(overrides) {
		x, err := parseTopic(name, overrides[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		v[name] = x
	}
	if err := errors.Join(errs...); err != nil {
		return TopicConfig{}, err
	}
	if minLag, maxLag := v["min.compaction.lag.ms"].(int64), v["max.compaction.lag.ms"].(int64); minLag > maxLag {
		return TopicConfig{}, fmt.Errorf("conflicting topic configs: min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag)
	}
	policy := v["cleanup.policy"].([]string)
	return TopicConfig{
		CleanupPolicy:                policy,
		Compact:                      contains(policy, "compact"),
		Delete:                       contains(policy, "delete"),
		CompressionType:              v["compression.type"].(string),
		GzipLevel:                    v["compression.gzip.level"].(int32),
		LZ4Level:                     v["compression.lz4.level"].(int32),
		ZstdLevel:                    v["compression.zstd.level"].(int32),
		SegmentBytes:                 int64(v["segment.bytes"].(int32)),
		SegmentMs:                    v["segment.ms"].(int64),
		SegmentJitterMs:              v["segment.jitter.ms"].(int64),
		SegmentIndexBytes:            int(v["segment.index.bytes"].(int32)),
		IndexIntervalBytes:           int(v["index.interval.bytes"].(int32)),
		Preallocate:                  v["preallocate"].(bool),
		FileDeleteDelayMs:            v["file.delete.delay.ms"].(int64),
		FlushMessages:                v["flush.messages"].(int64),
		FlushMs:                      v["flush.ms"].(int64),
		RetentionMs:                  v["retention.ms"].(int64),
		RetentionBytes:               v["retention.bytes"].(int64),
		DeleteRetentionMs:            v["delete.retention.ms"].(int64),
		MinCompactionLagMs:           v["min.compaction.lag.ms"].(int64),
		MaxCompactionLagMs:           v["max.compaction.lag.ms"].(int64),
		MinCleanableDirtyRatio:       v["min.cleanable.dirty.ratio"].(float64),
		MaxMessageBytes:              v["max.message.bytes"].(int32),
		MessageTimestampType:         v["message.timestamp.type"].(string),
		MessageTimestampBeforeMaxMs:  v["message.timestamp.before.max.ms"].(int64),
		MessageTimestampAfterMaxMs:   v["message.timestamp.after.max.ms"].(int64),
		MinInsyncReplicas:            int(v["min.insync.replicas"].(int32)),
		UncleanLeaderElectionEnable:  v["unclean.leader.election.enable"].(bool),
		RemoteStorageEnable:          v["remote.storage.enable"].(bool),
		LocalRetentionMs:             v["local.retention.ms"].(int64),
		LocalRetentionBytes:          v["local.retention.bytes"].(int64),
		LeaderReplicationThrottled:   v["leader.replication.throttled.replicas"].([]string),
		FollowerReplicationThrottled: v["follower.replication.throttled.replicas"].([]string),
	}, nil
}

// topicDefault is the value a topic without an override gets on this broker:
// the broker key's effective value (after ms/minutes/hours precedence), or
// Kafka's LogConfig default when no broker key supplies one.
func (c *Config) topicDefault(key *TopicKey) any {
	switch key.Name {
	case "retention.ms":
		return c.LogRetentionMs
	case "segment.ms":
		return c.LogRollMs
	case "segment.jitter.ms":
		return c.LogRollJitterMs
	case "flush.ms":
		return c.LogFlushIntervalMs
	}
	if key.BrokerKey != "" {
		if v, ok := c.values[key.BrokerKey]; ok {
			return v
		}
	}
	v, err := key.parse(key.Default)
	if err != nil {
		panic("config: bad default for " + key.Name + ": " + err.Error())
	}
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
