package group

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// Transactional offsets (TxnOffsetCommit) are written as a transactional
// batch of the producer to __consumer_offsets and stay pending, invisible
// to OffsetFetch, until the transaction coordinator's marker reaches the
// partition: a COMMIT marker makes them the committed offsets, an ABORT
// drops them. The broker reports a marker it wrote with CompleteTransaction;
// on Load the markers come back through Replay (KV.Control). Both paths run
// completeTxnLocked, so memory matches the log either way.

// TxnOffsetCommit serves TxnOffsetCommit v0-v6 (Kafka's
// commitTransactionalOffset).
//
// Behavior: v0-v2 carry no member fields and are not checked against the
// group; v3+ with a member id or generation are checked like OffsetCommit
// (a KIP-848 member's stale epoch is ILLEGAL_GENERATION, as Kafka answers
// transactional commits). The producer epoch is checked by the log append
// (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH before v3). The broker checks
// that the transaction coordinator added the partition (AddOffsetsToTxn).
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	r := kmsg.NewPtrTxnOffsetCommitResponse()
	codes := newCodeGrid(len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) })
	names := c.commitTopicNames(len(req.Topics), req.Version >= 6, func(i int) (string, [16]byte) {
		return req.Topics[i].Topic, req.Topics[i].TopicID
	})
	s, code := c.shardFor(req.Group)
	if code != 0 {
		codes.setAll(code)
	} else if !s.p.WriteTransactional(ctx, req.ProducerID, req.ProducerEpoch, func() ([]KV, func(error)) {
		return s.decideTxnCommitLocked(req, names, codes)
	}) {
		codes.setAll(kerr.NotCoordinator.Code)
	}
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for j, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			if rp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 3 {
				rp.ErrorCode = kerr.InvalidProducerEpoch.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

func (s *shard) decideTxnCommitLocked(req *kmsg.TxnOffsetCommitRequest, names []string, codes codeGrid) ([]KV, func(error)) {
	setAll := func(code int16) ([]KV, func(error)) {
		codes.setAll(code)
		return nil, nil
	}
	generation, memberID, instanceID := int32(-1), "", ""
	if req.Version >= 3 {
		generation, memberID = req.Generation, req.MemberID
		if req.InstanceID != nil {
			instanceID = *req.InstanceID
		}
	}
	g := s.mu.groups[req.Group]
	switch {
	case g != nil && g.state == stateDead:
		return setAll(kerr.CoordinatorNotAvailable.Code)
	case generation < 0 && memberID == "" && instanceID == "":
		// Kafka accepts commits without member fields from any producer.
	case g == nil:
		return setAll(kerr.IllegalGeneration.Code)
	default:
		code := g.validateCommit(generation, memberID, instanceID, 9)
		if code == kerr.StaleMemberEpoch.Code {
			code = kerr.IllegalGeneration.Code
		}
		if code != 0 {
			return setAll(code)
		}
	}
	now := s.c.cfg.Now()
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
				e := offsetEntry{offset: p.Offset, leaderEpoch: -1, metadata: md, commitMs: now.UnixMilli(), expireMs: -1}
				if req.Version >= 2 {
					e.leaderEpoch = p.LeaderEpoch
				}
				kvs = append(kvs, offsetRecord(req.Group, tp{names[i], p.Partition}, e))
			}
		}
	}
	if len(kvs) == 0 {
		return nil, nil
	}
	return kvs, func(err error) {
		if err != nil {
			code := commitErrorCode(err)
			if errors.Is(err, coordinator.ErrProducerFenced) {
				code = kerr.ProducerFenced.Code
			}
			codes.fill(code)
			return
		}
		for _, kv := range kvs {
			kv.Transactional, kv.ProducerID = true, req.ProducerID
			_ = s.replayLocked(kv, false) // records we just encoded always parse
		}
	}
}

// CompleteTransaction applies the marker the broker wrote for producerID
// to the __consumer_offsets partition: commit makes the producer's pending
// offsets committed, abort drops them. It does nothing if the partition is
// not loaded here (its next Load replays the marker from the log).
func (c *Coordinator) CompleteTransaction(partition int32, producerID int64, commit bool) {
	p, ok := c.rt.Get(partition)
	if !ok {
		return
	}
	p.Apply(func() {
		_ = p.Shard.replayLocked(KV{Control: true, ProducerID: producerID, Commit: commit}, false)
	})
}

// replayTxnLocked records a transactional offset as pending; handled is
// false for other records, which are never written transactionally and are
// applied as usual.
func (s *shard) replayTxnLocked(kv KV) (handled bool, err error) {
	k, ok, err := parseKey(kv.Key)
	if err != nil || !ok || !k.isOffset || kv.Value == nil {
		return err != nil, err
	}
	e, err := parseOffsetValue(kv.Value)
	if err != nil {
		return true, err
	}
	e.seq = s.mu.seq
	byGroup := s.mu.pending[kv.ProducerID]
	if byGroup == nil {
		byGroup = map[string]map[tp]offsetEntry{}
		s.mu.pending[kv.ProducerID] = byGroup
	}
	if byGroup[k.group] == nil {
		byGroup[k.group] = map[tp]offsetEntry{}
	}
	byGroup[k.group][k.tp] = e
	return true, nil
}

// completeTxnLocked is Kafka's completePendingTxnOffsetCommit: on commit a
// pending offset replaces the committed one unless that was written later.
func (s *shard) completeTxnLocked(producerID int64, commit bool) {
	byGroup := s.mu.pending[producerID]
	delete(s.mu.pending, producerID)
	if !commit {
		return
	}
	for groupID, offsets := range byGroup {
		g := s.mu.groups[groupID]
		if g == nil {
			g = newGroup(groupID, s.c.cfg.Now())
			s.mu.groups[groupID] = g
		}
		for k, e := range offsets {
			if cur, ok := g.offsets[k]; !ok || cur.seq < e.seq {
				g.offsets[k] = e
			}
		}
	}
}

// hasPendingLocked reports whether a transaction holds an uncommitted
// offset for the group's partition (OffsetFetch's require_stable).
func (s *shard) hasPendingLocked(groupID string, k tp) bool {
	for _, byGroup := range s.mu.pending {
		if _, ok := byGroup[groupID][k]; ok {
			return true
		}
	}
	return false
}
