package share

// The records of __share_group_state, in Kafka 4.4's exact encoding
// (share-coordinator's ShareSnapshotKey/Value and ShareUpdateKey/Value),
// so that Kafka could load our topic and we Kafka's.
//
// Key (not flexible), both record types:
//
//	int16  record type: 0 ShareSnapshot, 1 ShareUpdate
//	string group id (int16 length + bytes)
//	uuid   topic id (16 bytes)
//	int32  partition
//
// Value (flexible version 0):
//
//	int16  version 0
//	int32  snapshot epoch
//	int32  state epoch           (ShareSnapshot only)
//	int32  leader epoch
//	int64  start offset
//	int64  create timestamp (ms) (ShareSnapshot only)
//	int64  write timestamp (ms)  (ShareSnapshot only)
//	compact array of state batches:
//	    int64 first offset, int64 last offset, int8 delivery state,
//	    int16 delivery count, tagged fields (none)
//	tagged fields: tag 0 = int32 delivery complete count (KIP-1226),
//	    written only when it is not -1
//
// A ShareSnapshot key with no value is the tombstone of a deleted share
// partition.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// Record types: the int16 that opens every key.
const (
	typeSnapshot int16 = 0
	typeUpdate   int16 = 1
)

// Key names one share partition: a group's state for one partition of
// one topic ("groupId:topicId:partition" as a coordinator key).
type Key struct {
	GroupID   string
	TopicID   [16]byte
	Partition int32
}

// Batch is a range of offsets past the start offset in one delivery
// state (0 available, 2 acknowledged, 4 archived) with its delivery
// count.
type Batch struct {
	FirstOffset, LastOffset int64
	DeliveryState           int8
	DeliveryCount           int16
}

// value is the payload of a ShareSnapshot (snapshot true) or a
// ShareUpdate record. StateEpoch and the timestamps are the snapshot's
// only.
type value struct {
	snapshot              bool
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32 // -1: not set
	CreateTimestamp       int64
	WriteTimestamp        int64
	Batches               []Batch
}

// encodeKey is the record key of k for a record of type typ.
func encodeKey(typ int16, k Key) []byte {
	b := kbin.AppendInt16(nil, typ)
	b = kbin.AppendString(b, k.GroupID)
	b = kbin.AppendUuid(b, k.TopicID)
	return kbin.AppendInt32(b, k.Partition)
}

// encodeValue is the record value of v.
func encodeValue(v *value) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, v.SnapshotEpoch)
	if v.snapshot {
		b = kbin.AppendInt32(b, v.StateEpoch)
	}
	b = kbin.AppendInt32(b, v.LeaderEpoch)
	b = kbin.AppendInt64(b, v.StartOffset)
	if v.snapshot {
		b = kbin.AppendInt64(b, v.CreateTimestamp)
		b = kbin.AppendInt64(b, v.WriteTimestamp)
	}
	b = kbin.AppendCompactArrayLen(b, len(v.Batches))
	for _, sb := range v.Batches {
		b = kbin.AppendInt64(b, sb.FirstOffset)
		b = kbin.AppendInt64(b, sb.LastOffset)
		b = kbin.AppendInt8(b, sb.DeliveryState)
		b = kbin.AppendInt16(b, sb.DeliveryCount)
		b = kbin.AppendUvarint(b, 0) // no tagged fields
	}
	if v.DeliveryCompleteCount == -1 {
		return kbin.AppendUvarint(b, 0)
	}
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0
	b = kbin.AppendUvarint(b, 4) // its size
	return kbin.AppendInt32(b, v.DeliveryCompleteCount)
}

// snapshotRecord and updateRecord are the records of v for k;
// tombstoneRecord deletes k.
func snapshotRecord(k Key, v value) coordinator.KV {
	v.snapshot = true
	return coordinator.KV{Key: encodeKey(typeSnapshot, k), Value: encodeValue(&v)}
}

func updateRecord(k Key, v value) coordinator.KV {
	v.snapshot = false
	return coordinator.KV{Key: encodeKey(typeUpdate, k), Value: encodeValue(&v)}
}

func tombstoneRecord(k Key) coordinator.KV {
	return coordinator.KV{Key: encodeKey(typeSnapshot, k)}
}

// errUnknownType is a record of a type this coordinator does not know;
// Kafka's loader skips such records, and so does replay.
var errUnknownType = errors.New("unknown record type")

// decodeRecord parses one record: its type and key, and its value (nil for
// a tombstone).
func decodeRecord(kv coordinator.KV) (typ int16, k Key, v *value, err error) {
	r := kbin.Reader{Src: kv.Key}
	typ = r.Int16()
	if typ != typeSnapshot && typ != typeUpdate {
		return typ, k, nil, fmt.Errorf("%w %d", errUnknownType, typ)
	}
	k.GroupID = r.String()
	k.TopicID = r.Uuid()
	k.Partition = r.Int32()
	if err := r.Complete(); err != nil {
		return typ, k, nil, fmt.Errorf("share record key: %w", err)
	}
	if kv.Value == nil {
		return typ, k, nil, nil
	}
	v, err = decodeValue(kv.Value, typ == typeSnapshot)
	return typ, k, v, err
}

func decodeValue(src []byte, snapshot bool) (*value, error) {
	r := kbin.Reader{Src: src}
	if version := r.Int16(); version != 0 {
		return nil, fmt.Errorf("share record value version %d: want 0", version)
	}
	v := &value{snapshot: snapshot, DeliveryCompleteCount: -1}
	v.SnapshotEpoch = r.Int32()
	if snapshot {
		v.StateEpoch = r.Int32()
	}
	v.LeaderEpoch = r.Int32()
	v.StartOffset = r.Int64()
	if snapshot {
		v.CreateTimestamp = r.Int64()
		v.WriteTimestamp = r.Int64()
	}
	n := r.CompactArrayLen()
	if n > 0 && int(n) <= len(src) {
		v.Batches = make([]Batch, 0, n)
	}
	for i := int32(0); i < n && r.Ok(); i++ {
		var b Batch
		b.FirstOffset = r.Int64()
		b.LastOffset = r.Int64()
		b.DeliveryState = r.Int8()
		b.DeliveryCount = r.Int16()
		skipTags(&r)
		v.Batches = append(v.Batches, b)
	}
	for tags := r.Uvarint(); tags > 0 && r.Ok(); tags-- {
		tag, size := r.Uvarint(), r.Uvarint()
		data := kbin.Reader{Src: r.Span(int(size))}
		if tag == 0 {
			v.DeliveryCompleteCount = data.Int32()
		}
	}
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("share record value: %w", err)
	}
	return v, nil
}

// skipTags skips a tagged-field section this version does not define.
func skipTags(r *kbin.Reader) {
	for tags := r.Uvarint(); tags > 0 && r.Ok(); tags-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}
