package group

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the state of a streams group (KIP-1071) and how records
// change it. A streams group is a group type of the group coordinator: it
// shares the group namespace and the offsets map with classic and
// consumer groups, and lives in __consumer_offsets as records 17-23.

// smember is a member of a streams group: its metadata and its current
// assignment, exactly what the records hold.
type smember struct {
	id string
	sgMemberMeta
	sgMemberCur
}

// streamsGroup is the KIP-1071 state of a group; it hangs off group.sg.
type streamsGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	metadataHash    int64 // hash of the topology's topics at epoch
	topology        *sgTopology
	members         map[string]*smember
	target          map[string]taskSet // member id -> target tasks
	owner           map[taskID]string  // active task -> member owning or revoking it
	timers          map[string]*memberTimers

	// In memory only, as in Kafka: the last heartbeat's view of whether
	// the topology can be assigned, the endpoint information epoch, and
	// whether a member asked the application to shut down.
	notReady      bool
	endpointEpoch int32
	shutdown      bool
	delaying      bool // the initial rebalance delay runs
	delaySeq      uint64
	// The changelog offsets and end offsets each member last reported
	// (TaskOffsets, TaskEndOffsets), for StreamsGroupDescribe.
	taskOffsets map[string][2][]kmsg.TaskOffset
}

func newStreamsGroup() *streamsGroup {
	return &streamsGroup{
		members: map[string]*smember{},
		target:  map[string]taskSet{},
		owner:   map[taskID]string{},
		timers:  map[string]*memberTimers{},

		taskOffsets: map[string][2][]kmsg.TaskOffset{},
	}
}

// state is Kafka's StreamsGroup.StreamsGroupState, as StreamsGroupDescribe
// and ListGroups name it.
func (sg *streamsGroup) state() string {
	switch {
	case len(sg.members) == 0:
		return "Empty"
	case sg.topology == nil || sg.notReady:
		return "NotReady"
	case sg.epoch > sg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range sg.members {
		if m.epoch != sg.assignmentEpoch || m.state != msStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (sg *streamsGroup) sortedMembers() []*smember {
	ms := slices.Collect(maps.Values(sg.members))
	slices.SortFunc(ms, func(a, b *smember) int { return compareStrings(a.id, b.id) })
	return ms
}

// setOwnership moves the active tasks m owns (assigned or pending
// revocation) from old to cur in the owner index.
func (sg *streamsGroup) setOwnership(id string, old, cur *sgMemberCur) {
	if old != nil {
		drop := func(t taskID) {
			if sg.owner[t] == id {
				delete(sg.owner, t)
			}
		}
		old.assigned.active.each(drop)
		old.pending.active.each(drop)
	}
	if cur != nil {
		set := func(t taskID) { sg.owner[t] = id }
		cur.assigned.active.each(set)
		cur.pending.active.each(set)
	}
}

func (sg *streamsGroup) stopTimers(id string) {
	if t := sg.timers[id]; t != nil {
		stopTimer(t.session)
		stopTimer(t.revoke)
		t.seq++
		t.revokeSeq++
		delete(sg.timers, id)
	}
}

func (sg *streamsGroup) stopAllTimers() {
	for id := range sg.timers {
		sg.stopTimers(id)
	}
}

// replayStreamsLocked applies one streams group record, on load and after
// every successful append of records the coordinator decided.
func (s *shard) replayStreamsLocked(kv KV) error {
	r, err := decodeSGRecord(kv)
	if err != nil {
		return err
	}
	s.applyStreamsLocked(r)
	return nil
}

func (s *shard) applyStreamsLocked(r *sgRecord) {
	g := s.mu.groups[r.group]
	if r.del && (g == nil || g.sg == nil) {
		return
	}
	if g == nil {
		g = newGroup(r.group, s.c.cfg.Now())
		s.mu.groups[r.group] = g
	}
	if g.sg == nil {
		g.sg = newStreamsGroup()
	}
	sg := g.sg
	switch r.typ {
	case sgMetadataType:
		if r.del {
			sg.stopAllTimers()
			g.sg = nil
			if len(g.offsets) == 0 {
				delete(s.mu.groups, r.group)
			}
			return
		}
		sg.epoch, sg.metadataHash = r.epoch, r.hash
	case sgTopologyType:
		if r.del {
			sg.topology = nil
		} else {
			sg.topology = r.topology
		}
	case sgTargetMetadataType:
		if !r.del {
			sg.assignmentEpoch = r.epoch
		}
	case sgTargetMemberType:
		if r.del {
			delete(sg.target, r.member)
		} else {
			sg.target[r.member] = r.target
		}
	case sgMemberMetadataType:
		m := sg.members[r.member]
		if r.del {
			if m != nil {
				sg.setOwnership(m.id, &m.sgMemberCur, nil)
				delete(sg.members, m.id)
				delete(sg.taskOffsets, m.id)
			}
			sg.stopTimers(r.member)
			if len(sg.members) == 0 {
				sg.shutdown = false
			}
			return
		}
		if m == nil {
			m = &smember{id: r.member, sgMemberCur: emptyCur()}
			sg.members[m.id] = m
		}
		m.sgMemberMeta = *r.meta
	case sgCurrentMemberType:
		m := sg.members[r.member]
		if m == nil {
			m = &smember{id: r.member, sgMemberCur: emptyCur()}
			sg.members[m.id] = m
		}
		old := m.sgMemberCur
		if r.del {
			m.sgMemberCur = sgMemberCur{epoch: leaveEpoch, prevEpoch: leaveEpoch, state: msStable}
		} else {
			m.sgMemberCur = *r.cur
		}
		sg.setOwnership(m.id, &old, &m.sgMemberCur)
	}
}

func emptyCur() sgMemberCur {
	return sgMemberCur{state: msStable, assigned: emptyTaskSet(), pending: emptyTaskSet()}
}

func emptyTaskSet() taskSet { return taskSet{active: tasks{}, standby: tasks{}, warmup: tasks{}} }

// sgRemoveMemberRecords are the tombstones that remove a member, in
// Kafka's order: current assignment, target assignment, then metadata.
func sgRemoveMemberRecords(group, member string) []*sgRecord {
	return []*sgRecord{
		{typ: sgCurrentMemberType, group: group, member: member, del: true},
		{typ: sgTargetMemberType, group: group, member: member, del: true},
		{typ: sgMemberMetadataType, group: group, member: member, del: true},
	}
}

// sgDeleteGroupRecords tombstone an empty streams group, group epoch last.
func sgDeleteGroupRecords(group string, sg *streamsGroup) []*sgRecord {
	var recs []*sgRecord
	for _, m := range sg.sortedMembers() {
		recs = append(recs, sgRemoveMemberRecords(group, m.id)...)
	}
	return append(recs,
		&sgRecord{typ: sgTargetMetadataType, group: group, del: true},
		&sgRecord{typ: sgTopologyType, group: group, del: true},
		&sgRecord{typ: sgMetadataType, group: group, del: true},
	)
}

func sgEncodeAll(recs []*sgRecord) []KV {
	kvs := make([]KV, len(recs))
	for i, r := range recs {
		kvs[i] = r.encode()
	}
	return kvs
}

func (s *shard) sgApplyAllLocked(recs []*sgRecord) {
	for _, r := range recs {
		s.applyStreamsLocked(r)
	}
}

// finishStreamsLoadLocked gives every replayed member of a streams group a
// fresh session after a load.
func (s *shard) finishStreamsLoadLocked(g *group) {
	if sg := g.sg; len(sg.members) > 0 && sg.epoch == sg.assignmentEpoch && sg.topology != nil && allEmpty(sg.target) {
		// Perhaps loaded in the middle of an initial rebalance delay:
		// bump the epoch once so the tasks get assigned.
		s.startStreamsDelayLocked(g.id, sg, 0)
	}
	for _, m := range g.sg.sortedMembers() {
		s.scheduleStreamsSessionLocked(g.id, g.sg, m.id)
		if m.state == msUnrevoked {
			s.armStreamsRevokeLocked(g.id, g.sg, m.id, m.epoch, time.Duration(m.rebalanceTimeoutMs)*time.Millisecond)
		}
	}
}

// scheduleStreamsSessionLocked (re)starts member id's session: without a
// heartbeat for the session timeout it is removed and the group epoch
// bumped.
func (s *shard) scheduleStreamsSessionLocked(groupID string, sg *streamsGroup, id string) {
	t := sg.timers[id]
	if t == nil {
		t = &memberTimers{}
		sg.timers[id] = t
	}
	stopTimer(t.session)
	t.seq++
	seq := t.seq
	t.session = s.afterFunc(s.c.settings(groupID).Streams.SessionTimeout, func() {
		s.goTracked(func() { s.expireStreamsMember(groupID, id, seq) })
	})
}

// armStreamsRevokeLocked removes the member if it still has not revoked
// the active tasks it must give up when its rebalance timeout ends, as
// Kafka does, so that the others get them.
func (s *shard) armStreamsRevokeLocked(groupID string, sg *streamsGroup, id string, epoch int32, d time.Duration) {
	t := sg.timers[id]
	if t == nil {
		t = &memberTimers{}
		sg.timers[id] = t
	}
	stopTimer(t.revoke)
	t.revokeSeq++
	seq := t.revokeSeq
	t.revoke = s.afterFunc(d, func() {
		s.goTracked(func() {
			s.removeStreamsMember(groupID, id, "rebalance timeout", func(t *memberTimers, m *smember) bool {
				return t.revokeSeq == seq && m.state == msUnrevoked && m.epoch == epoch
			})
		})
	})
}

// expireStreamsMember removes a member whose session ran out.
func (s *shard) expireStreamsMember(groupID, id string, seq uint64) {
	s.removeStreamsMember(groupID, id, "session timeout", func(t *memberTimers, _ *smember) bool { return t.seq == seq })
}

// removeStreamsMember removes member id if still (checked under the lock)
// says its deadline was not superseded.
func (s *shard) removeStreamsMember(groupID, id, reason string, still func(*memberTimers, *smember) bool) {
	s.p.Write(s.p.Context(), func() ([]KV, func(error)) {
		if s.unloadedLocked() {
			return nil, nil
		}
		g := s.mu.groups[groupID]
		if g == nil || g.sg == nil || g.sg.members[id] == nil {
			return nil, nil
		}
		if t := g.sg.timers[id]; t == nil || !still(t, g.sg.members[id]) {
			return nil, nil
		}
		recs := s.sgLeaveRecordsLocked(groupID, g.sg, id)
		s.c.cfg.Logger.Info("streams group member removed", "group", groupID, "member", id, "reason", reason)
		return sgEncodeAll(recs), func(err error) {
			if err == nil {
				s.sgApplyAllLocked(recs)
			}
		}
	})
}

// sgLeaveRecordsLocked removes member id and bumps the group epoch so the
// others get its tasks.
func (s *shard) sgLeaveRecordsLocked(groupID string, sg *streamsGroup, id string) []*sgRecord {
	recs := sgRemoveMemberRecords(groupID, id)
	return append(recs, &sgRecord{typ: sgMetadataType, group: groupID, epoch: sg.epoch + 1, hash: sg.metadataHash})
}

func allEmpty(target map[string]taskSet) bool {
	for _, ts := range target {
		if !ts.empty() {
			return false
		}
	}
	return true
}

// startStreamsDelayLocked holds back a new group's assignment for d; then
// a group epoch bump makes the next heartbeat compute it with every
// member that joined meanwhile.
func (s *shard) startStreamsDelayLocked(groupID string, sg *streamsGroup, d time.Duration) {
	sg.delaying = true
	sg.delaySeq++
	seq := sg.delaySeq
	s.afterFunc(d, func() {
		s.goTracked(func() {
			s.p.Write(s.p.Context(), func() ([]KV, func(error)) {
				g := s.mu.groups[groupID]
				if s.unloadedLocked() || g == nil || g.sg != sg || sg.delaySeq != seq {
					return nil, nil
				}
				sg.delaying = false
				if len(sg.members) == 0 {
					return nil, nil
				}
				recs := []*sgRecord{{typ: sgMetadataType, group: groupID, epoch: sg.epoch + 1, hash: sg.metadataHash}}
				return sgEncodeAll(recs), func(err error) {
					if err == nil {
						s.sgApplyAllLocked(recs)
					}
				}
			})
		})
	})
}
