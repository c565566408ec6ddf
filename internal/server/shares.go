package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/config"
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
	gcfg.HighWatermark = s.highWatermark
}

// highWatermark is a partition's high watermark, for the lag of
// DescribeShareGroupOffsets: read here when this node leads the
// partition, otherwise asked of its leader with a ListOffsets for the
// latest offset, as Kafka's group coordinator does (its
// PartitionMetadataClient). false when the leader is unknown or does not
// answer.
func (s *Server) highWatermark(ctx context.Context, topic string, partition int32) (int64, bool) {
	if rp, err := s.broker.LeaderPartition(topic, partition); err == nil {
		return rp.Offsets().HighWatermark, true
	}
	img := s.loader.Image()
	t, ok := img.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return 0, false
	}
	leader := t.Partitions[partition].Leader
	br, ok := img.Broker(leader)
	if !ok || br.Fenced || leader == s.cfg.NodeID {
		return 0, false
	}
	listener := s.cfg.InterBrokerListenerName
	if listener == "" {
		listener = "PLAINTEXT"
	}
	var addr string
	for _, ep := range br.Endpoints {
		if ep.Name == listener {
			addr = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		}
	}
	if addr == "" {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := s.dial.interBroker.dial(ctx, addr, fmt.Sprintf("samsa-share-lag-%d", s.cfg.NodeID))
	if err != nil {
		return 0, false
	}
	defer conn.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := conn.Request(ctx, req)
	if err != nil {
		return 0, false
	}
	for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			if t.Topic == topic && p.Partition == partition && p.ErrorCode == 0 {
				return p.Offset, true
			}
		}
	}
	return 0, false
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
			g := cfg.GroupConfig(s.loader.Image().Configs(metadata.ResourceGroup, group))
			gc := sharepartition.GroupConfig{
				LockDuration:       ms(g.ShareRecordLockDurationMs),
				DeliveryCountLimit: int16(g.ShareDeliveryCountLimit),
				ResetEarliest:      g.ShareAutoOffsetReset == "earliest",
				ReadCommitted:      g.ShareIsolationLevel == "read_committed",
			}
			if d, ok := config.ParseShareResetDuration(g.ShareAutoOffsetReset); ok {
				gc.ResetOffset = func(rp *replica.Partition) int64 { return resetByDuration(rp, d, gc.ReadCommitted) }
			}
			return gc
		},
		MaxRecordLocks: int(cfg.GroupSharePartitionMaxRecordLocks),
		MaxSessions:    int(cfg.GroupShareMaxShareSessions),
		Logger:         s.logger,
	})
}

// resetByDuration is where a share partition with share.auto.offset.reset
// by_duration:d starts: the first record no older than d, else (no such
// record, or the log cannot be read) the end of what may be delivered.
func resetByDuration(rp *replica.Partition, d time.Duration, readCommitted bool) int64 {
	snap := rp.Offsets()
	end := snap.HighWatermark
	if readCommitted {
		end = snap.LastStableOffset
	}
	off, found, err := broker.OffsetForTimestamp(rp, time.Now().Add(-d).UnixMilli(), end)
	if err != nil || !found {
		return end
	}
	return off
}
