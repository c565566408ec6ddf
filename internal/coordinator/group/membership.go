package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// joinReq is a JoinGroup request with defaults resolved.
type joinReq struct {
	memberID, instanceID string
	clientID, clientHost string
	session, rebalance   time.Duration
	protocolType         string
	protocols            []protocol
	version              int16
}

// JoinGroup serves JoinGroup v0-v9. It blocks until the group's join phase
// completes (or ctx ends, answering REBALANCE_IN_PROGRESS). The client id and
// host come from WithClient.
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	r := c.joinGroup(ctx, req)
	if req.Version < 7 && r.Protocol == nil {
		r.Protocol = ptr("") // not nullable before v7
	}
	if req.Version < 9 {
		r.SkipAssignment = false
	}
	return r
}

func (c *Coordinator) joinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	s, code := c.shardFor(req.Group)
	if code != 0 {
		return joinError(code, req.MemberID)
	}
	ci := clientFrom(ctx)
	j := &joinReq{
		memberID:     req.MemberID,
		clientID:     ci.id,
		clientHost:   ci.host,
		session:      time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		rebalance:    time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		protocolType: req.ProtocolType,
		version:      req.Version,
	}
	if req.Version == 0 || req.RebalanceTimeoutMillis <= 0 {
		j.rebalance = j.session // v0 has no rebalance timeout; Kafka uses the session timeout
	}
	if req.InstanceID != nil {
		j.instanceID = *req.InstanceID
	}
	for _, p := range req.Protocols {
		j.protocols = append(j.protocols, protocol{name: p.Name, metadata: p.Metadata})
	}
	if j.session < c.cfg.MinSessionTimeout || j.session > c.cfg.MaxSessionTimeout {
		return joinError(kerr.InvalidSessionTimeout.Code, req.MemberID)
	}
	if code := s.convertEmptyConsumerGroup(ctx, req.Group); code != 0 {
		return joinError(code, req.MemberID)
	}

	var (
		resp *kmsg.JoinGroupResponse
		wait chan *kmsg.JoinGroupResponse
	)
	ok := s.p.Write(ctx, func() ([]KV, func(error)) {
		var kvs []KV
		var apply func(error)
		resp, wait, kvs, apply = s.decideJoinLocked(req.Group, j)
		return kvs, apply
	})
	switch {
	case !ok:
		return joinError(kerr.NotCoordinator.Code, req.MemberID)
	case resp != nil:
		return resp
	}
	select {
	case r := <-wait:
		return r
	case <-ctx.Done():
		return joinError(kerr.RebalanceInProgress.Code, req.MemberID)
	}
}

// decideJoinLocked returns either an immediate answer, or a channel that
// will receive it, plus records to store first (static member replacement).
func (s *shard) decideJoinLocked(groupID string, j *joinReq) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, []KV, func(error)) {
	g := s.mu.groups[groupID]
	if g == nil {
		if j.memberID != "" {
			return joinError(kerr.UnknownMemberID.Code, j.memberID), nil, nil, nil
		}
		g = newGroup(groupID, s.c.cfg.Now())
		s.mu.groups[groupID] = g
		defer func() {
			// A join that failed validation leaves no group behind.
			if len(g.members) == 0 && len(g.pending) == 0 && s.mu.groups[groupID] == g {
				delete(s.mu.groups, groupID)
			}
		}()
	}
	if g.cg != nil || g.sg != nil {
		// A consumer group appeared since convertEmptyConsumerGroup, or
		// the id is a streams group's (Kafka answers the same).
		return joinError(kerr.InconsistentGroupProtocol.Code, j.memberID), nil, nil, nil
	}
	if !s.acceptJoiningMember(g, j.memberID) {
		return joinError(kerr.GroupMaxSizeReached.Code, j.memberID), nil, nil, nil
	}
	if g.state == stateDead {
		return joinError(kerr.CoordinatorNotAvailable.Code, j.memberID), nil, nil, nil
	}
	if !g.supportsProtocols(j.protocolType, j.protocols) {
		return joinError(kerr.InconsistentGroupProtocol.Code, j.memberID), nil, nil, nil
	}
	if j.memberID == "" {
		return s.newMemberJoinLocked(g, j)
	}
	r, ch := s.currentMemberJoinLocked(g, j)
	return r, ch, nil, nil
}

func (s *shard) newMemberJoinLocked(g *group, j *joinReq) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, []KV, func(error)) {
	id := newMemberID(j.clientID)
	if j.instanceID != "" {
		if oldID, ok := g.static[j.instanceID]; ok && g.members[oldID] != nil {
			return s.staticRejoinLocked(g, g.members[oldID], id, j)
		}
		return nil, s.addMemberAndRebalanceLocked(g, id, j), nil, nil
	}
	if j.version >= 4 {
		// KIP-394: a member id is only admitted once the client proves it
		// kept it, so clients that die mid-join do not bloat the group.
		s.addPendingMemberLocked(g, id, j.session)
		return joinError(kerr.MemberIDRequired.Code, id), nil, nil, nil
	}
	return nil, s.addMemberAndRebalanceLocked(g, id, j), nil, nil
}

// staticRejoinLocked handles a known group.instance.id joining with a new
// member id (a restarted static member): the old id is fenced, and a Stable
// group answers at once without a rebalance when the member's subscription
// for the selected protocol is unchanged.
func (s *shard) staticRejoinLocked(g *group, old *member, newID string, j *joinReq) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, []KV, func(error)) {
	m := s.replaceStaticMemberLocked(g, old, newID)
	m.clientID, m.clientHost = j.clientID, j.clientHost
	// Like Kafka, a static member may come back with other metadata (franz-go
	// writes its previous generation into it) without a rebalance, as long as
	// the group would still select the same protocol.
	prev := m.protocols
	m.protocols = j.protocols
	unchanged := g.selectProtocol() == g.protocol
	m.protocols = prev
	switch {
	case g.state == stateStable && unchanged:
		m.protocols = j.protocols
		m.sessionTimeout, m.rebalanceTimeout = j.session, j.rebalance
		s.scheduleSessionLocked(g, m)
		ch := make(chan *kmsg.JoinGroupResponse, 1)
		isLeader := m.id == g.leader
		// Kafka stores the new member id before answering so that a
		// coordinator move does not resurrect the fenced id.
		return nil, ch, []KV{groupRecord(g, s.c.cfg.Now(), nil)}, func(err error) {
			if err != nil {
				ch <- joinError(coordinator.AppendErrorCode(err), newID)
				return
			}
			// KIP-814: a static leader gets the members back but must not
			// reassign (SkipAssignment, v9+); older leaders get no members.
			r := joinResponse(g, m, isLeader && j.version >= 9)
			r.SkipAssignment = isLeader && j.version >= 9
			ch <- r
		}
	case g.state == statePreparingRebalance:
		m.protocols = j.protocols
		m.sessionTimeout, m.rebalanceTimeout = j.session, j.rebalance
		m.joinCh = make(chan *kmsg.JoinGroupResponse, 1)
		ch := m.joinCh
		s.scheduleSessionLocked(g, m)
		s.tryCompleteJoinLocked(g)
		return nil, ch, nil, nil
	default:
		// CompletingRebalance: the leader may be assigning to the old id, so
		// a new rebalance is needed; Stable with a changed subscription too.
		return nil, s.updateMemberAndRebalanceLocked(g, m, j), nil, nil
	}
}

func (s *shard) currentMemberJoinLocked(g *group, j *joinReq) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	if _, ok := g.pending[j.memberID]; ok {
		return nil, s.addMemberAndRebalanceLocked(g, j.memberID, j)
	}
	if code := g.validateMember(j.memberID, j.instanceID); code != 0 {
		return joinError(code, j.memberID), nil
	}
	m := g.members[j.memberID]
	switch g.state {
	case statePreparingRebalance:
		return nil, s.updateMemberAndRebalanceLocked(g, m, j)
	case stateCompletingRebalance:
		if m.sameProtocols(j.protocols) {
			// A retried join of this generation: answer it again.
			s.scheduleSessionLocked(g, m)
			return joinResponse(g, m, m.id == g.leader), nil
		}
		return nil, s.updateMemberAndRebalanceLocked(g, m, j)
	case stateStable:
		if m.id == g.leader || !m.sameProtocols(j.protocols) {
			// The leader rejoining means it wants a new assignment.
			return nil, s.updateMemberAndRebalanceLocked(g, m, j)
		}
		s.scheduleSessionLocked(g, m)
		return joinResponse(g, m, false), nil
	default:
		return joinError(kerr.UnknownMemberID.Code, j.memberID), nil
	}
}

// validateMember is Kafka's member check shared by the group APIs: a static
// instance must map to memberID (else FENCED_INSTANCE_ID), and memberID must
// be a member.
func (g *group) validateMember(memberID, instanceID string) int16 {
	if instanceID != "" {
		id, ok := g.static[instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if id != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}
