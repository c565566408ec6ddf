package group

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Streams group (KIP-1071) record types: the key's leading int16, Kafka's
// CoordinatorRecordType ids. Keys are non-flexible version-0 structs
// (group, then member for member records); values start with an int16
// value version (always 0) and are flexible.
const (
	sgMetadataType       = 17 // StreamsGroupMetadata: group epoch, metadata hash
	sgMemberMetadataType = 19 // StreamsGroupMemberMetadata: what a member said about itself
	sgTargetMetadataType = 20 // StreamsGroupTargetAssignmentMetadata: assignment epoch
	sgTargetMemberType   = 21 // StreamsGroupTargetAssignmentMember: one member's target tasks
	sgCurrentMemberType  = 22 // StreamsGroupCurrentMemberAssignment: epochs, state, owned tasks
	sgTopologyType       = 23 // StreamsGroupTopology: the group's topology
)

// tasks are task ids by subtopology: subtopology id -> sorted partitions.
type tasks map[string][]int32

func (t tasks) equal(o tasks) bool {
	if len(t) != len(o) {
		return false
	}
	for id, ps := range t {
		if !slices.Equal(ps, o[id]) {
			return false
		}
	}
	return true
}

func (t tasks) has(sub string, p int32) bool {
	_, ok := slices.BinarySearch(t[sub], p)
	return ok
}

func (t tasks) size() int {
	n := 0
	for _, ps := range t {
		n += len(ps)
	}
	return n
}

// each calls fn for every task in subtopology, partition order.
func (t tasks) each(fn func(taskID)) {
	for _, sub := range slices.Sorted(maps.Keys(t)) {
		for _, p := range t[sub] {
			fn(taskID{sub, p})
		}
	}
}

func (t tasks) add(id taskID) {
	ps := t[id.sub]
	if i, ok := slices.BinarySearch(ps, id.p); !ok {
		t[id.sub] = slices.Insert(ps, i, id.p)
	}
}

// minus returns the tasks of t that are not in o.
func (t tasks) minus(o tasks) tasks {
	out := tasks{}
	t.each(func(id taskID) {
		if !o.has(id.sub, id.p) {
			out.add(id)
		}
	})
	return out
}

// kmsg renders t as the wire's task list, sorted by subtopology.
func (t tasks) kmsg() []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, sub := range slices.Sorted(maps.Keys(t)) {
		if len(t[sub]) == 0 {
			continue
		}
		out = append(out, kmsg.TaskIDs{SubtopologyID: sub, Partitions: slices.Clone(t[sub])})
	}
	return out
}

func tasksFrom(ts []kmsg.TaskIDs) tasks {
	out := tasks{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out.add(taskID{t.SubtopologyID, p})
		}
	}
	return out
}

// taskID is one task: a subtopology and a partition.
type taskID struct {
	sub string
	p   int32
}

// taskSet is a member's active, standby and warm-up tasks.
type taskSet struct{ active, standby, warmup tasks }

func (a taskSet) equal(b taskSet) bool {
	return a.active.equal(b.active) && a.standby.equal(b.standby) && a.warmup.equal(b.warmup)
}

func (a taskSet) empty() bool { return a.active.size()+a.standby.size()+a.warmup.size() == 0 }

// sgMemberMeta is StreamsGroupMemberMetadataValue. Empty strings stand for
// Kafka's nulls.
type sgMemberMeta struct {
	instanceID, rackID   string
	clientID, clientHost string
	rebalanceTimeoutMs   int32
	topologyEpoch        int32
	processID            string
	endpointHost         string
	endpointPort         uint16
	clientTags           [][2]string
}

func (m *sgMemberMeta) equal(o *sgMemberMeta) bool {
	return m.instanceID == o.instanceID && m.rackID == o.rackID && m.clientID == o.clientID &&
		m.clientHost == o.clientHost && m.rebalanceTimeoutMs == o.rebalanceTimeoutMs &&
		m.topologyEpoch == o.topologyEpoch && m.processID == o.processID &&
		m.endpointHost == o.endpointHost && m.endpointPort == o.endpointPort && slices.Equal(m.clientTags, o.clientTags)
}

// sgMemberCur is StreamsGroupCurrentMemberAssignmentValue.
type sgMemberCur struct {
	epoch, prevEpoch int32
	state            memberState
	assigned         taskSet
	pending          taskSet // tasks pending revocation
}

func (c *sgMemberCur) equal(o *sgMemberCur) bool {
	return c.epoch == o.epoch && c.prevEpoch == o.prevEpoch && c.state == o.state &&
		c.assigned.equal(o.assigned) && c.pending.equal(o.pending)
}

// sgTopology is StreamsGroupTopologyValue: the subtopologies as the
// members sent them.
type sgTopology struct {
	epoch int32
	subs  []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology
}

// sgRecord is one decoded streams group record; which value fields are
// meaningful depends on typ; del marks a tombstone.
type sgRecord struct {
	typ    int16
	group  string
	member string // types 19, 21 and 22
	del    bool

	epoch    int32         // type 17: group epoch; type 20: assignment epoch
	hash     int64         // type 17
	meta     *sgMemberMeta // type 19
	target   taskSet       // type 21
	cur      *sgMemberCur  // type 22
	topology *sgTopology   // type 23
}

func isStreamsKey(key []byte) bool {
	if len(key) < 2 {
		return false
	}
	switch int16(binary.BigEndian.Uint16(key)) {
	case sgMetadataType, sgMemberMetadataType, sgTargetMetadataType, sgTargetMemberType, sgCurrentMemberType, sgTopologyType:
		return true
	}
	return false
}

func sgHasMember(typ int16) bool {
	return typ == sgMemberMetadataType || typ == sgTargetMemberType || typ == sgCurrentMemberType
}

func (r *sgRecord) encode() KV {
	key := kbin.AppendInt16(nil, r.typ)
	key = kbin.AppendString(key, r.group)
	if sgHasMember(r.typ) {
		key = kbin.AppendString(key, r.member)
	}
	if r.del {
		return KV{Key: key}
	}
	v := kbin.AppendInt16(nil, 0)
	switch r.typ {
	case sgMetadataType:
		v = kbin.AppendInt32(v, r.epoch)
		v = kbin.AppendInt64(v, r.hash)
	case sgTargetMetadataType:
		v = kbin.AppendInt32(v, r.epoch)
	case sgMemberMetadataType:
		m := r.meta
		v = kbin.AppendCompactNullableString(v, nullable(m.instanceID))
		v = kbin.AppendCompactNullableString(v, nullable(m.rackID))
		v = kbin.AppendCompactString(v, m.clientID)
		v = kbin.AppendCompactString(v, m.clientHost)
		v = kbin.AppendInt32(v, m.rebalanceTimeoutMs)
		v = kbin.AppendInt32(v, m.topologyEpoch)
		v = kbin.AppendCompactString(v, m.processID)
		if m.endpointHost == "" {
			v = kbin.AppendInt8(v, -1) // user_endpoint is a nullable struct
		} else {
			v = kbin.AppendInt8(v, 1)
			v = kbin.AppendCompactString(v, m.endpointHost)
			v = kbin.AppendUint16(v, m.endpointPort)
			v = kbin.AppendUvarint(v, 0)
		}
		v = kbin.AppendCompactArrayLen(v, len(m.clientTags))
		for _, kv := range m.clientTags {
			v = kbin.AppendCompactString(v, kv[0])
			v = kbin.AppendCompactString(v, kv[1])
			v = kbin.AppendUvarint(v, 0)
		}
	case sgTargetMemberType:
		v = appendTaskSet(v, r.target)
	case sgCurrentMemberType:
		c := r.cur
		v = kbin.AppendInt32(v, c.epoch)
		v = kbin.AppendInt32(v, c.prevEpoch)
		v = kbin.AppendInt8(v, int8(c.state))
		v = appendTaskSet(v, c.assigned)
		v = appendTaskSet(v, c.pending)
	case sgTopologyType:
		v = kbin.AppendInt32(v, r.topology.epoch)
		v = kbin.AppendCompactArrayLen(v, len(r.topology.subs))
		for _, s := range r.topology.subs {
			v = kbin.AppendCompactString(v, s.SubtopologyID)
			v = appendStrings(v, s.SourceTopics)
			v = appendStrings(v, s.SourceTopicRegex)
			v = appendTopicInfos(v, s.StateChangelogTopics)
			v = appendStrings(v, s.RepartitionSinkTopics)
			v = appendTopicInfos(v, s.RepartitionSourceTopics)
			v = kbin.AppendCompactArrayLen(v, len(s.CopartitionGroups))
			for _, g := range s.CopartitionGroups {
				v = appendInt16s(v, g.SourceTopics)
				v = appendInt16s(v, g.SourceTopicRegex)
				v = appendInt16s(v, g.RepartitionSourceTopics)
				v = kbin.AppendUvarint(v, 0)
			}
			v = kbin.AppendUvarint(v, 0)
		}
	}
	v = kbin.AppendUvarint(v, 0) // no tagged fields
	return KV{Key: key, Value: v}
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ss))
	for _, s := range ss {
		dst = kbin.AppendCompactString(dst, s)
	}
	return dst
}

func appendInt16s(dst []byte, xs []int16) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(xs))
	for _, x := range xs {
		dst = kbin.AppendInt16(dst, x)
	}
	return dst
}

func appendTopicInfos(dst []byte, ts []kmsg.TopicInfo) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ts))
	for _, t := range ts {
		dst = kbin.AppendCompactString(dst, t.Topic)
		dst = kbin.AppendInt32(dst, t.NumPartitions)
		dst = kbin.AppendInt16(dst, t.ReplicationFactor)
		dst = kbin.AppendCompactArrayLen(dst, len(t.Configs))
		for _, c := range t.Configs {
			dst = kbin.AppendCompactString(dst, c.Key)
			dst = kbin.AppendCompactString(dst, c.Value)
			dst = kbin.AppendUvarint(dst, 0)
		}
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

func appendTaskSet(dst []byte, s taskSet) []byte {
	for _, t := range []tasks{s.active, s.standby, s.warmup} {
		subs := slices.Sorted(maps.Keys(t))
		subs = slices.DeleteFunc(subs, func(sub string) bool { return len(t[sub]) == 0 })
		dst = kbin.AppendCompactArrayLen(dst, len(subs))
		for _, sub := range subs {
			dst = kbin.AppendCompactString(dst, sub)
			dst = kbin.AppendCompactArrayLen(dst, len(t[sub]))
			for _, p := range t[sub] {
				dst = kbin.AppendInt32(dst, p)
			}
			dst = kbin.AppendUvarint(dst, 0)
		}
	}
	return dst
}

func readTaskSet(b *kbin.Reader) taskSet {
	var s taskSet
	for _, t := range []*tasks{&s.active, &s.standby, &s.warmup} {
		*t = tasks{}
		n := b.CompactArrayLen()
		for i := int32(0); i < n && b.Ok(); i++ {
			sub := b.CompactString()
			np := b.CompactArrayLen()
			for j := int32(0); j < np && b.Ok(); j++ {
				(*t).add(taskID{sub, b.Int32()})
			}
			readTags(b, nil) // assignment epochs (tag 0) are not used
		}
	}
	return s
}

func readStrings(b *kbin.Reader) []string {
	n := b.CompactArrayLen()
	out := []string{}
	for i := int32(0); i < n && b.Ok(); i++ {
		out = append(out, b.CompactString())
	}
	return out
}

func readInt16s(b *kbin.Reader) []int16 {
	n := b.CompactArrayLen()
	out := []int16{}
	for i := int32(0); i < n && b.Ok(); i++ {
		out = append(out, b.Int16())
	}
	return out
}

func readTopicInfos(b *kbin.Reader) []kmsg.TopicInfo {
	n := b.CompactArrayLen()
	out := []kmsg.TopicInfo{}
	for i := int32(0); i < n && b.Ok(); i++ {
		t := kmsg.TopicInfo{Topic: b.CompactString(), NumPartitions: b.Int32(), ReplicationFactor: b.Int16()}
		nc := b.CompactArrayLen()
		for j := int32(0); j < nc && b.Ok(); j++ {
			t.Configs = append(t.Configs, kmsg.TopicInfoConfig{Key: b.CompactString(), Value: b.CompactString()})
			readTags(b, nil)
		}
		readTags(b, nil)
		out = append(out, t)
	}
	return out
}

// decodeSGRecord parses a streams group record; unknown tagged fields are
// skipped.
func decodeSGRecord(kv KV) (*sgRecord, error) {
	kr := kbin.Reader{Src: kv.Key}
	r := &sgRecord{typ: kr.Int16(), group: kr.String()}
	if sgHasMember(r.typ) {
		r.member = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return nil, fmt.Errorf("decoding key of record type %d: %w", r.typ, err)
	}
	if kv.Value == nil {
		r.del = true
		return r, nil
	}
	b := kbin.Reader{Src: kv.Value}
	if ver := b.Int16(); ver != 0 {
		return nil, fmt.Errorf("record type %d: unknown value version %d", r.typ, ver)
	}
	switch r.typ {
	case sgMetadataType:
		r.epoch = b.Int32()
		r.hash = b.Int64()
	case sgTargetMetadataType:
		r.epoch = b.Int32()
	case sgMemberMetadataType:
		m := &sgMemberMeta{}
		m.instanceID = deref(b.CompactNullableString())
		m.rackID = deref(b.CompactNullableString())
		m.clientID = b.CompactString()
		m.clientHost = b.CompactString()
		m.rebalanceTimeoutMs = b.Int32()
		m.topologyEpoch = b.Int32()
		m.processID = b.CompactString()
		if b.Int8() >= 0 {
			m.endpointHost = b.CompactString()
			m.endpointPort = b.Uint16()
			readTags(&b, nil)
		}
		n := b.CompactArrayLen()
		for i := int32(0); i < n && b.Ok(); i++ {
			m.clientTags = append(m.clientTags, [2]string{b.CompactString(), b.CompactString()})
			readTags(&b, nil)
		}
		r.meta = m
	case sgTargetMemberType:
		r.target = readTaskSet(&b)
	case sgCurrentMemberType:
		c := &sgMemberCur{epoch: b.Int32(), prevEpoch: b.Int32(), state: memberState(b.Int8())}
		c.assigned = readTaskSet(&b)
		c.pending = readTaskSet(&b)
		r.cur = c
	case sgTopologyType:
		t := &sgTopology{epoch: b.Int32()}
		n := b.CompactArrayLen()
		for i := int32(0); i < n && b.Ok(); i++ {
			s := kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: b.CompactString()}
			s.SourceTopics = readStrings(&b)
			s.SourceTopicRegex = readStrings(&b)
			s.StateChangelogTopics = readTopicInfos(&b)
			s.RepartitionSinkTopics = readStrings(&b)
			s.RepartitionSourceTopics = readTopicInfos(&b)
			ng := b.CompactArrayLen()
			for j := int32(0); j < ng && b.Ok(); j++ {
				g := kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{
					SourceTopics: readInt16s(&b), SourceTopicRegex: readInt16s(&b), RepartitionSourceTopics: readInt16s(&b),
				}
				readTags(&b, nil)
				s.CopartitionGroups = append(s.CopartitionGroups, g)
			}
			readTags(&b, nil)
			t.subs = append(t.subs, s)
		}
		r.topology = t
	}
	readTags(&b, nil)
	if err := b.Complete(); err != nil {
		return nil, fmt.Errorf("decoding value of record type %d: %w", r.typ, err)
	}
	return r, nil
}
