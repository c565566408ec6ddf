package group

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"time"
)

// This file holds the in-memory state of KIP-848 consumer groups and the
// replay function that is the only way it changes (Kafka's ConsumerGroup and
// the consumer-group half of GroupCoordinatorShard.replay).

// memberState is Kafka's MemberState as stored in
// ConsumerGroupCurrentMemberAssignmentValue.State.
type memberState int8

const (
	msStable     memberState = 1 // reconciled to its epoch's target
	msUnrevoked  memberState = 2 // must revoke partitions before it may move on
	msUnreleased memberState = 3 // waits for partitions other members still own
)

// Member epochs a ConsumerGroupHeartbeat sends to leave.
const (
	leaveEpoch       = -1 // the member leaves for good
	leaveStaticEpoch = -2 // a static member leaves temporarily and keeps its partitions
)

// assignment maps a topic id to its sorted, distinct partitions. Values are
// never mutated once built; changes build new maps.
type assignment map[[16]byte][]int32

func (a assignment) topicIDs() [][16]byte {
	ids := slices.Collect(maps.Keys(a))
	slices.SortFunc(ids, func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

func (a assignment) has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[id], p)
	return ok
}

func (a assignment) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// add returns a copy of a with partition p of topic id added.
func (a assignment) with(id [16]byte, p int32) assignment {
	out := maps.Clone(a)
	if out == nil {
		out = assignment{}
	}
	ps := slices.Clone(a[id])
	if i, ok := slices.BinarySearch(ps, p); !ok {
		ps = slices.Insert(ps, i, p)
	}
	out[id] = ps
	return out
}

// tpid is a partition named by topic id.
type tpid struct {
	id [16]byte
	p  int32
}

func (a assignment) each(fn func(tpid)) {
	for id, ps := range a {
		for _, p := range ps {
			fn(tpid{id, p})
		}
	}
}

// cmember is a member of a consumer group: its metadata and its current
// assignment, exactly what the records hold.
type cmember struct {
	id string
	memberMeta
	memberCur
}

// consumerGroup is the KIP-848 state of a group. It hangs off group.cg so
// classic and consumer groups share one namespace and one offsets map.
type consumerGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	metadataHash    int64 // hash of the subscribed topics' metadata at epoch
	members         map[string]*cmember
	static          map[string]string     // instance id -> member id
	target          map[string]assignment // member id -> target assignment
	owner           map[tpid]string       // partition -> member owning or revoking it
	timers          map[string]*memberTimers
}

// memberTimers are a member's session and revocation deadlines; seq
// invalidates callbacks of replaced timers.
type memberTimers struct {
	session, revoke *time.Timer
	seq, revokeSeq  uint64
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members: map[string]*cmember{},
		static:  map[string]string{},
		target:  map[string]assignment{},
		owner:   map[tpid]string{},
		timers:  map[string]*memberTimers{},
	}
}

// consumerState is Kafka's ConsumerGroup.ConsumerGroupState, named as
// ConsumerGroupDescribe, ListGroups and DescribeGroups report it.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != msStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (cg *consumerGroup) sortedMembers() []*cmember {
	ms := slices.Collect(maps.Values(cg.members))
	slices.SortFunc(ms, func(a, b *cmember) int { return compareStrings(a.id, b.id) })
	return ms
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// setOwnership moves the partitions m owns (assigned or pending revocation)
// from old to cur in the owner index.
func (cg *consumerGroup) setOwnership(id string, old, cur *memberCur) {
	if old != nil {
		drop := func(t tpid) {
			if cg.owner[t] == id {
				delete(cg.owner, t)
			}
		}
		old.assigned.each(drop)
		old.pending.each(drop)
	}
	if cur != nil {
		set := func(t tpid) { cg.owner[t] = id }
		cur.assigned.each(set)
		cur.pending.each(set)
	}
}

func (cg *consumerGroup) stopTimers(id string) {
	if t := cg.timers[id]; t != nil {
		stopTimer(t.session)
		stopTimer(t.revoke)
		t.seq++
		t.revokeSeq++
		delete(cg.timers, id)
	}
}

func (cg *consumerGroup) stopAllTimers() {
	for id := range cg.timers {
		cg.stopTimers(id)
	}
}

// replayConsumerLocked applies one KIP-848 record, on load and after every
// successful append of records the coordinator decided.
func (s *shard) replayConsumerLocked(kv KV) error {
	r, err := decodeCGRecord(kv)
	if err != nil {
		return err
	}
	s.applyConsumerLocked(r)
	return nil
}

func (s *shard) applyConsumerLocked(r *cgRecord) {
	g := s.mu.groups[r.group]
	if r.typ == cgPartitionMetadataType {
		return
	}
	if r.del && (g == nil || g.cg == nil) {
		return
	}
	if g == nil {
		g = newGroup(r.group, s.c.cfg.Now())
		s.mu.groups[r.group] = g
	}
	if g.cg == nil {
		g.cg = newConsumerGroup()
	}
	cg := g.cg
	switch r.typ {
	case cgMetadataType:
		if r.del {
			cg.stopAllTimers()
			g.cg = nil
			if len(g.offsets) == 0 {
				delete(s.mu.groups, r.group)
			}
			return
		}
		cg.epoch, cg.metadataHash = r.epoch, r.hash
	case cgTargetMetadataType:
		if !r.del {
			cg.assignmentEpoch = r.epoch
		}
	case cgTargetMemberType:
		if r.del {
			delete(cg.target, r.member)
		} else {
			cg.target[r.member] = r.target
		}
	case cgMemberMetadataType:
		m := cg.members[r.member]
		if r.del {
			if m != nil {
				cg.setOwnership(m.id, &m.memberCur, nil)
				if cg.static[m.instanceID] == m.id {
					delete(cg.static, m.instanceID)
				}
				delete(cg.members, m.id)
			}
			cg.stopTimers(r.member)
			return
		}
		if m == nil {
			m = &cmember{id: r.member, memberCur: memberCur{state: msStable}}
			cg.members[m.id] = m
		}
		if m.instanceID != "" && cg.static[m.instanceID] == m.id {
			delete(cg.static, m.instanceID)
		}
		m.memberMeta = *r.meta
		if m.instanceID != "" {
			cg.static[m.instanceID] = m.id
		}
	case cgCurrentMemberType:
		m := cg.members[r.member]
		if m == nil {
			// Kafka writes the subscription first; tolerate any order.
			m = &cmember{id: r.member}
			cg.members[m.id] = m
		}
		old := m.memberCur
		if r.del {
			m.memberCur = memberCur{epoch: leaveEpoch, prevEpoch: leaveEpoch, state: msStable}
		} else {
			m.memberCur = *r.cur
		}
		cg.setOwnership(m.id, &old, &m.memberCur)
	}
}

// removeMemberRecords are the tombstones that remove a member, in Kafka's
// order: current assignment, target assignment, then subscription.
func removeMemberRecords(group, member string) []*cgRecord {
	return []*cgRecord{
		{typ: cgCurrentMemberType, group: group, member: member, del: true},
		{typ: cgTargetMemberType, group: group, member: member, del: true},
		{typ: cgMemberMetadataType, group: group, member: member, del: true},
	}
}

// deleteGroupRecords tombstone an empty consumer group, group epoch last
// (Kafka's ConsumerGroup.createGroupTombstoneRecords).
func deleteGroupRecords(group string, cg *consumerGroup) []*cgRecord {
	var recs []*cgRecord
	for _, m := range cg.sortedMembers() {
		recs = append(recs, removeMemberRecords(group, m.id)...)
	}
	return append(recs,
		&cgRecord{typ: cgTargetMetadataType, group: group, del: true},
		&cgRecord{typ: cgPartitionMetadataType, group: group, del: true},
		&cgRecord{typ: cgMetadataType, group: group, del: true},
	)
}

func encodeAll(recs []*cgRecord) []KV {
	kvs := make([]KV, len(recs))
	for i, r := range recs {
		kvs[i] = r.encode()
	}
	return kvs
}

func (s *shard) applyAllLocked(recs []*cgRecord) {
	for _, r := range recs {
		s.applyConsumerLocked(r)
	}
}

// String is for logs.
func (a assignment) String() string {
	var b bytes.Buffer
	for _, id := range a.topicIDs() {
		fmt.Fprintf(&b, "%x:%v ", id[:4], a[id])
	}
	return b.String()
}
