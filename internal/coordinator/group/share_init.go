package group

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the initialization of share partitions by the group
// coordinator, as Kafka 4.4's GroupMetadataManager does it (read from
// its 4.4.0 classes and 4.2 source):
//
//   - When a heartbeat finds a subscribed topic partition the group has no
//     share state for, the coordinator initializes it through the
//     persister (InitializeShareGroupState) before it may be assigned;
//     only initialized partitions are assigned. Kafka marks such topics
//     "initializing" in ShareGroupStatePartitionMetadata, initializes
//     asynchronously and assigns them on a later heartbeat; Samsa does it
//     before deciding the heartbeat, under a lock, so the same partitions
//     are never initialized twice and the first answer already assigns
//     them.
//   - The start offset is -1 (not yet known) for a topic new to the group:
//     the partition leader applies share.auto.offset.reset when it first
//     loads the share partition, that is on the first ShareFetch — not at
//     subscription time. So under "latest" (the default), records produced
//     between subscription and the first fetch are not delivered, in Kafka
//     as in Samsa. For partitions added to a topic the group already has
//     state for, the start offset is 0: every record of a new partition is
//     delivered, whatever share.auto.offset.reset says.
//   - The state epoch is the group epoch.
//
// Alter and DeleteShareGroupOffsets keep the set in step: altered
// partitions count as initialized; deleted topics are initialized again
// (at -1) by the next heartbeat that subscribes to them.

// initShareTopics initializes the share state of the partitions the
// member's heartbeat may be assigned and the group has none for. A
// failure leaves them uninitialized (unassigned); the next heartbeat
// tries again.
func (c *Coordinator) initShareTopics(ctx context.Context, s *shard, req *kmsg.ShareGroupHeartbeatRequest) {
	if c.cfg.SharePersister == nil || req.MemberEpoch == leaveEpoch {
		return
	}
	if len(s.missingShareStateLocking(req)) == 0 {
		return
	}
	c.shareInitMu.Lock() // one initialization at a time, decided afresh
	defer c.shareInitMu.Unlock()
	missing := s.missingShareStateLocking(req)
	if len(missing) == 0 {
		return
	}
	ireq := kmsg.NewPtrInitializeShareGroupStateRequest()
	ireq.GroupID = req.GroupID
	for id, m := range missing {
		it := kmsg.NewInitializeShareGroupStateRequestTopic()
		it.TopicID = id
		for _, p := range m.partitions {
			ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			ip.Partition, ip.StateEpoch, ip.StartOffset = p, m.epoch, m.start
			it.Partitions = append(it.Partitions, ip)
		}
		ireq.Topics = append(ireq.Topics, it)
	}
	// Bounded, so that the heartbeat is answered well within a client's
	// request timeout while the share coordinator moves or loads.
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.cfg.SharePersister.InitializeState(ictx, ireq)
	if err != nil {
		c.cfg.Logger.Warn("initializing share group state failed", "group", req.GroupID, "err", err)
		return
	}
	done := map[[16]byte][]int32{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				done[t.TopicID] = append(done[t.TopicID], p.Partition)
			} else {
				c.cfg.Logger.Warn("initializing share group state failed", "group", req.GroupID, "partition", p.Partition, "code", p.ErrorCode)
			}
		}
	}
	if code := c.addInitialized(ctx, req.GroupID, done); code != 0 {
		c.cfg.Logger.Warn("recording initialized share partitions failed", "group", req.GroupID, "code", code)
	}
}

// missingInit is what to initialize of one topic.
type missingInit struct {
	partitions []int32
	start      int64
	epoch      int32
}

// missingShareStateLocking returns the partitions of the topics the group
// will be subscribed to after req that have no share state yet.
func (s *shard) missingShareStateLocking(req *kmsg.ShareGroupHeartbeatRequest) map[[16]byte]missingInit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unloadedLocked() {
		return nil
	}
	g, code, _ := s.shareGroupLocked(req.GroupID)
	if code != 0 {
		return nil
	}
	subs := map[string]bool{}
	for _, t := range req.SubscribedTopicNames {
		subs[t] = true
	}
	var init initTopics
	var epoch int32
	if g != nil {
		init, epoch = g.initialized, g.epoch
		for _, m := range g.members {
			if m.id == req.MemberID && req.SubscribedTopicNames != nil {
				continue
			}
			for _, t := range m.topics {
				subs[t] = true
			}
		}
	}
	view := s.c.topics()
	out := map[[16]byte]missingInit{}
	for name := range subs {
		info, ok := view.lookup(name)
		if !ok {
			continue
		}
		have, known := init[info.ID]
		m := missingInit{start: -1, epoch: epoch}
		if known {
			m.start = 0
		}
		for p := range info.Partitions {
			if !slices.Contains(have.partitions, p) {
				m.partitions = append(m.partitions, p)
			}
		}
		if len(m.partitions) > 0 {
			out[info.ID] = m
		}
	}
	return out
}

// addInitialized records that the group has share state for the
// partitions of parts.
func (c *Coordinator) addInitialized(ctx context.Context, group string, parts map[[16]byte][]int32) (code int16) {
	if len(parts) == 0 {
		return 0
	}
	s, code := c.shardFor(group)
	if code != 0 {
		return code
	}
	view := c.topics()
	ok := s.p.Write(ctx, func() ([]KV, func(error)) {
		var init initTopics
		if g := s.mu.shares[group]; g != nil {
			init = g.initialized
		}
		merged := maps.Clone(init)
		if merged == nil {
			merged = initTopics{}
		}
		changed := false
		for id, ps := range parts {
			t := merged[id]
			for _, p := range ps {
				if !slices.Contains(t.partitions, p) {
					t.partitions = append(slices.Clone(t.partitions), p)
					changed = true
				}
			}
			slices.Sort(t.partitions)
			if t.name == "" {
				t.name, _ = view.nameOf(id)
			}
			merged[id] = t
		}
		if !changed {
			return nil, nil
		}
		rec := &shareRecord{typ: sgStatePartitionMetadataType, group: group, init: merged}
		return encodeShare([]*shareRecord{rec}), func(err error) {
			if err != nil {
				code = kerr.CoordinatorNotAvailable.Code
				return
			}
			s.applyShareLocked(rec)
		}
	})
	if !ok {
		return kerr.NotCoordinator.Code
	}
	return code
}
