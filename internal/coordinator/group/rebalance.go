package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the classic rebalance state machine (Kafka's ClassicGroup
// handling in GroupMetadataManager): member admission and removal, the
// delayed join, generation completion and the timers that drive them. Every
// function here runs with shard.mu held.

// syncResult is what a SyncGroup waiter receives.
type syncResult struct {
	code         int16
	assignment   []byte
	protocolType string
	protocol     string
}

func joinError(code int16, memberID string) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.ErrorCode = code
	r.MemberID = memberID
	r.Generation = -1
	return r
}

func (s *shard) answerJoinLocked(m *member, r *kmsg.JoinGroupResponse) {
	if m.joinCh != nil {
		m.joinCh <- r // buffered; each channel is answered once
		m.joinCh = nil
	}
}

func (s *shard) answerSyncLocked(m *member, r *syncResult) {
	if m.syncCh != nil {
		m.syncCh <- *r
		m.syncCh = nil
	}
}

// joinResponse is a successful JoinGroup answer for m in g's current
// generation. Only the leader gets the members and their metadata.
func joinResponse(g *group, m *member, withMembers bool) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation = g.generation
	r.ProtocolType = ptr(g.protocolType)
	r.Protocol = ptr(g.protocol)
	r.LeaderID = g.leader
	r.MemberID = m.id
	if withMembers {
		for _, o := range g.sortedMembers() {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = o.id
			if o.instanceID != "" {
				jm.InstanceID = ptr(o.instanceID)
			}
			jm.ProtocolMetadata = o.metadataFor(g.protocol)
			r.Members = append(r.Members, jm)
		}
	}
	return r
}

// acceptJoiningMember is Kafka's group.max.size admission rule. While
// preparing a rebalance it counts members that already rejoined, so a
// lowered limit kicks out the last members to rejoin.
func (s *shard) acceptJoiningMember(g *group, memberID string) bool {
	max := s.c.cfg.MaxGroupSize
	switch g.state {
	case stateEmpty, stateDead:
		return true
	case statePreparingRebalance:
		if m := g.members[memberID]; m != nil && m.joinCh != nil {
			return true
		}
		awaiting := 0
		for _, m := range g.members {
			if m.joinCh != nil {
				awaiting++
			}
		}
		return awaiting < max
	default:
		return g.members[memberID] != nil || len(g.members) < max
	}
}

// addMemberAndRebalanceLocked admits a new member and starts (or joins) a
// rebalance. The returned channel receives the member's JoinGroup answer.
func (s *shard) addMemberAndRebalanceLocked(g *group, id string, j *joinReq) chan *kmsg.JoinGroupResponse {
	if t, ok := g.pending[id]; ok {
		stopTimer(t)
		delete(g.pending, id)
	}
	m := &member{
		id:               id,
		instanceID:       j.instanceID,
		clientID:         j.clientID,
		clientHost:       j.clientHost,
		rebalanceTimeout: j.rebalance,
		sessionTimeout:   j.session,
		protocolType:     j.protocolType,
		protocols:        j.protocols,
		seq:              g.nextSeq,
		joinCh:           make(chan *kmsg.JoinGroupResponse, 1),
	}
	g.nextSeq++
	if len(g.members) == 0 {
		g.protocolType = j.protocolType
	}
	g.members[id] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	if g.state == statePreparingRebalance && g.generation == 0 {
		// Extends group.initial.rebalance.delay.ms for the first generation.
		g.newMemberAdded = true
	}
	s.scheduleSessionLocked(g, m)
	ch := m.joinCh
	s.maybePrepareRebalanceLocked(g, "new member joined")
	s.tryCompleteJoinLocked(g)
	return ch
}

// updateMemberAndRebalanceLocked records a known member's rejoin.
func (s *shard) updateMemberAndRebalanceLocked(g *group, m *member, j *joinReq) chan *kmsg.JoinGroupResponse {
	// A duplicate join replaces the older waiter, which rejoins.
	s.answerJoinLocked(m, joinError(kerr.RebalanceInProgress.Code, m.id))
	m.protocols = j.protocols
	m.rebalanceTimeout = j.rebalance
	m.sessionTimeout = j.session
	m.joinCh = make(chan *kmsg.JoinGroupResponse, 1)
	ch := m.joinCh
	s.scheduleSessionLocked(g, m)
	s.maybePrepareRebalanceLocked(g, "member rejoined")
	s.tryCompleteJoinLocked(g)
	return ch
}

func (s *shard) maybePrepareRebalanceLocked(g *group, reason string) {
	switch g.state {
	case stateEmpty, stateStable, stateCompletingRebalance:
		s.prepareRebalanceLocked(g, reason)
	}
}

// prepareRebalanceLocked moves g to PreparingRebalance and arms the join
// timer: group.initial.rebalance.delay.ms for an empty group, otherwise the
// largest rebalance timeout of its members.
func (s *shard) prepareRebalanceLocked(g *group, reason string) {
	if g.state == stateCompletingRebalance {
		// The leader's assignment will never come for this generation.
		for _, m := range g.members {
			m.assignment = nil
			s.answerSyncLocked(m, &syncResult{code: kerr.RebalanceInProgress.Code})
		}
	}
	stopTimer(g.syncTimer)
	clear(g.pendingSync)
	stopTimer(g.rebalanceTimer)
	g.rebalanceSeq++
	var delay time.Duration
	if g.state == stateEmpty {
		g.initialDelay = true
		g.newMemberAdded = false
		delay = s.c.cfg.InitialRebalanceDelay
		g.delayRemaining = max(g.rebalanceTimeout()-delay, 0)
	} else {
		g.initialDelay = false
		delay = g.rebalanceTimeout()
	}
	s.c.cfg.Logger.Debug("preparing rebalance", "group", g.id, "generation", g.generation, "reason", reason)
	g.state = statePreparingRebalance
	g.stateTime = s.c.cfg.Now()
	s.armRebalanceTimerLocked(g, delay)
}

func (s *shard) armRebalanceTimerLocked(g *group, d time.Duration) {
	seq := g.rebalanceSeq
	g.rebalanceTimer = s.afterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.unloadedLocked() || s.mu.groups[g.id] != g || g.rebalanceSeq != seq || g.state != statePreparingRebalance {
			return
		}
		if g.initialDelay && g.newMemberAdded && g.delayRemaining > 0 {
			g.newMemberAdded = false
			d := min(s.c.cfg.InitialRebalanceDelay, g.delayRemaining)
			g.delayRemaining -= d
			s.armRebalanceTimerLocked(g, d)
			return
		}
		s.completeJoinLocked(g)
	})
}

// tryCompleteJoinLocked ends the join phase early once every member has
// rejoined, except during the initial delay, which always runs its course.
func (s *shard) tryCompleteJoinLocked(g *group) {
	if g.state == statePreparingRebalance && !g.initialDelay && g.allMembersJoined() {
		s.completeJoinLocked(g)
	}
}

// completeJoinLocked starts the next generation with the members that
// rejoined and answers their JoinGroup calls.
func (s *shard) completeJoinLocked(g *group) {
	stopTimer(g.rebalanceTimer)
	g.rebalanceSeq++
	for _, m := range g.sortedMembers() {
		// Static members keep their slot until their session expires.
		if m.joinCh == nil && m.instanceID == "" {
			s.removeMemberLocked(g, m)
		}
	}
	if l := g.members[g.leader]; l == nil || l.joinCh == nil {
		for _, m := range g.sortedMembers() {
			if m.joinCh != nil {
				g.leader = m.id
				break
			}
		}
	}
	g.generation++
	g.stateTime = s.c.cfg.Now()
	if len(g.members) == 0 {
		g.state = stateEmpty
		g.protocol = ""
		g.leader = ""
		g.subscribedTopics = nil
		s.persistGroupAsyncLocked(g)
		return
	}
	g.protocol = g.selectProtocol()
	g.state = stateCompletingRebalance
	g.updateSubscriptions()
	for _, m := range g.sortedMembers() {
		g.pendingSync[m.id] = true
		if m.joinCh != nil {
			s.answerJoinLocked(m, joinResponse(g, m, m.id == g.leader))
			s.scheduleSessionLocked(g, m)
		}
	}
	// Members that never send SyncGroup are removed after the rebalance timeout.
	gen := g.generation
	g.syncTimer = s.afterFunc(g.rebalanceTimeout(), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.unloadedLocked() || s.mu.groups[g.id] != g || g.generation != gen || len(g.pendingSync) == 0 ||
			(g.state != stateCompletingRebalance && g.state != stateStable) {
			return
		}
		for id := range g.pendingSync {
			if m := g.members[id]; m != nil {
				s.removeMemberLocked(g, m)
			}
		}
		s.prepareRebalanceLocked(g, "members failed to sync")
		s.tryCompleteJoinLocked(g)
	})
}

// persistGroupAsyncLocked writes g's current snapshot from a goroutine:
// callers hold mu and so cannot start a write. The snapshot is taken in
// the write's decide step, so whatever is written last is the newest state.
func (s *shard) persistGroupAsyncLocked(g *group) {
	s.goTracked(func() {
		s.p.Write(s.p.Context(), func() ([]KV, func(error)) {
			if s.mu.groups[g.id] != g || (g.state != stateEmpty && g.state != stateStable) {
				return nil, nil
			}
			return []KV{groupRecord(g, s.c.cfg.Now(), nil)}, func(err error) {
				if err != nil {
					s.c.cfg.Logger.Warn("storing group metadata failed", "group", g.id, "err", err)
				}
			}
		})
	})
}

// removeMemberLocked drops m without touching the group's state.
func (s *shard) removeMemberLocked(g *group, m *member) {
	stopTimer(m.sessionTimer)
	m.timerSeq++
	s.answerJoinLocked(m, joinError(kerr.UnknownMemberID.Code, m.id))
	s.answerSyncLocked(m, &syncResult{code: kerr.UnknownMemberID.Code})
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// removeMemberAndUpdateGroupLocked removes m and rebalances the rest.
func (s *shard) removeMemberAndUpdateGroupLocked(g *group, m *member, reason string) {
	s.removeMemberLocked(g, m)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		s.prepareRebalanceLocked(g, reason)
		s.tryCompleteJoinLocked(g)
	case statePreparingRebalance:
		s.tryCompleteJoinLocked(g)
	}
}

// scheduleSessionLocked (re)starts m's session timeout.
func (s *shard) scheduleSessionLocked(g *group, m *member) {
	stopTimer(m.sessionTimer)
	m.timerSeq++
	seq := m.timerSeq
	m.sessionTimer = s.afterFunc(m.sessionTimeout, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.unloadedLocked() || s.mu.groups[g.id] != g || g.members[m.id] != m || m.timerSeq != seq {
			return
		}
		if m.joinCh != nil || m.syncCh != nil {
			// Members parked in JoinGroup/SyncGroup cannot heartbeat; the
			// rebalance and sync timeouts bound their wait instead.
			s.scheduleSessionLocked(g, m)
			return
		}
		s.c.cfg.Logger.Info("member session expired", "group", g.id, "member", m.id)
		s.removeMemberAndUpdateGroupLocked(g, m, "session timeout")
	})
}

// addPendingMemberLocked remembers a member id handed out with
// MEMBER_ID_REQUIRED; it lapses after the session timeout.
func (s *shard) addPendingMemberLocked(g *group, id string, session time.Duration) {
	var t *time.Timer
	t = s.afterFunc(session, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.unloadedLocked() || s.mu.groups[g.id] != g || g.pending[id] != t {
			return
		}
		delete(g.pending, id)
		s.tryCompleteJoinLocked(g)
	})
	g.pending[id] = t
}

// replaceStaticMemberLocked gives old's slot to newID and fences old.
func (s *shard) replaceStaticMemberLocked(g *group, old *member, newID string) *member {
	stopTimer(old.sessionTimer)
	old.timerSeq++
	s.answerJoinLocked(old, joinError(kerr.FencedInstanceID.Code, old.id))
	s.answerSyncLocked(old, &syncResult{code: kerr.FencedInstanceID.Code})
	m := &member{
		id: newID, instanceID: old.instanceID, clientID: old.clientID, clientHost: old.clientHost,
		rebalanceTimeout: old.rebalanceTimeout, sessionTimeout: old.sessionTimeout,
		protocolType: old.protocolType, protocols: old.protocols, assignment: old.assignment, seq: old.seq,
	}
	delete(g.members, old.id)
	g.members[newID] = m
	g.static[m.instanceID] = newID
	if g.leader == old.id {
		g.leader = newID
	}
	if g.pendingSync[old.id] {
		delete(g.pendingSync, old.id)
		g.pendingSync[newID] = true
	}
	return m
}
