package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// SyncGroup serves SyncGroup v0-v5. Followers wait for the leader's
// assignment; the leader's assignment is stored as GroupMetadataValue before
// anyone is answered.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	res := c.syncGroup(ctx, req)
	r := kmsg.NewPtrSyncGroupResponse()
	r.ErrorCode = res.code
	if res.code == 0 {
		r.MemberAssignment = res.assignment
		if req.Version >= 5 {
			r.ProtocolType = ptr(res.protocolType)
			r.Protocol = ptr(res.protocol)
		}
	}
	return r
}

func (c *Coordinator) syncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) syncResult {
	s, code := c.shardFor(req.Group)
	if code != 0 {
		return syncResult{code: code}
	}
	var (
		res  *syncResult
		wait chan syncResult
	)
	ok := s.p.Write(ctx, func() ([]KV, func(error)) {
		var kvs []KV
		var apply func(error)
		res, wait, kvs, apply = s.decideSyncLocked(req)
		return kvs, apply
	})
	switch {
	case !ok:
		return syncResult{code: kerr.NotCoordinator.Code}
	case res != nil:
		return *res
	}
	select {
	case r := <-wait:
		return r
	case <-ctx.Done():
		return syncResult{code: kerr.RebalanceInProgress.Code}
	}
}

func (s *shard) decideSyncLocked(req *kmsg.SyncGroupRequest) (*syncResult, chan syncResult, []KV, func(error)) {
	fail := func(code int16) (*syncResult, chan syncResult, []KV, func(error)) {
		return &syncResult{code: code}, nil, nil, nil
	}
	g := s.mu.groups[req.Group]
	if g == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	if g.sg != nil {
		return fail(kerr.InconsistentGroupProtocol.Code) // a streams group, as Kafka answers
	}
	if g.state == stateDead {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	instanceID := ""
	if req.InstanceID != nil {
		instanceID = *req.InstanceID
	}
	if code := g.validateMember(req.MemberID, instanceID); code != 0 {
		return fail(code)
	}
	if req.Generation != g.generation {
		return fail(kerr.IllegalGeneration.Code)
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
		(req.Protocol != nil && *req.Protocol != g.protocol) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateEmpty:
		return fail(kerr.UnknownMemberID.Code)
	case statePreparingRebalance:
		return fail(kerr.RebalanceInProgress.Code)
	case stateStable:
		delete(g.pendingSync, m.id)
		s.scheduleSessionLocked(g, m)
		return &syncResult{assignment: m.assignment, protocolType: g.protocolType, protocol: g.protocol}, nil, nil, nil
	}

	// CompletingRebalance.
	delete(g.pendingSync, m.id)
	s.answerSyncLocked(m, &syncResult{code: kerr.RebalanceInProgress.Code}) // a duplicate sync replaces the older one
	m.syncCh = make(chan syncResult, 1)
	wait := m.syncCh
	s.scheduleSessionLocked(g, m)
	if m.id != g.leader {
		return nil, wait, nil, nil
	}
	assignments := make(map[string][]byte, len(g.members))
	for _, a := range req.GroupAssignment {
		if g.members[a.MemberID] != nil {
			assignments[a.MemberID] = a.MemberAssignment
		}
	}
	for id := range g.members {
		if _, ok := assignments[id]; !ok {
			assignments[id] = []byte{} // Kafka gives unassigned members an empty assignment
		}
	}
	gen := g.generation
	return nil, wait, []KV{groupRecord(g, s.c.cfg.Now(), assignments)}, func(err error) {
		if s.mu.groups[g.id] != g || g.generation != gen || g.state != stateCompletingRebalance {
			return // whoever moved the group on answered the waiters
		}
		if err != nil {
			s.c.cfg.Logger.Warn("storing group assignment failed", "group", g.id, "generation", gen, "err", err)
			code := coordinator.AppendErrorCode(err)
			for _, m := range g.members {
				m.assignment = nil
				s.answerSyncLocked(m, &syncResult{code: code})
			}
			s.prepareRebalanceLocked(g, "storing assignment failed")
			s.tryCompleteJoinLocked(g)
			return
		}
		for id, m := range g.members {
			m.assignment = assignments[id]
			s.answerSyncLocked(m, &syncResult{assignment: m.assignment, protocolType: g.protocolType, protocol: g.protocol})
		}
		g.state = stateStable
		g.stateTime = s.c.cfg.Now()
	}
}

// Heartbeat serves Heartbeat v0-v4: it keeps a member's session alive and
// tells it (REBALANCE_IN_PROGRESS) when to rejoin.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	r := kmsg.NewPtrHeartbeatResponse()
	s, code := c.shardFor(req.Group)
	if code != 0 {
		r.ErrorCode = code
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.ErrorCode = s.heartbeatLocked(req)
	return r
}

func (s *shard) heartbeatLocked(req *kmsg.HeartbeatRequest) int16 {
	if s.unloadedLocked() {
		return kerr.NotCoordinator.Code
	}
	g := s.mu.groups[req.Group]
	switch {
	case g == nil:
		return kerr.UnknownMemberID.Code
	case g.state == stateDead:
		return kerr.CoordinatorNotAvailable.Code
	case g.state == stateEmpty:
		return kerr.UnknownMemberID.Code
	}
	instanceID := ""
	if req.InstanceID != nil {
		instanceID = *req.InstanceID
	}
	if code := g.validateMember(req.MemberID, instanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	s.scheduleSessionLocked(g, g.members[req.MemberID])
	if g.state == statePreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0 // Stable, or CompletingRebalance: clients may heartbeat before syncing
}

// LeaveGroup serves LeaveGroup v0-v5. v3+ removes a batch of members, each
// by member id or group instance id, with an error per member.
func (c *Coordinator) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	r := kmsg.NewPtrLeaveGroupResponse()
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		r.ErrorCode = code
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.mu.groups[req.Group]
	switch {
	case s.unloadedLocked():
		r.ErrorCode = kerr.NotCoordinator.Code
		return r
	case g != nil && g.state == stateDead:
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return r
	}
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		if g == nil {
			rm.ErrorCode = kerr.UnknownMemberID.Code
		} else {
			rm.ErrorCode = s.leaveLocked(g, lm)
		}
		r.Members = append(r.Members, rm)
	}
	if req.Version < 3 {
		// Before batching the member's error was the request's error.
		r.ErrorCode = r.Members[0].ErrorCode
		r.Members = nil
	}
	return r
}

func (s *shard) leaveLocked(g *group, lm kmsg.LeaveGroupRequestMember) int16 {
	memberID := lm.MemberID
	if lm.InstanceID != nil {
		id, ok := g.static[*lm.InstanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case memberID != "" && memberID != id:
			return kerr.FencedInstanceID.Code
		}
		memberID = id // an admin may remove a static member by instance id alone
	} else if t, ok := g.pending[memberID]; ok {
		stopTimer(t)
		delete(g.pending, memberID)
		s.tryCompleteJoinLocked(g)
		return 0
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	s.c.cfg.Logger.Info("member left group", "group", g.id, "member", m.id)
	s.removeMemberAndUpdateGroupLocked(g, m, "member left")
	return 0
}
