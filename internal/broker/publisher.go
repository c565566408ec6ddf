package broker

import (
	"fmt"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
)

// Publish implements metadata.Publisher: it makes the partitions this node
// leads match the image — opening logs for new ones, applying changed
// topic configs, and deleting the logs of removed topics. It runs in the
// metadata apply path, so a request answered after a commit sees its effect.
func (b *Broker) Publish(d *metadata.Delta, img *metadata.Image) {
	for _, old := range d.DeletedTopics {
		for _, p := range old.Partitions {
			if err := b.cfg.Replicas.Remove(old.Name, p.Partition); err != nil {
				b.cfg.Logger.Error("delete partition log", "topic", old.Name, "partition", p.Partition, "err", err)
			}
		}
	}
	for _, t := range changedTopics(d, img) {
		pcfg, err := PartitionConfig(b.cfg.Static, img.Configs(metadata.ResourceTopic, t.Name))
		if err != nil {
			// The controller validated these configs; a bad one here means
			// the defaults changed under it. Keep serving on defaults.
			b.cfg.Logger.Error("invalid topic config, using defaults", "topic", t.Name, "err", err)
			pcfg, _ = PartitionConfig(b.cfg.Static, nil)
		}
		for _, p := range t.Partitions {
			if p.Leader != b.cfg.NodeID {
				continue
			}
			if _, err := b.cfg.Replicas.Ensure(t.Name, t.ID, p.Partition, p.LeaderEpoch, pcfg); err != nil {
				b.cfg.Logger.Error("open partition", "topic", t.Name, "partition", p.Partition, "err", err)
			}
		}
	}
	b.publishOffsetsTopic(img)
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
	return replica.PartitionConfig{
		Log: storage.LogConfig{
			SegmentBytes:       tc.SegmentBytes,
			SegmentMs:          time.Duration(tc.SegmentMs) * time.Millisecond,
			SegmentIndexBytes:  tc.SegmentIndexBytes,
			IndexIntervalBytes: tc.IndexIntervalBytes,
			FlushMessages:      tc.FlushMessages,
			FlushMs:            tc.FlushMs,
			RetentionMs:        tc.RetentionMs,
			RetentionBytes:     tc.RetentionBytes,
		},
		MaxMessageBytes:      tc.MaxMessageBytes,
		LogAppendTime:        tc.MessageTimestampType == "LogAppendTime",
		TimestampBeforeMaxMs: tc.MessageTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  tc.MessageTimestampAfterMaxMs,
	}, nil
}
