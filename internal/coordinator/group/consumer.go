package group

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// This file is the KIP-848 heartbeat (Kafka's
// GroupMetadataManager.consumerGroupHeartbeat): member admission and
// fencing, group epoch bumps, the target assignment, and reconciliation of
// each member towards its target (Kafka's CurrentAssignmentBuilder).

// ConsumerGroupHeartbeat serves ConsumerGroupHeartbeat v0-v1. The client id
// and host come from WithClient. Every state change is appended to
// __consumer_offsets before the answer, and memory changes only by applying
// those records.
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	if code, msg := c.validateHeartbeat(req); code != 0 {
		return hbError(code, msg)
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		return hbError(code, "")
	}
	ci := clientFrom(ctx)
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	ok := s.p.Write(ctx, func() ([]KV, func(error)) {
		d := s.decideHeartbeatLocked(req, ci)
		resp = d.resp
		if resp.ErrorCode != 0 {
			return nil, nil
		}
		kvs := append(slices.Clone(d.pre), encodeAll(d.recs)...)
		return kvs, func(err error) {
			if err != nil {
				resp = hbError(coordinator.AppendErrorCode(err), "")
				return
			}
			for _, kv := range d.pre {
				_ = s.replayLocked(kv, false)
			}
			s.applyAllLocked(d.recs)
			s.afterHeartbeatLocked(req.Group, d)
		}
	})
	if !ok {
		return hbError(kerr.NotCoordinator.Code, "")
	}
	return resp
}

func hbError(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.ErrorCode = code
	r.ErrorMessage = nullable(msg)
	return r
}

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (c *Coordinator) validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	invalid := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	switch {
	case (req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == leaveEpoch) && req.MemberID == "":
		return invalid("MemberId can't be empty.")
	case req.Group == "":
		return invalid("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case req.MemberEpoch == leaveStaticEpoch:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	case req.MemberEpoch < leaveStaticEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression.Code,
				fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *req.SubscribedTopicRegex, err)
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(c.cfg.ConsumerAssignors, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor.Code, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.",
			*req.ServerAssignor, strings.Join(c.cfg.ConsumerAssignors, ", "))
	}
	return 0, ""
}

// hbDecision is a decided heartbeat: the answer, the records to append and
// what to do with the member's timers once they are applied.
type hbDecision struct {
	resp *kmsg.ConsumerGroupHeartbeatResponse
	pre  []KV // tombstone of an empty classic group becoming a consumer group
	recs []*cgRecord

	member     string // whose timers to update; "" for none
	removed    bool   // the member left
	cur        memberCur
	curChanged bool
	rebalance  time.Duration
}

func hbFail(code int16, format string, args ...any) *hbDecision {
	return &hbDecision{resp: hbError(code, fmt.Sprintf(format, args...))}
}

// isClassic reports whether g holds classic group state (not just offsets).
func (g *group) isClassic() bool {
	return g.cg == nil && (g.protocolType != "" || len(g.members) > 0 || len(g.pending) > 0 || g.generation > 0)
}

func (g *group) classicEmpty() bool {
	return len(g.members) == 0 && len(g.pending) == 0 && (g.state == stateEmpty || g.state == stateDead)
}

func (s *shard) decideHeartbeatLocked(req *kmsg.ConsumerGroupHeartbeatRequest, ci clientInfo) *hbDecision {
	if s.mu.shares[req.Group] != nil {
		return hbFail(kerr.GroupIDNotFound.Code, "Group %s is not a consumer group.", req.Group)
	}
	g := s.mu.groups[req.Group]
	var cg *consumerGroup
	var pre []KV
	if g != nil {
		cg = g.cg
		if g.sg != nil {
			return hbFail(kerr.GroupIDNotFound.Code, "Group %s is not a consumer group.", req.Group)
		}
		if g.isClassic() {
			// Kafka 4 converts an empty classic group; a live one keeps its protocol.
			if req.MemberEpoch != 0 || !g.classicEmpty() {
				return hbFail(kerr.GroupIDNotFound.Code, "Group %s is not a consumer group.", req.Group)
			}
			pre = []KV{{Key: groupKey(req.Group)}}
		}
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == leaveStaticEpoch {
		if cg == nil {
			return hbFail(kerr.GroupIDNotFound.Code, "Group %s not found.", req.Group)
		}
		return s.decideLeaveLocked(req, cg)
	}
	if cg == nil {
		if req.MemberEpoch != 0 {
			return hbFail(kerr.UnknownMemberID.Code, "Consumer group %s not found.", req.Group)
		}
		cg = newConsumerGroup() // scratch: applying the records creates the real one
	}
	d, upd, old, replaced := s.resolveMemberLocked(req, cg)
	if d != nil {
		return d
	}
	d = &hbDecision{pre: pre, member: upd.id}
	s.decideMemberLocked(d, req, ci, cg, upd, old, replaced)
	return d
}

// resolveMemberLocked finds or creates the heartbeating member with Kafka's
// checks. It returns a working copy to update, the member as stored (nil if
// new) and the static member it replaces, or a failed decision.
func (s *shard) resolveMemberLocked(req *kmsg.ConsumerGroupHeartbeatRequest, cg *consumerGroup) (d *hbDecision, upd *cmember, old, replaced *cmember) {
	memberID := req.MemberID
	if max := s.c.cfg.ConsumerMaxGroupSize; len(cg.members) >= max && (memberID == "" || cg.members[memberID] == nil) {
		return hbFail(kerr.GroupMaxSizeReached.Code, "The consumer group has reached its maximum capacity of %d members.", max), nil, nil, nil
	}
	if memberID == "" {
		memberID = newUUID() // v0: the coordinator names members
	}
	if req.InstanceID == nil {
		old = cg.members[memberID]
		if old == nil && req.MemberEpoch != 0 {
			return hbFail(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", memberID, req.Group), nil, nil, nil
		}
	} else {
		inst := *req.InstanceID
		sm := cg.members[cg.static[inst]]
		switch {
		case req.MemberEpoch == 0 && sm == nil:
			old = cg.members[memberID]
		case req.MemberEpoch == 0:
			if sm.epoch != leaveStaticEpoch {
				return hbFail(kerr.UnreleasedInstanceID.Code, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
					memberID, inst, sm.id), nil, nil, nil
			}
			replaced = sm
		case sm == nil:
			return hbFail(kerr.UnknownMemberID.Code, "Instance id %s is unknown.", inst), nil, nil, nil
		case sm.id != memberID:
			return hbFail(kerr.FencedInstanceID.Code, "Static member %s with instance id %s was fenced by member %s.", memberID, inst, sm.id), nil, nil, nil
		default:
			old = sm
		}
	}
	if old != nil {
		if msg := checkMemberEpoch(old, req.MemberEpoch, req.Topics); msg != "" {
			return hbFail(kerr.FencedMemberEpoch.Code, "%s", msg), nil, nil, nil
		}
	}
	switch {
	case replaced != nil:
		// The restarted instance takes over the old member's partitions.
		c := *replaced
		c.id, c.epoch, c.prevEpoch = memberID, 0, 0
		upd = &c
	case old != nil:
		c := *old
		upd = &c
	default:
		upd = &cmember{id: memberID, memberCur: memberCur{state: msStable, prevEpoch: -1}}
	}
	return nil, upd, old, replaced
}

// checkMemberEpoch is Kafka's throwIfMemberEpochIsInvalid: the epoch must be
// the member's, or its previous one when the member owns no more than its
// assignment (the answer that bumped its epoch was lost).
func checkMemberEpoch(m *cmember, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) string {
	switch {
	case epoch > m.epoch:
		return fmt.Sprintf("The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	case epoch < m.epoch && (epoch != m.prevEpoch || !ownedSubset(owned, m.assigned)):
		return fmt.Sprintf("The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	}
	return ""
}

func ownedSubset(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !a.has(t.TopicID, p) {
				return false
			}
		}
	}
	return true
}

// ownsAny reports whether the member still owns any partition of a. A
// heartbeat without owned partitions (nil) proves nothing, so it counts as
// still owning them.
func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	if owned == nil {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if a.has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

// decideMemberLocked runs Kafka's three steps for a joining or heartbeating
// member: update the member (bumping the group epoch if its subscription
// or the subscribed topics changed), recompute the target assignment if
// the group epoch moved past it, and reconcile the member towards its target.
func (s *shard) decideMemberLocked(d *hbDecision, req *kmsg.ConsumerGroupHeartbeatRequest, ci clientInfo, cg *consumerGroup, upd, old, replaced *cmember) {
	base := *upd
	applyRequest(&upd.memberMeta, req, ci)
	if replaced != nil {
		d.recs = append(d.recs, removeMemberRecords(req.Group, replaced.id)...)
	}
	if old == nil || !upd.memberMeta.equal(&base.memberMeta) {
		d.recs = append(d.recs, &cgRecord{typ: cgMemberMetadataType, group: req.Group, member: upd.id, meta: ptr(upd.memberMeta)})
	}
	bump := !slices.Equal(upd.topics, base.topics) || upd.regex != base.regex
	if old == nil && replaced == nil && len(upd.topics) == 0 && upd.regex == "" {
		bump = false
	}

	// The group as it will be: upd in, the replaced static member out.
	members := make([]*cmember, 0, len(cg.members)+1)
	for _, m := range cg.sortedMembers() {
		if m.id != upd.id && (replaced == nil || m.id != replaced.id) {
			members = append(members, m)
		}
	}
	members = append(members, upd)
	slices.SortFunc(members, func(a, b *cmember) int { return compareStrings(a.id, b.id) })
	metas := make([]*memberMeta, len(members))
	for i, m := range members {
		metas[i] = &m.memberMeta
	}
	view := s.c.topics()
	hash := view.metadataHash(metas)
	epoch := cg.epoch
	if bump || hash != cg.metadataHash {
		epoch++
		d.recs = append(d.recs, &cgRecord{typ: cgMetadataType, group: req.Group, epoch: epoch, hash: hash})
	}

	prev := maps.Clone(cg.target)
	if prev == nil {
		prev = map[string]assignment{}
	}
	if replaced != nil {
		prev[upd.id] = prev[replaced.id]
		delete(prev, replaced.id)
	}
	targetEpoch, myTarget := cg.assignmentEpoch, prev[upd.id]
	switch {
	case epoch > targetEpoch:
		next := s.c.computeTarget(view, members, prev)
		for _, m := range members {
			if p, had := prev[m.id]; !had || !next[m.id].equal(p) || (replaced != nil && m.id == upd.id) {
				d.recs = append(d.recs, &cgRecord{typ: cgTargetMemberType, group: req.Group, member: m.id, target: next[m.id]})
			}
		}
		d.recs = append(d.recs, &cgRecord{typ: cgTargetMetadataType, group: req.Group, epoch: epoch})
		targetEpoch, myTarget = epoch, next[upd.id]
		s.c.cfg.Logger.Info("computed consumer group target assignment", "group", req.Group, "epoch", epoch,
			"assignor", s.c.preferredAssignor(members), "members", len(members))
	case replaced != nil:
		d.recs = append(d.recs, &cgRecord{typ: cgTargetMemberType, group: req.Group, member: upd.id, target: myTarget})
	}

	free := func(t tpid) bool {
		o := cg.owner[t]
		return o == "" || o == upd.id || (replaced != nil && o == replaced.id)
	}
	cur := reconcile(&upd.memberCur, targetEpoch, myTarget, req.Topics, free)
	d.cur, d.rebalance = cur, time.Duration(upd.rebalanceTimeoutMs)*time.Millisecond
	if old == nil || !cur.equal(&base.memberCur) {
		d.curChanged = true
		d.recs = append(d.recs, &cgRecord{typ: cgCurrentMemberType, group: req.Group, member: upd.id, cur: ptr(cur)})
	}

	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.MemberID = ptr(upd.id)
	r.MemberEpoch = cur.epoch
	r.HeartbeatIntervalMillis = int32(s.c.settings(req.Group).ConsumerHeartbeatInterval / time.Millisecond)
	if req.Topics != nil || req.MemberEpoch == 0 || !cur.assigned.equal(base.assigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, id := range cur.assigned.topicIDs() {
			a.Topics = append(a.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: id, Partitions: slices.Clone(cur.assigned[id])})
		}
		r.Assignment = &a
	}
	d.resp = r
}

// applyRequest copies what the request sets; absent (null or -1) fields keep
// their value, as Kafka's maybeUpdate* builders do.
func applyRequest(m *memberMeta, req *kmsg.ConsumerGroupHeartbeatRequest, ci clientInfo) {
	if req.InstanceID != nil {
		m.instanceID = *req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.ServerAssignor != nil {
		m.assignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		ts := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(ts)
		m.topics = slices.Compact(ts)
	}
	if req.SubscribedTopicRegex != nil {
		m.regex = *req.SubscribedTopicRegex
	}
	m.clientID, m.clientHost = ci.id, ci.host
}

// reconcile is Kafka's CurrentAssignmentBuilder: it moves a member towards
// its target one safe step at a time. Partitions to give up are revoked
// first (the member stays at its epoch, UNREVOKED_PARTITIONS, until its
// heartbeat no longer lists them); partitions another member still owns are
// withheld (UNRELEASED_PARTITIONS) until that member released them. So no
// partition is ever owned by two members.
func reconcile(m *memberCur, targetEpoch int32, target assignment, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, free func(tpid) bool) memberCur {
	switch {
	case m.state == msStable && m.epoch == targetEpoch:
		return *m
	case m.state == msUnrevoked && ownsAny(owned, m.pending):
		return *m
	}
	keep, revoke, add := assignment{}, assignment{}, assignment{}
	unreleased := false
	ids := map[[16]byte]bool{}
	for id := range target {
		ids[id] = true
	}
	for id := range m.assigned {
		ids[id] = true
	}
	for id := range ids {
		for _, p := range m.assigned[id] {
			if target.has(id, p) {
				keep[id] = append(keep[id], p)
			} else {
				revoke[id] = append(revoke[id], p)
			}
		}
		for _, p := range target[id] {
			switch {
			case m.assigned.has(id, p):
			case free(tpid{id, p}):
				add[id] = append(add[id], p)
			default:
				unreleased = true
			}
		}
	}
	next := memberCur{epoch: targetEpoch, prevEpoch: m.epoch, state: msStable, assigned: keep, pending: assignment{}}
	switch {
	case len(revoke) > 0 && ownsAny(owned, revoke):
		next.epoch, next.state, next.pending = m.epoch, msUnrevoked, revoke
	case len(add) > 0:
		for id, ps := range add {
			ps = append(slices.Clone(keep[id]), ps...)
			slices.Sort(ps)
			keep[id] = ps
		}
		if unreleased {
			next.state = msUnreleased
		}
	case unreleased:
		next.state = msUnreleased
	}
	return next
}

// decideLeaveLocked handles member epoch -1 (leave) and -2 (a static member
// leaving temporarily: it keeps its partitions until its session expires or
// its instance id rejoins).
func (s *shard) decideLeaveLocked(req *kmsg.ConsumerGroupHeartbeatRequest, cg *consumerGroup) *hbDecision {
	var m *cmember
	if req.InstanceID != nil {
		m = cg.members[cg.static[*req.InstanceID]]
		switch {
		case m == nil:
			return hbFail(kerr.UnknownMemberID.Code, "Instance id %s is unknown.", *req.InstanceID)
		case m.id != req.MemberID:
			return hbFail(kerr.FencedInstanceID.Code, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, m.id)
		}
	} else if m = cg.members[req.MemberID]; m == nil {
		return hbFail(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", req.MemberID, req.Group)
	}
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.MemberID, r.MemberEpoch = ptr(m.id), req.MemberEpoch
	d := &hbDecision{resp: r, member: m.id}
	if req.MemberEpoch == leaveStaticEpoch {
		cur := m.memberCur
		cur.epoch, cur.pending = leaveStaticEpoch, assignment{}
		d.cur, d.curChanged = cur, true
		d.recs = []*cgRecord{{typ: cgCurrentMemberType, group: req.Group, member: m.id, cur: &cur}}
		s.c.cfg.Logger.Info("static consumer group member left temporarily", "group", req.Group, "member", m.id)
		return d
	}
	d.removed = true
	d.recs = s.fenceRecordsLocked(req.Group, cg, m)
	s.c.cfg.Logger.Info("consumer group member left", "group", req.Group, "member", m.id)
	return d
}

// fenceRecordsLocked removes m and bumps the group epoch so the others get
// its partitions (Kafka's consumerGroupFenceMember).
func (s *shard) fenceRecordsLocked(groupID string, cg *consumerGroup, m *cmember) []*cgRecord {
	var metas []*memberMeta
	for _, o := range cg.sortedMembers() {
		if o.id != m.id {
			metas = append(metas, &o.memberMeta)
		}
	}
	recs := removeMemberRecords(groupID, m.id)
	return append(recs, &cgRecord{typ: cgMetadataType, group: groupID, epoch: cg.epoch + 1, hash: s.c.topics().metadataHash(metas)})
}

// afterHeartbeatLocked updates the member's timers once its records are
// applied: a fresh session, and a revocation deadline while it has
// partitions to revoke.
func (s *shard) afterHeartbeatLocked(groupID string, d *hbDecision) {
	g := s.mu.groups[groupID]
	if d.removed || g == nil || g.cg == nil || g.cg.members[d.member] == nil {
		return
	}
	s.armSessionLocked(groupID, g.cg, d.member)
	if !d.curChanged {
		return
	}
	if d.cur.state == msUnrevoked {
		s.armRevokeLocked(groupID, g.cg, d.member, d.cur.epoch, d.rebalance)
	} else if t := g.cg.timers[d.member]; t != nil {
		stopTimer(t.revoke)
		t.revokeSeq++
	}
}

func (cg *consumerGroup) timersOf(id string) *memberTimers {
	t := cg.timers[id]
	if t == nil {
		t = &memberTimers{}
		cg.timers[id] = t
	}
	return t
}

// armSessionLocked (re)starts the member's session: without a heartbeat for
// group.consumer.session.timeout.ms the member is removed.
func (s *shard) armSessionLocked(groupID string, cg *consumerGroup, memberID string) {
	t := cg.timersOf(memberID)
	stopTimer(t.session)
	t.seq++
	seq := t.seq
	t.session = s.afterFunc(s.c.settings(groupID).ConsumerSessionTimeout, func() {
		s.fenceAsync(groupID, memberID, "session timeout", func(cg *consumerGroup, m *cmember) bool {
			return cg.timers[memberID] == t && t.seq == seq
		})
	})
}

// armRevokeLocked fences the member if it still has not revoked what it
// must after its rebalance timeout (Kafka's consumer group rebalance timeout).
func (s *shard) armRevokeLocked(groupID string, cg *consumerGroup, memberID string, epoch int32, d time.Duration) {
	t := cg.timersOf(memberID)
	stopTimer(t.revoke)
	t.revokeSeq++
	seq := t.revokeSeq
	t.revoke = s.afterFunc(d, func() {
		s.fenceAsync(groupID, memberID, "rebalance timeout", func(cg *consumerGroup, m *cmember) bool {
			return cg.timers[memberID] == t && t.revokeSeq == seq && m.state == msUnrevoked && m.epoch == epoch
		})
	})
}

// fenceAsync removes a member from a timer callback, on a tracked goroutine
// because persisting takes the partition's write lock. still re-checks, under the lock, that
// the deadline was not superseded.
func (s *shard) fenceAsync(groupID, memberID, reason string, still func(*consumerGroup, *cmember) bool) {
	s.goTracked(func() {
		s.p.Write(s.p.Context(), func() ([]KV, func(error)) {
			g := s.mu.groups[groupID]
			if g == nil || g.cg == nil || g.cg.members[memberID] == nil || !still(g.cg, g.cg.members[memberID]) {
				return nil, nil
			}
			recs := s.fenceRecordsLocked(groupID, g.cg, g.cg.members[memberID])
			return encodeAll(recs), func(err error) {
				if err != nil {
					s.c.cfg.Logger.Warn("fencing consumer group member failed", "group", groupID, "member", memberID, "err", err)
					return
				}
				s.c.cfg.Logger.Info("consumer group member fenced", "group", groupID, "member", memberID, "reason", reason)
				s.applyAllLocked(recs)
			}
		})
	})
}

// finishConsumerLoadLocked starts the deadlines of replayed members.
func (s *shard) finishConsumerLoadLocked(g *group) {
	for _, m := range g.cg.sortedMembers() {
		s.armSessionLocked(g.id, g.cg, m.id)
		if m.state == msUnrevoked {
			s.armRevokeLocked(g.id, g.cg, m.id, m.epoch, time.Duration(m.rebalanceTimeoutMs)*time.Millisecond)
		}
	}
}

// newUUID is a random UUID in Kafka's Uuid.toString form (URL-safe base64,
// no padding), as Kafka names members it creates.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
