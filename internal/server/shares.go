package server

import (
	"time"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/coordinator/share"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/sharepartition"
)

// shareGroupConfig gives the group coordinator the share persister and
// creates the broker's share-partition manager (s.shareParts), when there
// is a persister; the broker is created later and found at each call.
func (s *Server) shareGroupConfig(gcfg *group.Config) {
	p := s.SharePersister()
	if p == nil {
		return
	}
	s.shareParts = s.newShareParts(p)
	gcfg.SharePersister = p
	gcfg.ShareStateReset = s.shareParts.Forget
	gcfg.HighWatermark = func(topic string, partition int32) (int64, bool) {
		rp, err := s.broker.LeaderPartition(topic, partition)
		if err != nil {
			return 0, false
		}
		return rp.Offsets().HighWatermark, true
	}
}

func (s *Server) newShareParts(p share.Persister) *sharepartition.Manager {
	cfg := s.cfg
	ms := func(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
	return sharepartition.New(sharepartition.Config{
		Persister: p,
		// s.broker is built with the manager: look it up at each call.
		Partition: func(topic string, partition int32) (*replica.Partition, error) {
			return s.broker.LeaderPartition(topic, partition)
		},
		// A group's share.* configs (GROUP config resources) over the
		// broker's group.share.* defaults.
		Group: func(group string) sharepartition.GroupConfig {
			g := cfg.ShareGroupConfig(s.loader.Image().Configs(metadata.ResourceGroup, group))
			return sharepartition.GroupConfig{
				LockDuration:       ms(g.RecordLockDurationMs),
				DeliveryCountLimit: int16(g.DeliveryCountLimit),
				ResetEarliest:      g.AutoOffsetReset == "earliest",
				ReadCommitted:      g.IsolationLevel == "read_committed",
			}
		},
		MaxRecordLocks: int(cfg.GroupSharePartitionMaxRecordLocks),
		MaxSessions:    int(cfg.GroupShareMaxShareSessions),
		Logger:         s.logger,
	})
}
