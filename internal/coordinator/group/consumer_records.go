package group

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// KIP-848 record types: the key's leading int16 (Kafka's "apiKey" of the
// coordinator-key schema). Keys are non-flexible version-0 structs; values
// start with an int16 value version (always 0) and are flexible (compact
// strings and arrays, tagged-field buffers).
const (
	cgMetadataType          = 3 // ConsumerGroupMetadata{Key,Value}: group epoch
	cgPartitionMetadataType = 4 // ConsumerGroupPartitionMetadata: read and ignored (deprecated by Kafka 4.1)
	cgMemberMetadataType    = 5 // ConsumerGroupMemberMetadata: a member's subscription
	cgTargetMetadataType    = 6 // ConsumerGroupTargetAssignmentMetadata: target assignment epoch
	cgTargetMemberType      = 7 // ConsumerGroupTargetAssignmentMember: one member's target
	cgCurrentMemberType     = 8 // ConsumerGroupCurrentMemberAssignment: epochs and owned partitions
)

// cgRecord is one decoded KIP-848 record. Which value fields are meaningful
// depends on typ; del marks a tombstone.
type cgRecord struct {
	typ    int16
	group  string
	member string // types 5, 7 and 8
	del    bool

	epoch  int32       // type 3: group epoch; type 6: assignment epoch
	hash   int64       // type 3: MetadataHash (tag 0)
	meta   *memberMeta // type 5
	target assignment  // type 7
	cur    *memberCur  // type 8
}

// memberMeta is ConsumerGroupMemberMetadataValue: what a member sent about
// itself. Empty strings stand for Kafka's nulls.
type memberMeta struct {
	instanceID, rackID   string
	clientID, clientHost string
	topics               []string // sorted, deduplicated
	regex                string
	rebalanceTimeoutMs   int32
	assignor             string
}

// memberCur is ConsumerGroupCurrentMemberAssignmentValue: the member's
// reconciliation state.
type memberCur struct {
	epoch, prevEpoch int32
	state            memberState
	assigned         assignment
	pending          assignment // partitions pending revocation
}

func (m *memberMeta) equal(o *memberMeta) bool {
	return m.instanceID == o.instanceID && m.rackID == o.rackID && m.clientID == o.clientID &&
		m.clientHost == o.clientHost && slices.Equal(m.topics, o.topics) && m.regex == o.regex &&
		m.rebalanceTimeoutMs == o.rebalanceTimeoutMs && m.assignor == o.assignor
}

func (c *memberCur) equal(o *memberCur) bool {
	return c.epoch == o.epoch && c.prevEpoch == o.prevEpoch && c.state == o.state &&
		c.assigned.equal(o.assigned) && c.pending.equal(o.pending)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// encode returns the record as stored in __consumer_offsets.
func (r *cgRecord) encode() KV {
	key := kbin.AppendInt16(nil, r.typ)
	key = kbin.AppendString(key, r.group)
	switch r.typ {
	case cgMemberMetadataType, cgTargetMemberType, cgCurrentMemberType:
		key = kbin.AppendString(key, r.member)
	}
	if r.del {
		return KV{Key: key}
	}
	v := kbin.AppendInt16(nil, 0)
	switch r.typ {
	case cgMetadataType:
		v = kbin.AppendInt32(v, r.epoch)
		if r.hash != 0 {
			v = kbin.AppendUvarint(v, 1) // one tagged field: MetadataHash, tag 0
			v = kbin.AppendUvarint(v, 0)
			v = kbin.AppendUvarint(v, 8)
			v = kbin.AppendInt64(v, r.hash)
			return KV{Key: key, Value: v}
		}
	case cgMemberMetadataType:
		m := r.meta
		v = kbin.AppendCompactNullableString(v, nullable(m.instanceID))
		v = kbin.AppendCompactNullableString(v, nullable(m.rackID))
		v = kbin.AppendCompactString(v, m.clientID)
		v = kbin.AppendCompactString(v, m.clientHost)
		v = kbin.AppendCompactArrayLen(v, len(m.topics))
		for _, t := range m.topics {
			v = kbin.AppendCompactString(v, t)
		}
		v = kbin.AppendCompactNullableString(v, nullable(m.regex))
		v = kbin.AppendInt32(v, m.rebalanceTimeoutMs)
		v = kbin.AppendCompactNullableString(v, nullable(m.assignor))
	case cgTargetMetadataType:
		v = kbin.AppendInt32(v, r.epoch)
	case cgTargetMemberType:
		v = appendTopicPartitions(v, r.target)
	case cgCurrentMemberType:
		c := r.cur
		v = kbin.AppendInt32(v, c.epoch)
		v = kbin.AppendInt32(v, c.prevEpoch)
		v = kbin.AppendInt8(v, int8(c.state))
		v = appendTopicPartitions(v, c.assigned)
		v = appendTopicPartitions(v, c.pending)
	}
	v = kbin.AppendUvarint(v, 0) // no tagged fields
	return KV{Key: key, Value: v}
}

// appendTopicPartitions writes []TopicPartitions{TopicId, Partitions} in
// topic id order so equal assignments encode to equal bytes.
func appendTopicPartitions(dst []byte, a assignment) []byte {
	ids := a.topicIDs()
	dst = kbin.AppendCompactArrayLen(dst, len(ids))
	for _, id := range ids {
		dst = kbin.AppendUuid(dst, id)
		ps := a[id]
		dst = kbin.AppendCompactArrayLen(dst, len(ps))
		for _, p := range ps {
			dst = kbin.AppendInt32(dst, p)
		}
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

// isConsumerKey reports whether key is a KIP-848 consumer group record.
func isConsumerKey(key []byte) bool {
	if len(key) < 2 {
		return false
	}
	v := int16(binary.BigEndian.Uint16(key))
	return v >= cgMetadataType && v <= cgCurrentMemberType
}

// decodeCGRecord parses a KIP-848 record; unknown tagged fields (newer
// Kafka versions add some) are skipped.
func decodeCGRecord(kv KV) (*cgRecord, error) {
	kr := kbin.Reader{Src: kv.Key}
	r := &cgRecord{typ: kr.Int16(), group: kr.String()}
	switch r.typ {
	case cgMemberMetadataType, cgTargetMemberType, cgCurrentMemberType:
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
	case cgMetadataType:
		r.epoch = b.Int32()
		readTags(&b, func(tag uint32, data []byte) {
			if tag == 0 && len(data) == 8 {
				r.hash = int64(binary.BigEndian.Uint64(data))
			}
		})
	case cgPartitionMetadataType:
		return r, nil // never applied; no need to parse
	case cgMemberMetadataType:
		m := &memberMeta{}
		m.instanceID = deref(b.CompactNullableString())
		m.rackID = deref(b.CompactNullableString())
		m.clientID = b.CompactString()
		m.clientHost = b.CompactString()
		n := b.CompactArrayLen()
		for i := int32(0); i < n && b.Ok(); i++ {
			m.topics = append(m.topics, b.CompactString())
		}
		m.regex = deref(b.CompactNullableString())
		m.rebalanceTimeoutMs = b.Int32()
		m.assignor = deref(b.CompactNullableString())
		readTags(&b, nil) // ClassicMemberMetadata: classic members are not supported
		r.meta = m
	case cgTargetMetadataType:
		r.epoch = b.Int32()
		readTags(&b, nil)
	case cgTargetMemberType:
		r.target = readTopicPartitions(&b)
		readTags(&b, nil)
	case cgCurrentMemberType:
		c := &memberCur{epoch: b.Int32(), prevEpoch: b.Int32(), state: memberState(b.Int8())}
		c.assigned = readTopicPartitions(&b)
		c.pending = readTopicPartitions(&b)
		readTags(&b, nil)
		r.cur = c
	}
	if err := b.Complete(); err != nil {
		return nil, fmt.Errorf("decoding value of record type %d: %w", r.typ, err)
	}
	return r, nil
}

func readTopicPartitions(b *kbin.Reader) assignment {
	a := assignment{}
	n := b.CompactArrayLen()
	for i := int32(0); i < n && b.Ok(); i++ {
		id := b.Uuid()
		np := b.CompactArrayLen()
		var ps []int32
		for j := int32(0); j < np && b.Ok(); j++ {
			ps = append(ps, b.Int32())
		}
		readTags(b, nil) // AssignmentEpochs (KIP-1251) is not used
		if len(ps) > 0 {
			slices.Sort(ps)
			a[id] = slices.Compact(ps)
		}
	}
	return a
}

// readTags reads a tagged-field buffer, handing each field to fn if set.
func readTags(b *kbin.Reader, fn func(tag uint32, data []byte)) {
	n := b.Uvarint()
	for i := uint32(0); i < n && b.Ok(); i++ {
		tag := b.Uvarint()
		data := b.Span(int(b.Uvarint()))
		if fn != nil {
			fn(tag, data)
		}
	}
}
