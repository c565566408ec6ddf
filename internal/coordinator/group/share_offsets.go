package group

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the share groups' offset admin APIs: Describe, Alter and
// DeleteShareGroupOffsets. A share group's "offset" on a partition is its
// share-partition start offset, kept by the share coordinator; the group
// coordinator reads and changes it through Config.SharePersister.

// shareGroupSnapshot returns whether the group exists as a share group,
// whether it has members, and the partitions it has share state for.
func (c *Coordinator) shareGroupSnapshot(id string) (exists, active bool, init initTopics, code int16, msg string) {
	s, code := c.shardFor(id)
	if code != 0 {
		return false, false, nil, code, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unloadedLocked() {
		return false, false, nil, kerr.NotCoordinator.Code, ""
	}
	g, code, msg := s.shareGroupLocked(id)
	if code != 0 || g == nil {
		if code == 0 {
			code, msg = kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s not found.", id)
		}
		return false, false, nil, code, msg
	}
	return true, len(g.members) > 0, maps.Clone(g.initialized), 0, ""
}

// DescribeShareGroupOffsets serves DescribeShareGroupOffsets v0-v1: each
// partition's start offset, leader epoch and (v1) lag, read from the share
// coordinator. Without topics it describes every partition the group has
// initialized (ShareGroupStatePartitionMetadata), as Kafka does: start
// offset -1 until a member's first fetch applied share.auto.offset.reset.
func (c *Coordinator) DescribeShareGroupOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse {
	r := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	for _, rg := range req.Groups {
		r.Groups = append(r.Groups, c.describeShareOffsets(ctx, rg))
	}
	return r
}

func (c *Coordinator) describeShareOffsets(ctx context.Context, rg kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	dg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	dg.GroupID = rg.GroupID
	_, _, init, code, msg := c.shareGroupSnapshot(rg.GroupID)
	if code != 0 {
		dg.ErrorCode, dg.ErrorMessage = code, nullable(msg)
		return dg
	}
	if c.cfg.SharePersister == nil {
		dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return dg
	}
	view := c.topics()
	all := rg.Topics == nil
	if all {
		for id, t := range init {
			if name, ok := view.nameOf(id); ok {
				rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
				rt.Topic, rt.Partitions = name, slices.Clone(t.partitions)
				rg.Topics = append(rg.Topics, rt)
			}
		}
		slices.SortFunc(rg.Topics, func(a, b kmsg.DescribeShareGroupOffsetsRequestGroupTopic) int {
			return compareStrings(a.Topic, b.Topic)
		})
	}
	sreq := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sreq.GroupID = rg.GroupID
	for _, t := range rg.Topics {
		dt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		dt.Topic = t.Topic
		info, ok := view.lookup(t.Topic)
		if ok {
			dt.TopicID = info.ID
			st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
			st.TopicID = info.ID
			for _, p := range t.Partitions {
				sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
				sp.Partition = p
				st.Partitions = append(st.Partitions, sp)
			}
			sreq.Topics = append(sreq.Topics, st)
		}
		dg.Topics = append(dg.Topics, dt)
	}
	summary, err := c.cfg.SharePersister.ReadStateSummary(ctx, sreq)
	if err != nil {
		dg.ErrorCode, dg.Topics = kerr.CoordinatorNotAvailable.Code, nil
		return dg
	}
	byTopic := map[[16]byte]kmsg.ReadShareGroupStateSummaryResponseTopic{}
	for _, t := range summary.Topics {
		byTopic[t.TopicID] = t
	}
	var topics []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for i, t := range rg.Topics {
		dt := dg.Topics[i]
		st, ok := byTopic[dt.TopicID]
		for _, p := range t.Partitions {
			dp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			dp.Partition, dp.StartOffset, dp.LeaderEpoch, dp.Lag = p, -1, -1, -1
			switch {
			case dt.TopicID == [16]byte{}:
				dp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case ok:
				for _, sp := range st.Partitions {
					if sp.Partition != p {
						continue
					}
					dp.ErrorCode, dp.ErrorMessage = sp.ErrorCode, sp.ErrorMessage
					dp.StartOffset, dp.LeaderEpoch = sp.StartOffset, sp.LeaderEpoch
					if sp.ErrorCode == 0 && sp.StartOffset >= 0 && c.cfg.HighWatermark != nil {
						if hw, known := c.cfg.HighWatermark(ctx, t.Topic, p); known {
							dp.Lag = max(hw-sp.StartOffset-int64(max(sp.DeliveryCompleteCount, 0)), 0)
						}
					}
				}
			}
			if all && dp.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				continue // the topic is gone
			}
			dt.Partitions = append(dt.Partitions, dp)
		}
		if !all || len(dt.Partitions) > 0 {
			topics = append(topics, dt)
		}
	}
	dg.Topics = topics
	return dg
}

// checkEmptyShareGroup is the check of Alter and DeleteShareGroupOffsets:
// the group exists and has no members (NON_EMPTY_GROUP otherwise).
func (c *Coordinator) checkEmptyShareGroup(id string) (int16, string) {
	_, active, _, code, msg := c.shareGroupSnapshot(id)
	switch {
	case code != 0:
		return code, msg
	case active:
		return kerr.NonEmptyGroup.Code, fmt.Sprintf("The group %s has active members.", id)
	case c.cfg.SharePersister == nil:
		return kerr.CoordinatorNotAvailable.Code, ""
	}
	return 0, ""
}

// AlterShareGroupOffsets serves AlterShareGroupOffsets v0: the start
// offsets of an empty group's share partitions are set, as a new state
// epoch, so that share partitions holding the old state reload it.
func (c *Coordinator) AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	r := kmsg.NewPtrAlterShareGroupOffsetsResponse()
	c.shareInitMu.Lock() // no heartbeat initializes the partitions meanwhile
	defer c.shareInitMu.Unlock()
	if code, msg := c.checkEmptyShareGroup(req.GroupID); code != 0 {
		r.ErrorCode, r.ErrorMessage = code, nullable(msg)
		return r
	}
	view := c.topics()
	altered := map[[16]byte][]int32{}
	for _, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		info, known := view.lookup(t.Topic)
		rt.TopicID = info.ID
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !known || p.Partition < 0 || p.Partition >= info.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.StartOffset < 0:
				rp.ErrorCode = kerr.InvalidRequest.Code
			default:
				rp.ErrorCode = c.resetShareState(ctx, req.GroupID, info.ID, p.Partition, p.StartOffset)
				if rp.ErrorCode == 0 {
					altered[info.ID] = append(altered[info.ID], p.Partition)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	// The altered partitions have share state now: a member's heartbeat
	// must not initialize them again.
	if code := c.addInitialized(ctx, req.GroupID, altered); code != 0 {
		c.cfg.Logger.Warn("recording altered share partitions failed", "group", req.GroupID, "code", code)
	}
	return r
}

// resetShareState starts a share partition over at offset, one state
// epoch past the current one.
func (c *Coordinator) resetShareState(ctx context.Context, group string, topicID [16]byte, partition int32, offset int64) int16 {
	sreq := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sreq.GroupID = group
	st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st.TopicID = topicID
	sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	sp.Partition = partition
	st.Partitions = append(st.Partitions, sp)
	sreq.Topics = append(sreq.Topics, st)
	epoch := int32(0)
	if sum, err := c.cfg.SharePersister.ReadStateSummary(ctx, sreq); err == nil {
		for _, t := range sum.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 {
					epoch = p.StateEpoch + 1
				}
			}
		}
	}
	ireq := kmsg.NewPtrInitializeShareGroupStateRequest()
	ireq.GroupID = group
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = topicID
	ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	ip.Partition, ip.StateEpoch, ip.StartOffset = partition, epoch, offset
	it.Partitions = append(it.Partitions, ip)
	ireq.Topics = append(ireq.Topics, it)
	resp, err := c.cfg.SharePersister.InitializeState(ctx, ireq)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return p.ErrorCode
			}
		}
	}
	if c.cfg.ShareStateReset != nil {
		c.cfg.ShareStateReset(group, topicID, partition)
	}
	return 0
}

// DeleteShareGroupOffsets serves DeleteShareGroupOffsets v0: an empty
// group's share state of the topics is deleted; the next member to read
// them starts over at share.auto.offset.reset.
func (c *Coordinator) DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	r := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
	if code, msg := c.checkEmptyShareGroup(req.GroupID); code != 0 {
		r.ErrorCode, r.ErrorMessage = code, nullable(msg)
		return r
	}
	view := c.topics()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		info, known := view.lookup(t.Topic)
		if !known {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			r.Topics = append(r.Topics, rt)
			continue
		}
		rt.TopicID = info.ID
		dreq := kmsg.NewPtrDeleteShareGroupStateRequest()
		dreq.GroupID = req.GroupID
		dt := kmsg.NewDeleteShareGroupStateRequestTopic()
		dt.TopicID = info.ID
		for p := range info.Partitions {
			dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			dp.Partition = p
			dt.Partitions = append(dt.Partitions, dp)
		}
		dreq.Topics = append(dreq.Topics, dt)
		resp, err := c.cfg.SharePersister.DeleteState(ctx, dreq)
		if err != nil {
			rt.ErrorCode = kerr.CoordinatorNotAvailable.Code
		} else {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 && p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
						rt.ErrorCode = p.ErrorCode
					}
				}
			}
		}
		if rt.ErrorCode == 0 {
			rt.ErrorCode = c.dropInitialized(ctx, req.GroupID, info.ID)
		}
		if rt.ErrorCode == 0 && c.cfg.ShareStateReset != nil {
			for p := range info.Partitions {
				c.cfg.ShareStateReset(req.GroupID, info.ID, p)
			}
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// dropInitialized records that the group has no share state of the topic
// any more.
func (c *Coordinator) dropInitialized(ctx context.Context, group string, topicID [16]byte) int16 {
	s, code := c.shardFor(group)
	if code != 0 {
		return code
	}
	ok := s.p.Write(ctx, func() ([]KV, func(error)) {
		g := s.mu.shares[group]
		if g == nil {
			return nil, nil
		}
		if _, had := g.initialized[topicID]; !had {
			return nil, nil
		}
		init := maps.Clone(g.initialized)
		delete(init, topicID)
		rec := &shareRecord{typ: sgStatePartitionMetadataType, group: group, init: init}
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

// deleteShareGroup deletes id if it is a share group: it must be empty
// (NON_EMPTY_GROUP); its share state is deleted from the share coordinator
// first, then its records are tombstoned. handled is false for any other
// group.
func (c *Coordinator) deleteShareGroup(ctx context.Context, id string) (handled bool, code int16) {
	exists, active, init, code, _ := c.shareGroupSnapshot(id)
	switch {
	case !exists:
		return false, 0
	case code != 0:
		return true, code
	case active:
		return true, kerr.NonEmptyGroup.Code
	}
	if len(init) > 0 {
		if c.cfg.SharePersister == nil {
			return true, kerr.CoordinatorNotAvailable.Code
		}
		dreq := kmsg.NewPtrDeleteShareGroupStateRequest()
		dreq.GroupID = id
		for tid, t := range init {
			dt := kmsg.NewDeleteShareGroupStateRequestTopic()
			dt.TopicID = tid
			for _, p := range t.partitions {
				dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
				dp.Partition = p
				dt.Partitions = append(dt.Partitions, dp)
			}
			dreq.Topics = append(dreq.Topics, dt)
		}
		resp, err := c.cfg.SharePersister.DeleteState(ctx, dreq)
		if err != nil {
			return true, kerr.CoordinatorNotAvailable.Code
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 && p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					return true, p.ErrorCode
				}
				if c.cfg.ShareStateReset != nil {
					c.cfg.ShareStateReset(id, t.TopicID, p.Partition)
				}
			}
		}
	}
	s, code := c.shardFor(id)
	if code != 0 {
		return true, code
	}
	ok := s.p.Write(ctx, func() ([]KV, func(error)) {
		g := s.mu.shares[id]
		if g == nil {
			code = kerr.GroupIDNotFound.Code
			return nil, nil
		}
		if len(g.members) > 0 {
			code = kerr.NonEmptyGroup.Code
			return nil, nil
		}
		var recs []*shareRecord
		for m := range g.target {
			recs = append(recs, &shareRecord{typ: shareTargetMemberType, group: id, member: m, del: true})
		}
		recs = append(recs,
			&shareRecord{typ: sgStatePartitionMetadataType, group: id, del: true},
			&shareRecord{typ: shareTargetMetadataType, group: id, del: true},
			&shareRecord{typ: shareMetadataType, group: id, del: true})
		return encodeShare(recs), func(err error) {
			if err != nil {
				code = kerr.CoordinatorNotAvailable.Code
				return
			}
			s.applyAllShareLocked(recs)
		}
	})
	if !ok {
		return true, kerr.NotCoordinator.Code
	}
	return true, code
}
