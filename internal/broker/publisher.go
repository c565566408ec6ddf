package broker

import (
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
)

// Publish implements metadata.Publisher: it makes the partitions this node
// hosts match the image — opening logs for new replicas, making each the
// leader or a follower (handed to Config.Fetchers) of its partition,
// applying changed topic and broker configs, and deleting the logs of
// removed topics and of replicas moved away. It runs in the metadata apply
// path, so a request answered after a commit sees its effect; it makes no
// network calls.
func (b *Broker) Publish(d *metadata.Delta, img *metadata.Image) {
	for _, old := range d.DeletedTopics {
		for _, p := range old.Partitions {
			b.cfg.Fetchers.Unfollow(replica.TopicPartition{Topic: old.Name, Partition: p.Partition})
			if err := b.cfg.Replicas.Remove(old.Name, p.Partition); err != nil {
				b.cfg.Logger.Error("delete partition log", "topic", old.Name, "partition", p.Partition, "err", err)
			}
		}
	}
	topics := changedTopics(d, img)
	if b.brokerConfigsChanged(d) {
		b.applyBrokerConfigs(img)
		// Every topic inherits broker defaults, so every hosted partition
		// is resolved again (Kafka's DynamicLogConfig.reconfigure).
		topics = img.Topics()
	}
	eff := b.config()
	var batch []replica.EnsureRequest
	for _, t := range topics {
		pcfg, err := PartitionConfig(eff, img.Configs(metadata.ResourceTopic, t.Name))
		if err != nil {
			// The controller validated these configs; a bad one here means
			// the defaults changed under it. Keep serving on defaults.
			b.cfg.Logger.Error("invalid topic config, using defaults", "topic", t.Name, "err", err)
			pcfg, _ = PartitionConfig(eff, nil)
		}
		for _, p := range t.Partitions {
			if r, ok := b.preparePartition(t, p, pcfg); ok {
				batch = append(batch, r)
			}
		}
	}
	b.ensurePartitions(batch)
	b.publishOffsetsTopic(img)
	b.publishTxnTopic(img)
	b.publishShareStateTopic(d, img)
}

// preparePartition starts applying one partition's image to its local
// replica: a replica no longer assigned here is removed (false); a leader
// stops fetching before it leads. ensurePartitions does the rest.
func (b *Broker) preparePartition(t *metadata.TopicImage, p metadata.PartitionImage, pcfg replica.PartitionConfig) (replica.EnsureRequest, bool) {
	self := b.cfg.NodeID
	tp := replica.TopicPartition{Topic: t.Name, Partition: p.Partition}
	if !slices.Contains(p.Replicas, self) {
		if _, hosted := b.cfg.Replicas.Partition(t.Name, p.Partition); hosted {
			// Reassigned away: the new replicas have the data.
			b.cfg.Fetchers.Unfollow(tp)
			b.cfg.Logger.Info("removing replica moved away", "topic", t.Name, "partition", p.Partition)
			if err := b.cfg.Replicas.Remove(t.Name, p.Partition); err != nil {
				b.cfg.Logger.Error("delete partition log", "topic", t.Name, "partition", p.Partition, "err", err)
			}
		}
		return replica.EnsureRequest{}, false
	}
	if p.Leader < 0 || p.Leader == self {
		b.cfg.Fetchers.Unfollow(tp)
	}
	return replica.EnsureRequest{Topic: t.Name, TopicID: t.ID, Partition: p.Partition, State: partitionState(p), Config: pcfg}, true
}

// ensurePartitions opens the replicas of batch (every partition of a
// publish, under one acquisition of the replica manager's lock) and
// applies their states; then a new leader wakes the followers parked on
// it, and a follower starts fetching.
func (b *Broker) ensurePartitions(batch []replica.EnsureRequest) {
	if len(batch) == 0 {
		return
	}
	self := b.cfg.NodeID
	for i, res := range b.cfg.Replicas.EnsureAll(batch) {
		r := batch[i]
		if res.Err != nil {
			b.cfg.Logger.Error("open partition", "topic", r.Topic, "partition", r.Partition, "err", res.Err)
			continue
		}
		if r.State.Leader == self && !res.LedBefore {
			b.parkedFollowers.kick(r.State.Replicas) // 01_fetch.go
		}
		if r.State.Leader >= 0 && r.State.Leader != self {
			b.cfg.Fetchers.Follow(replica.TopicPartition{Topic: r.Topic, Partition: r.Partition}, r.TopicID, r.State.Leader, r.State.LeaderEpoch)
		}
	}
}

// dynamicState is the broker's view of its dynamic configuration. The
// publisher writes it; handlers read it without locks.
type dynamicState struct {
	// effective is the static config with the dynamic broker configs of
	// the latest image layered on; nil until the first publish.
	effective atomic.Pointer[config.Config]
	// logLevel is the level of the node's logger, when the node made it
	// adjustable (SetLogLevel); BROKER_LOGGER changes need it.
	logLevel atomic.Pointer[slog.LevelVar]
}

// config is the broker's configuration in effect: static plus dynamic.
func (b *Broker) config() *config.Config {
	if c := b.dyn.effective.Load(); c != nil {
		return c
	}
	return b.cfg.Static
}

// SetLogLevel gives the broker the level of the node's logger, so that
// IncrementalAlterConfigs on BROKER_LOGGER can change it at runtime.
func (b *Broker) SetLogLevel(v *slog.LevelVar) { b.dyn.logLevel.Store(v) }

// brokerConfigsChanged reports whether the delta touched the dynamic
// configs of this broker or the cluster defaults.
func (b *Broker) brokerConfigsChanged(d *metadata.Delta) bool {
	if d.Full || b.dyn.effective.Load() == nil {
		return true
	}
	self := config.BrokerResourceName(b.cfg.NodeID)
	for _, r := range d.ChangedConfigs {
		if r.Type == metadata.ResourceBroker && (r.Name == "" || r.Name == self) {
			return true
		}
	}
	return false
}

// applyBrokerConfigs recomputes the effective configuration from img.
func (b *Broker) applyBrokerConfigs(img *metadata.Image) {
	perBroker := img.Configs(metadata.ResourceBroker, config.BrokerResourceName(b.cfg.NodeID))
	eff, err := b.cfg.Static.WithDynamic(perBroker, img.Configs(metadata.ResourceBroker, ""))
	if err != nil {
		b.cfg.Logger.Warn("ignoring invalid dynamic broker configs", "err", err)
	}
	b.dyn.effective.Store(eff)
}

// changedTopics lists the topics of img whose partitions or configs the
// delta touched (all of them for a full delta).
func changedTopics(d *metadata.Delta, img *metadata.Image) []*metadata.TopicImage {
	if d.Full {
		return img.Topics()
	}
	seen := make(map[string]bool)
	var out []*metadata.TopicImage
	add := func(t *metadata.TopicImage, ok bool) {
		if ok && !seen[t.Name] {
			seen[t.Name] = true
			out = append(out, t)
		}
	}
	for _, t := range d.CreatedTopics {
		add(img.Topic(t.Name))
	}
	for id := range d.ChangedPartitions {
		add(img.TopicByID(id))
	}
	for _, r := range d.ChangedConfigs {
		if r.Type == metadata.ResourceTopic {
			add(img.Topic(r.Name))
		}
	}
	return out
}

// PartitionConfig resolves a topic's configuration — its overrides over the
// broker's defaults — into what a partition enforces.
func PartitionConfig(static *config.Config, overrides map[string]string) (replica.PartitionConfig, error) {
	tc, err := static.TopicConfig(overrides)
	if err != nil {
		return replica.PartitionConfig{}, fmt.Errorf("topic config: %w", err)
	}
	var policy storage.CleanupPolicy
	if tc.Delete {
		policy |= storage.CleanupDelete
	}
	if tc.Compact {
		policy |= storage.CleanupCompact
	}
	return replica.PartitionConfig{
		Log: storage.LogConfig{
			SegmentBytes:           tc.SegmentBytes,
			SegmentMs:              time.Duration(tc.SegmentMs) * time.Millisecond,
			SegmentIndexBytes:      tc.SegmentIndexBytes,
			IndexIntervalBytes:     tc.IndexIntervalBytes,
			FlushMessages:          tc.FlushMessages,
			FlushMs:                tc.FlushMs,
			RetentionMs:            tc.RetentionMs,
			RetentionBytes:         tc.RetentionBytes,
			CleanupPolicy:          policy,
			FileDeleteDelayMs:      tc.FileDeleteDelayMs,
			DeleteRetentionMs:      tc.DeleteRetentionMs,
			MinCleanableDirtyRatio: tc.MinCleanableDirtyRatio,
			MinCompactionLagMs:     tc.MinCompactionLagMs,
			MaxCompactionLagMs:     tc.MaxCompactionLagMs,
		},
		MaxMessageBytes:      tc.MaxMessageBytes,
		MinInsyncReplicas:    tc.MinInsyncReplicas,
		LogAppendTime:        tc.MessageTimestampType == "LogAppendTime",
		TimestampBeforeMaxMs: tc.MessageTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  tc.MessageTimestampAfterMaxMs,
	}, nil
}

// partitionState is the replica package's view of a partition image.
func partitionState(p metadata.PartitionImage) replica.PartitionState {
	return replica.PartitionState{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		Replicas: p.Replicas, ISR: p.ISR}
}
