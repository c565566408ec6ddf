package group

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// This file is the KIP-932 share group heartbeat (Kafka's
// GroupMetadataManager.shareGroupHeartbeat): members join with epoch 0 and
// their subscription, heartbeat with the epoch they were given and leave
// with -1. Any change of membership, subscriptions or subscribed topics
// bumps the group epoch and recomputes the target assignment with the
// simple assignor; a share member takes its target at once, since share
// partitions may be consumed by several members together and nothing has
// to be revoked first.

// ShareGroupHeartbeat serves ShareGroupHeartbeat v1. Every state change is
// appended to __consumer_offsets before the answer.
func (c *Coordinator) ShareGroupHeartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	if msg := validateShareHeartbeat(req); msg != "" {
		return shbError(kerr.InvalidRequest.Code, msg)
	}
	s, code := c.shardFor(req.GroupID)
	if code != 0 {
		return shbError(code, "")
	}
	c.initShareTopics(ctx, s, req)
	ci := clientFrom(ctx)
	var resp *kmsg.ShareGroupHeartbeatResponse
	ok := s.p.Write(ctx, func() ([]KV, func(error)) {
		recs, r := s.decideShareHeartbeatLocked(req, ci)
		resp = r
		if resp.ErrorCode != 0 {
			return nil, nil
		}
		return encodeShare(recs), func(err error) {
			if err != nil {
				resp = shbError(coordinator.AppendErrorCode(err), "")
				return
			}
			s.applyAllShareLocked(recs)
			if req.MemberEpoch != leaveEpoch {
				s.armShareSessionLocked(req.GroupID, req.MemberID)
			}
		}
	})
	if !ok {
		return shbError(kerr.NotCoordinator.Code, "")
	}
	return resp
}

func shbError(code int16, msg string) *kmsg.ShareGroupHeartbeatResponse {
	r := kmsg.NewPtrShareGroupHeartbeatResponse()
	r.ErrorCode = code
	r.ErrorMessage = nullable(msg)
	return r
}

// validateShareHeartbeat is Kafka's
// throwIfShareGroupHeartbeatRequestIsInvalid; it returns the message of
// an INVALID_REQUEST, or "".
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) string {
	switch {
	case req.GroupID == "":
		return "GroupId can't be empty."
	case req.MemberID == "":
		return "MemberId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return "RackId can't be empty."
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return "SubscribedTopicNames must be set in first request."
	case req.MemberEpoch < leaveEpoch:
		return "MemberEpoch is invalid."
	}
	return ""
}

// shareGroupLocked returns the share group id, or why the id cannot be
// one: another type of group holds it.
func (s *shard) shareGroupLocked(id string) (*shareGroup, int16, string) {
	if g := s.mu.groups[id]; g != nil && (g.cg != nil || g.isClassic()) {
		return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a share group.", id)
	}
	return s.mu.shares[id], 0, ""
}

func (s *shard) decideShareHeartbeatLocked(req *kmsg.ShareGroupHeartbeatRequest, ci clientInfo) ([]*shareRecord, *kmsg.ShareGroupHeartbeatResponse) {
	g, code, msg := s.shareGroupLocked(req.GroupID)
	if code != 0 {
		return nil, shbError(code, msg)
	}
	var old *shareMember
	if g != nil {
		old = g.members[req.MemberID]
	}
	switch {
	case req.MemberEpoch == leaveEpoch:
		if g == nil {
			return nil, shbError(kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s not found.", req.GroupID))
		}
		if old == nil {
			return nil, shbError(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.GroupID))
		}
		recs := s.shareRemoveRecordsLocked(g, old.id)
		r := kmsg.NewPtrShareGroupHeartbeatResponse()
		r.MemberID = ptr(req.MemberID)
		r.MemberEpoch = leaveEpoch
		return recs, r
	case req.MemberEpoch > 0 && old == nil:
		return nil, shbError(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.GroupID))
	case req.MemberEpoch > 0 && req.MemberEpoch != old.epoch && req.MemberEpoch != old.prevEpoch:
		return nil, shbError(kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a member epoch (%d) that differs from the one known by the group coordinator (%d). The member must rejoin.", req.MemberEpoch, old.epoch))
	}
	if g == nil {
		g = newShareGroup(req.GroupID, s.c.cfg.Now()) // scratch: applying the records creates the real one
	}
	if old == nil && len(g.members) >= s.c.cfg.Share.MaxGroupSize {
		return nil, shbError(kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", s.c.cfg.Share.MaxGroupSize))
	}

	upd := &shareMember{id: req.MemberID}
	if old != nil {
		upd.shareMeta, upd.shareCur = old.shareMeta, old.shareCur
	}
	if req.RackID != nil {
		upd.rackID = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		ts := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(ts)
		upd.topics = slices.Compact(ts)
	}
	upd.clientID, upd.clientHost = ci.id, ci.host

	var recs []*shareRecord
	if old == nil || !upd.shareMeta.equal(&old.shareMeta) {
		recs = append(recs, &shareRecord{typ: shareMemberMetadataType, group: g.id, member: upd.id, meta: ptr(upd.shareMeta)})
	}
	members := make([]*shareMember, 0, len(g.members)+1)
	for _, m := range g.sortedMembers() {
		if m.id != upd.id {
			members = append(members, m)
		}
	}
	members = append(members, upd)
	targetRecs, epoch := s.shareTargetLocked(g, members, old == nil || !slices.Equal(upd.topics, old.topics))
	recs = append(recs, targetRecs...)

	target := g.target[upd.id]
	for _, r := range targetRecs {
		if r.typ == shareTargetMemberType && r.member == upd.id {
			target = r.target
		}
	}
	cur := upd.shareCur
	if cur.epoch != epoch || !cur.assigned.equal(target) || old == nil {
		cur = shareCur{epoch: epoch, prevEpoch: upd.epoch, assigned: target}
		recs = append(recs, &shareRecord{typ: shareCurrentMemberType, group: g.id, member: upd.id, cur: &cur})
	}

	r := kmsg.NewPtrShareGroupHeartbeatResponse()
	r.MemberID = ptr(upd.id)
	r.MemberEpoch = cur.epoch
	r.HeartbeatIntervalMillis = int32(s.c.settings(g.id).Share.HeartbeatInterval / time.Millisecond)
	if req.MemberEpoch != cur.epoch || req.SubscribedTopicNames != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, id := range cur.assigned.topicIDs() {
			a.TopicPartitions = append(a.TopicPartitions, kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{TopicID: id, Partitions: slices.Clone(cur.assigned[id])})
		}
		r.Assignment = &a
	}
	return recs, r
}

// shareTargetLocked recomputes the target assignment of members (the group
// as it will be). The group epoch moves when the subscriptions changed or
// the computed target differs from the stored one (topics or partitions
// were added or removed); it returns the records and the epoch the members
// are at after them.
func (s *shard) shareTargetLocked(g *shareGroup, members []*shareMember, subsChanged bool) ([]*shareRecord, int32) {
	var only initTopics // with a persister, only partitions with share state are assigned
	if s.c.cfg.SharePersister != nil {
		only = g.initialized
		if only == nil {
			only = initTopics{}
		}
	}
	next := assignShareSimple(s.c.topics(), members, only)
	changed := subsChanged || len(next) != len(g.target)
	for id, a := range next {
		if p, had := g.target[id]; !had || !p.equal(a) {
			changed = true
		}
	}
	if !changed && g.assignmentEpoch == g.epoch {
		return nil, g.epoch
	}
	epoch := g.epoch + 1
	recs := []*shareRecord{{typ: shareMetadataType, group: g.id, epoch: epoch}}
	for _, m := range members {
		if p, had := g.target[m.id]; !had || !p.equal(next[m.id]) {
			recs = append(recs, &shareRecord{typ: shareTargetMemberType, group: g.id, member: m.id, target: next[m.id]})
		}
	}
	recs = append(recs, &shareRecord{typ: shareTargetMetadataType, group: g.id, epoch: epoch})
	if r := s.shareInitRecordLocked(g, next); r != nil {
		recs = append(recs, r)
	}
	s.c.cfg.Logger.Info("computed share group target assignment", "group", g.id, "epoch", epoch, "members", len(members))
	return recs, epoch
}

// shareInitRecordLocked records the partitions of a new target that the
// group had no share state for (Kafka's ShareGroupStatePartitionMetadata);
// the offset admin APIs describe and delete these. With a persister every
// assigned partition was initialized first (share_init.go) and this adds
// nothing; without one, the members' share partitions would create their
// state on their first fetch.
func (s *shard) shareInitRecordLocked(g *shareGroup, next map[string]assignment) *shareRecord {
	view := s.c.topics()
	merged := initTopics{}
	for id, t := range g.initialized {
		merged[id] = t
	}
	changed := false
	for _, a := range next {
		for id, ps := range a {
			t := merged[id]
			for _, p := range ps {
				if !slices.Contains(t.partitions, p) {
					t.partitions = append(slices.Clone(t.partitions), p)
					slices.Sort(t.partitions)
					changed = true
				}
			}
			if t.name == "" {
				t.name, _ = view.nameOf(id)
			}
			merged[id] = t
		}
	}
	if !changed {
		return nil
	}
	return &shareRecord{typ: sgStatePartitionMetadataType, group: g.id, init: merged}
}

// shareRemoveRecordsLocked removes a member (it left or its session
// expired): its records are deleted, the group epoch moves and the others'
// targets are recomputed. Their current assignments follow on their next
// heartbeat, which sees the new epoch.
func (s *shard) shareRemoveRecordsLocked(g *shareGroup, memberID string) []*shareRecord {
	recs := []*shareRecord{
		{typ: shareCurrentMemberType, group: g.id, member: memberID, del: true},
		{typ: shareTargetMemberType, group: g.id, member: memberID, del: true},
		{typ: shareMemberMetadataType, group: g.id, member: memberID, del: true},
	}
	var rest []*shareMember
	for _, m := range g.sortedMembers() {
		if m.id != memberID {
			rest = append(rest, m)
		}
	}
	scratch := *g
	scratch.target = map[string]assignment{}
	for id, a := range g.target {
		if id != memberID {
			scratch.target[id] = a
		}
	}
	targetRecs, _ := s.shareTargetLocked(&scratch, rest, true)
	return append(recs, targetRecs...)
}

// armShareSessionLocked (re)starts the member's session: without a
// heartbeat for group.share.session.timeout.ms the member is removed.
func (s *shard) armShareSessionLocked(groupID, memberID string) {
	g := s.mu.shares[groupID]
	if g == nil || g.members[memberID] == nil {
		return
	}
	m := g.members[memberID]
	stopTimer(m.sessionTimer)
	m.sessionSeq++
	seq := m.sessionSeq
	m.sessionTimer = s.afterFunc(s.c.settings(groupID).Share.SessionTimeout, func() {
		s.goTracked(func() {
			s.p.Write(s.p.Context(), func() ([]KV, func(error)) {
				g := s.mu.shares[groupID]
				if g == nil || g.members[memberID] != m || m.sessionSeq != seq {
					return nil, nil
				}
				recs := s.shareRemoveRecordsLocked(g, memberID)
				return encodeShare(recs), func(err error) {
					if err != nil {
						s.c.cfg.Logger.Warn("fencing share group member failed", "group", groupID, "member", memberID, "err", err)
						return
					}
					s.c.cfg.Logger.Info("share group member fenced", "group", groupID, "member", memberID, "reason", "session timeout")
					s.applyAllShareLocked(recs)
				}
			})
		})
	})
}

// finishShareLoadLocked starts the sessions of replayed members.
func (s *shard) finishShareLoadLocked() {
	for id, g := range s.mu.shares {
		for _, m := range g.members {
			s.armShareSessionLocked(id, m.id)
		}
	}
}
