package group

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// commitErrorCode maps a failed offset append to Kafka's answer.
func commitErrorCode(err error) int16 {
	if errors.Is(err, coordinator.ErrRecordTooLarge) {
		return kerr.InvalidCommitOffsetSize.Code
	}
	return coordinator.AppendErrorCode(err)
}

// OffsetCommit serves OffsetCommit v0-v10. A commit with generation -1 and
// no member id is a simple (standalone) commit, allowed while the group has
// no members; otherwise the member and generation must be current.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	r := kmsg.NewPtrOffsetCommitResponse()
	codes := newCodeGrid(len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) })
	names := c.commitTopicNames(len(req.Topics), req.Version >= 10, func(i int) (string, [16]byte) {
		return req.Topics[i].Topic, req.Topics[i].TopicID
	})
	s, code := c.shardFor(req.Group)
	if code != 0 {
		codes.setAll(code)
	} else if !s.p.Write(ctx, func() ([]KV, func(error)) { return s.decideCommitLocked(req, names, codes) }) {
		codes.setAll(kerr.NotCoordinator.Code)
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

func (s *shard) decideCommitLocked(req *kmsg.OffsetCommitRequest, names []string, codes codeGrid) ([]KV, func(error)) {
	setAll := func(code int16) ([]KV, func(error)) {
		codes.setAll(code)
		return nil, nil
	}
	generation, memberID := req.Generation, req.MemberID
	if req.Version == 0 {
		generation, memberID = -1, "" // v0 has neither field
	}
	instanceID := ""
	if req.InstanceID != nil {
		instanceID = *req.InstanceID
	}
	g := s.mu.groups[req.Group]
	var created bool
	if g == nil {
		if generation >= 0 {
			// Kafka: a generation for a group it does not know is stale.
			return setAll(kerr.IllegalGeneration.Code)
		}
		g, created = newGroup(req.Group, s.c.cfg.Now()), true
	}
	if code := g.validateCommit(generation, memberID, instanceID, req.Version); code != 0 {
		return setAll(code)
	}

	now := s.c.cfg.Now()
	expireMs := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis >= 0 {
		expireMs = now.UnixMilli() + req.RetentionTimeMillis
	}
	var kvs []KV
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			switch {
			case names[i] == "":
				codes[i][j] = kerr.UnknownTopicID.Code
			case len(md) > s.c.cfg.OffsetMetadataMaxBytes:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			case s.c.cfg.PartitionExists != nil && !s.c.cfg.PartitionExists(names[i], p.Partition):
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			default:
				e := offsetEntry{offset: p.Offset, leaderEpoch: -1, metadata: md, commitMs: now.UnixMilli(), expireMs: expireMs}
				if req.Version >= 6 {
					e.leaderEpoch = p.LeaderEpoch
				}
				if req.Version == 1 && p.Timestamp >= 0 {
					// v1 carried the commit time; expiry is from it.
					e.commitMs = p.Timestamp
					e.expireMs = p.Timestamp + s.c.cfg.OffsetsRetention.Milliseconds()
				}
				kvs = append(kvs, offsetRecord(req.Group, tp{names[i], p.Partition}, e))
			}
		}
	}
	if m := g.members[memberID]; m != nil && g.state == stateStable {
		// A commit from a live member proves it is alive (Kafka counts it as
		// a heartbeat).
		s.scheduleSessionLocked(g, m)
	}
	if len(kvs) == 0 {
		return nil, nil
	}
	return kvs, func(err error) {
		if err != nil {
			code := commitErrorCode(err)
			codes.fill(code)
			return
		}
		if created && s.mu.groups[req.Group] == nil {
			s.mu.groups[req.Group] = g
		}
		for _, kv := range kvs {
			_ = s.replayLocked(kv, false) // records we just encoded always parse
		}
	}
}

// validateCommit is Kafka's ClassicGroup.validateOffsetCommit.
func (g *group) validateCommit(generation int32, memberID, instanceID string, version int16) int16 {
	if g.cg != nil {
		return g.cg.validateCommit(generation, memberID, version)
	}
	if g.sg != nil {
		return g.sg.validateCommit(generation, memberID, version)
	}
	switch {
	case g.state == stateDead:
		return kerr.CoordinatorNotAvailable.Code
	case generation < 0 && memberID == "" && instanceID == "" && g.state == stateEmpty:
		return 0 // simple commit
	}
	if instanceID != "" {
		if id, ok := g.static[instanceID]; ok && id != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	switch {
	case g.state == stateCompletingRebalance:
		return kerr.RebalanceInProgress.Code
	case g.members[memberID] == nil:
		return kerr.UnknownMemberID.Code
	case generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// OffsetFetch serves OffsetFetch v0-v10 (v8+ batches groups). Partitions
// without a commit answer offset -1; null topics (v2+) mean every committed
// partition of the group.
func (c *Coordinator) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	r := kmsg.NewPtrOffsetFetchResponse()
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			r.Groups = append(r.Groups, c.fetchGroup(rg, req.Version, req.RequireStable))
		}
		return r
	}
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = req.Group
	if req.Topics != nil {
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		for _, t := range req.Topics {
			rg.Topics = append(rg.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	g := c.fetchGroup(rg, req.Version, req.RequireStable)
	for _, t := range g.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			if req.Version < 2 && g.ErrorCode != 0 {
				rp.ErrorCode = g.ErrorCode // no top-level error before v2
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	if req.Version >= 2 {
		r.ErrorCode = g.ErrorCode
	}
	return r
}

// fetchGroup answers one group. With requireStable (v7+), a partition with
// a pending transactional offset answers UNSTABLE_OFFSET_COMMIT, so the
// client retries rather than resuming from an offset about to change.
func (c *Coordinator) fetchGroup(rg kmsg.OffsetFetchRequestGroup, version int16, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = rg.Group
	type want struct {
		name  string
		id    [16]byte
		parts []int32
	}
	var wants []want
	for _, t := range rg.Topics {
		w := want{name: t.Topic, id: t.TopicID, parts: t.Partitions}
		if version >= 10 {
			w.name = ""
			if c.cfg.TopicName != nil {
				w.name, _ = c.cfg.TopicName(t.TopicID)
			}
		}
		wants = append(wants, w)
	}
	s, code := c.shardFor(rg.Group)
	offsets := map[tp]offsetEntry{}
	unstable := map[tp]bool{}
	if code == 0 {
		s.mu.Lock()
		if requireStable && version >= 7 && !s.unloadedLocked() {
			for _, byGroup := range s.mu.pending {
				for k := range byGroup[rg.Group] {
					unstable[k] = true
				}
			}
		}
		if s.unloadedLocked() {
			code = kerr.NotCoordinator.Code
		} else if g := s.mu.groups[rg.Group]; g != nil && g.cg != nil && version >= 9 && g.cg.validateFetch(rg.MemberID, rg.MemberEpoch) != 0 {
			code = g.cg.validateFetch(rg.MemberID, rg.MemberEpoch)
		} else if g != nil && g.sg != nil && version >= 9 && g.sg.validateFetch(rg.MemberID, rg.MemberEpoch) != 0 {
			code = g.sg.validateFetch(rg.MemberID, rg.MemberEpoch)
		} else if g != nil {
			for k, e := range g.offsets {
				offsets[k] = e
			}
		}
		s.mu.Unlock()
	}
	if rg.Topics == nil && code == 0 {
		// All committed partitions, grouped by topic in name order.
		byTopic := map[string][]int32{}
		for k := range offsets {
			byTopic[k.topic] = append(byTopic[k.topic], k.partition)
		}
		for t, ps := range byTopic {
			slices.Sort(ps)
			w := want{name: t, parts: ps}
			if version >= 10 && c.cfg.TopicID != nil {
				var ok bool
				if w.id, ok = c.cfg.TopicID(t); !ok {
					// A deleted topic has no id to answer with: Kafka
					// leaves it out.
					continue
				}
			}
			wants = append(wants, w)
		}
		slices.SortFunc(wants, func(a, b want) int { return strings.Compare(a.name, b.name) })
	}
	out.ErrorCode = code
	for _, w := range wants {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = w.name, w.id
		for _, p := range w.parts {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition = p
			rp.Offset = -1
			rp.Metadata = ptr("")
			switch e, ok := offsets[tp{w.name, p}]; {
			case w.name == "" && version >= 10:
				rp.ErrorCode = kerr.UnknownTopicID.Code
			case unstable[tp{w.name, p}]:
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			case ok:
				rp.Offset, rp.LeaderEpoch, rp.Metadata = e.offset, e.leaderEpoch, ptr(e.metadata)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// OffsetDelete serves OffsetDelete v0: it removes committed offsets of
// partitions the group no longer consumes.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	r := kmsg.NewPtrOffsetDeleteResponse()
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
	}
	s, code := c.shardFor(req.Group)
	if code == 0 && !s.p.Write(ctx, func() ([]KV, func(error)) {
		return s.decideOffsetDeleteLocked(req, codes, &code)
	}) {
		code = kerr.NotCoordinator.Code
	}
	r.ErrorCode = code
	if code != 0 {
		return r
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

func (s *shard) decideOffsetDeleteLocked(req *kmsg.OffsetDeleteRequest, codes [][]int16, top *int16) ([]KV, func(error)) {
	g := s.mu.groups[req.Group]
	if g == nil || g.state == stateDead {
		*top = kerr.GroupIDNotFound.Code
		return nil, nil
	}
	if g.cg == nil && g.state != stateEmpty && g.protocolType != consumerProtocolType {
		// Without the consumer protocol Kafka cannot tell what is consumed.
		*top = kerr.NonEmptyGroup.Code
		return nil, nil
	}
	var kvs []KV
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			k := tp{t.Topic, p.Partition}
			switch {
			case s.c.cfg.PartitionExists != nil && !s.c.cfg.PartitionExists(t.Topic, p.Partition):
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case g.cg != nil && g.cg.subscribes(t.Topic):
				codes[i][j] = kerr.GroupSubscribedToTopic.Code
			case g.sg != nil && len(g.sg.members) > 0 && g.sg.uses(t.Topic):
				codes[i][j] = kerr.GroupSubscribedToTopic.Code
			case g.cg == nil && g.state != stateEmpty && g.isSubscribed(t.Topic):
				codes[i][j] = kerr.GroupSubscribedToTopic.Code
			default:
				if _, ok := g.offsets[k]; ok {
					kvs = append(kvs, KV{Key: offsetKey(g.id, k)})
				}
			}
		}
	}
	if len(kvs) == 0 {
		return nil, nil
	}
	return kvs, func(err error) {
		if err != nil {
			*top = commitErrorCode(err)
			return
		}
		for _, kv := range kvs {
			_ = s.replayLocked(kv, false)
		}
	}
}

// expire writes tombstones for expired offsets and for empty groups left
// without offsets (Kafka's cleanupGroupMetadata).
func (s *shard) expire() {
	s.p.Write(s.p.Context(), func() ([]KV, func(error)) {
		now := s.c.cfg.Now()
		var kvs []KV
		for _, g := range s.mu.groups {
			expired := g.expiredOffsets(now, s.c.cfg.OffsetsRetention)
			for _, k := range expired {
				kvs = append(kvs, KV{Key: offsetKey(g.id, k)})
			}
			switch {
			case g.cg != nil:
				if len(g.cg.members) == 0 && len(g.offsets) == len(expired) {
					kvs = append(kvs, encodeAll(deleteGroupRecords(g.id, g.cg))...)
				}
			case g.sg != nil:
				if len(g.sg.members) == 0 && len(g.offsets) == len(expired) {
					kvs = append(kvs, sgEncodeAll(sgDeleteGroupRecords(g.id, g.sg))...)
				}
			case g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == len(expired):
				kvs = append(kvs, KV{Key: groupKey(g.id)})
			}
		}
		if len(kvs) == 0 {
			return nil, nil
		}
		return kvs, func(err error) {
			if err != nil {
				s.c.cfg.Logger.Warn("writing offset expiry tombstones failed", "partition", s.p.ID, "err", err)
				return
			}
			for _, kv := range kvs {
				_ = s.replayLocked(kv, false)
			}
			s.c.cfg.Logger.Info("expired group metadata", "partition", s.p.ID, "tombstones", len(kvs))
		}
	})
}

// expiredOffsets is Kafka's GroupMetadata.removeExpiredOffsets (KIP-211):
// an empty group's offsets expire retention after it became empty; a stable
// consumer group's offsets of topics it no longer subscribes expire by
// commit time; a simple group's offsets expire by commit time; explicit
// expire timestamps (old clients) win.
func (g *group) expiredOffsets(now time.Time, retention time.Duration) []tp {
	var base func(e offsetEntry) int64
	var skipSubscribed bool
	var subscribed func(topic string) bool = func(t string) bool { return g.subscribedTopics[t] }
	switch {
	case g.cg != nil:
		// Kafka's ConsumerGroup: by commit time, except topics still subscribed.
		base, skipSubscribed, subscribed = func(e offsetEntry) int64 { return e.commitMs }, true, g.cg.subscribes
	case g.sg != nil:
		// Kafka's StreamsGroup: likewise, except the topology's input topics.
		base, skipSubscribed, subscribed = func(e offsetEntry) int64 { return e.commitMs }, true, g.sg.uses
	case g.protocolType != "" && g.state == stateEmpty:
		base = func(offsetEntry) int64 { return g.stateTime.UnixMilli() }
	case g.protocolType == consumerProtocolType && g.subscribedTopics != nil && g.state == stateStable:
		base, skipSubscribed = func(e offsetEntry) int64 { return e.commitMs }, true
	case g.protocolType == "":
		base = func(e offsetEntry) int64 { return e.commitMs }
	default:
		return nil
	}
	nowMs := now.UnixMilli()
	var out []tp
	for k, e := range g.offsets {
		if skipSubscribed && subscribed(k.topic) {
			continue
		}
		if e.expireMs >= 0 {
			if nowMs >= e.expireMs {
				out = append(out, k)
			}
		} else if nowMs-base(e) >= retention.Milliseconds() {
			out = append(out, k)
		}
	}
	return out
}
