package group

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// KIP-932 share-group record types in __consumer_offsets: the key's leading
// int16, as Kafka's coordinator-record schemas number them. Keys are
// non-flexible; values start with an int16 value version (0) and are
// flexible, like the KIP-848 records (consumer_records.go).
const (
	sgPartitionMetadataType      = 9  // ShareGroupPartitionMetadata: read and ignored (removed by Kafka 4.1)
	shareMemberMetadataType      = 10 // ShareGroupMemberMetadata: a member's rack, client and subscription
	shareMetadataType            = 11 // ShareGroupMetadata: the group epoch
	shareTargetMetadataType      = 12 // ShareGroupTargetAssignmentMetadata: the target assignment epoch
	shareTargetMemberType        = 13 // ShareGroupTargetAssignmentMember: one member's target
	shareCurrentMemberType       = 14 // ShareGroupCurrentMemberAssignment: epochs and assigned partitions
	sgStatePartitionMetadataType = 15 // ShareGroupStatePartitionMetadata: the partitions with share state
)

// shareRecord is one decoded share-group record; which value fields are
// meaningful depends on typ, and del marks a tombstone.
type shareRecord struct {
	typ    int16
	group  string
	member string // types 10, 13 and 14
	del    bool

	epoch  int32      // type 11: group epoch; type 12: assignment epoch
	meta   *shareMeta // type 10
	target assignment // type 13
	cur    *shareCur  // type 14
	init   initTopics // type 15: InitializedTopics (Initializing and Deleting are not used)
}

// initTopics are the partitions of each topic a share group has share
// state for, with the topic's name.
type initTopics map[[16]byte]initTopic

type initTopic struct {
	name       string
	partitions []int32 // sorted
}

// shareMeta is ShareGroupMemberMetadataValue. Empty strings stand for
// Kafka's nulls.
type shareMeta struct {
	rackID, clientID, clientHost string
	topics                       []string // sorted, deduplicated
}

// shareCur is ShareGroupCurrentMemberAssignmentValue. A share member
// takes its target at once (partitions are shared, nothing is revoked
// first), so its state is always stable.
type shareCur struct {
	epoch, prevEpoch int32
	assigned         assignment
}

func (m *shareMeta) equal(o *shareMeta) bool {
	return m.rackID == o.rackID && m.clientID == o.clientID && m.clientHost == o.clientHost && slices.Equal(m.topics, o.topics)
}

// isShareKey reports whether key is a share-group record.
func isShareKey(key []byte) bool {
	if len(key) < 2 {
		return false
	}
	v := int16(binary.BigEndian.Uint16(key))
	return v >= sgPartitionMetadataType && v <= sgStatePartitionMetadataType
}

func (r *shareRecord) hasMember() bool {
	return r.typ == shareMemberMetadataType || r.typ == shareTargetMemberType || r.typ == shareCurrentMemberType
}

// encode returns the record as stored in __consumer_offsets.
func (r *shareRecord) encode() KV {
	key := kbin.AppendInt16(nil, r.typ)
	key = kbin.AppendString(key, r.group)
	if r.hasMember() {
		key = kbin.AppendString(key, r.member)
	}
	if r.del {
		return KV{Key: key}
	}
	v := kbin.AppendInt16(nil, 0)
	switch r.typ {
	case shareMetadataType, shareTargetMetadataType:
		v = kbin.AppendInt32(v, r.epoch)
	case shareMemberMetadataType:
		m := r.meta
		v = kbin.AppendCompactNullableString(v, nullable(m.rackID))
		v = kbin.AppendCompactString(v, m.clientID)
		v = kbin.AppendCompactString(v, m.clientHost)
		v = kbin.AppendCompactArrayLen(v, len(m.topics))
		for _, t := range m.topics {
			v = kbin.AppendCompactString(v, t)
		}
	case shareTargetMemberType:
		v = appendTopicPartitions(v, r.target)
	case sgStatePartitionMetadataType:
		v = kbin.AppendCompactArrayLen(v, 0) // InitializingTopics
		ids := make(assignment, len(r.init))
		for id := range r.init {
			ids[id] = nil
		}
		v = kbin.AppendCompactArrayLen(v, len(ids))
		for _, id := range ids.topicIDs() {
			t := r.init[id]
			v = kbin.AppendUuid(v, id)
			v = kbin.AppendCompactString(v, t.name)
			v = kbin.AppendCompactArrayLen(v, len(t.partitions))
			for _, p := range t.partitions {
				v = kbin.AppendInt32(v, p)
			}
			v = kbin.AppendUvarint(v, 0)
		}
		v = kbin.AppendCompactArrayLen(v, 0) // DeletingTopics
	case shareCurrentMemberType:
		c := r.cur
		v = kbin.AppendInt32(v, c.epoch)
		v = kbin.AppendInt32(v, c.prevEpoch)
		v = kbin.AppendInt8(v, int8(msStable))
		v = appendTopicPartitions(v, c.assigned)
	}
	v = kbin.AppendUvarint(v, 0) // no tagged fields
	return KV{Key: key, Value: v}
}

// decodeShareRecord parses a share-group record; unknown tagged fields are
// skipped.
func decodeShareRecord(kv KV) (*shareRecord, error) {
	kr := kbin.Reader{Src: kv.Key}
	r := &shareRecord{typ: kr.Int16(), group: kr.String()}
	if r.hasMember() {
		r.member = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return nil, fmt.Errorf("decoding key of share record type %d: %w", r.typ, err)
	}
	if kv.Value == nil {
		r.del = true
		return r, nil
	}
	b := kbin.Reader{Src: kv.Value}
	if ver := b.Int16(); ver != 0 {
		return nil, fmt.Errorf("share record type %d: unknown value version %d", r.typ, ver)
	}
	switch r.typ {
	case sgPartitionMetadataType:
		return r, nil // never applied; no need to parse
	case sgStatePartitionMetadataType:
		r.init = initTopics{}
		readShareTopicInfos(&b, true, nil) // InitializingTopics: not used
		readShareTopicInfos(&b, true, r.init)
		readShareTopicInfos(&b, false, nil) // DeletingTopics: not used
	case shareMetadataType, shareTargetMetadataType:
		r.epoch = b.Int32()
	case shareMemberMetadataType:
		m := &shareMeta{}
		m.rackID = deref(b.CompactNullableString())
		m.clientID = b.CompactString()
		m.clientHost = b.CompactString()
		n := b.CompactArrayLen()
		for i := int32(0); i < n && b.Ok(); i++ {
			m.topics = append(m.topics, b.CompactString())
		}
		r.meta = m
	case shareTargetMemberType:
		r.target = readTopicPartitions(&b)
	case shareCurrentMemberType:
		c := &shareCur{epoch: b.Int32(), prevEpoch: b.Int32()}
		_ = b.Int8() // State: always stable for share members
		c.assigned = readTopicPartitions(&b)
		r.cur = c
	}
	readTags(&b, nil)
	if err := b.Complete(); err != nil {
		return nil, fmt.Errorf("decoding value of share record type %d: %w", r.typ, err)
	}
	return r, nil
}

func encodeShare(recs []*shareRecord) []KV {
	kvs := make([]KV, len(recs))
	for i, r := range recs {
		kvs[i] = r.encode()
	}
	return kvs
}

// readShareTopicInfos reads []TopicPartitionsInfo (withPartitions) or
// []TopicInfo, into into when not nil.
func readShareTopicInfos(b *kbin.Reader, withPartitions bool, into initTopics) {
	n := b.CompactArrayLen()
	for i := int32(0); i < n && b.Ok(); i++ {
		id := b.Uuid()
		t := initTopic{name: b.CompactString()}
		if withPartitions {
			np := b.CompactArrayLen()
			for j := int32(0); j < np && b.Ok(); j++ {
				t.partitions = append(t.partitions, b.Int32())
			}
			slices.Sort(t.partitions)
		}
		readTags(b, nil)
		if into != nil {
			into[id] = t
		}
	}
}
