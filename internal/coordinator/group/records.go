package group

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record schema versions, as Kafka 4 writes them. Kafka keeps writing the
// newest non-flexible value versions (OffsetCommitValue v3, GroupMetadataValue
// v3) so that older readers and tools keep working.
const (
	offsetKeyVersion          = 1
	groupKeyVersion           = 2
	offsetValueVersion        = 3
	offsetValueVersionExpire  = 1 // carries ExpireTimestamp (OffsetCommit v1-v4 retention)
	groupMetadataValueVersion = 3
)

// tp is a topic partition.
type tp struct {
	topic     string
	partition int32
}

// offsetEntry is one committed offset as stored in OffsetCommitValue.
type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitMs    int64
	expireMs    int64 // -1: none; only explicit-retention (v1 value) commits set it
	// seq orders records of the partition as replayed: a transactional
	// offset that commits must not replace a plain commit written after it.
	seq int64
}

func offsetKey(group string, t tp) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: t.topic, Partition: t.partition}
	return k.AppendTo(nil)
}

func offsetRecord(group string, t tp, e offsetEntry) KV {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	if e.expireMs >= 0 {
		v.Version = offsetValueVersionExpire
		v.ExpireTimestamp = e.expireMs
	}
	v.Offset = e.offset
	v.LeaderEpoch = e.leaderEpoch
	v.Metadata = e.metadata
	v.CommitTimestamp = e.commitMs
	return KV{Key: offsetKey(group, t), Value: v.AppendTo(nil)}
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// groupRecord snapshots g as Kafka's GroupMetadataValue. assignments, when
// non-nil, replaces the members' assignments (the leader's SyncGroup is
// stored before it is applied).
func groupRecord(g *group, now time.Time, assignments map[string][]byte) KV {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		v.Protocol = ptr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = ptr(g.leader)
	}
	v.CurrentStateTimestamp = now.UnixMilli()
	for _, m := range g.sortedMembers() {
		mv := kmsg.NewGroupMetadataValueMember()
		mv.MemberID = m.id
		if m.instanceID != "" {
			mv.InstanceID = ptr(m.instanceID)
		}
		mv.ClientID = m.clientID
		mv.ClientHost = m.clientHost
		mv.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		mv.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		mv.Subscription = m.metadataFor(g.protocol)
		mv.Assignment = m.assignment
		if assignments != nil {
			mv.Assignment = assignments[m.id]
		}
		v.Members = append(v.Members, mv)
	}
	return KV{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// parsedKey is a decoded __consumer_offsets key.
type parsedKey struct {
	isOffset bool
	group    string
	tp       tp
}

// parseKey decodes a key; ok is false for record types this coordinator does
// not own (KIP-848 and share-group records, versions 3 and up).
func parseKey(b []byte) (k parsedKey, ok bool, err error) {
	if len(b) < 2 {
		return k, false, fmt.Errorf("key of %d bytes is too short", len(b))
	}
	switch ver := int16(binary.BigEndian.Uint16(b)); ver {
	case 0, 1:
		var ok kmsg.OffsetCommitKey
		if err := ok.ReadFrom(b); err != nil {
			return k, false, fmt.Errorf("decoding offset commit key: %w", err)
		}
		return parsedKey{isOffset: true, group: ok.Group, tp: tp{ok.Topic, ok.Partition}}, true, nil
	case 2:
		var gk kmsg.GroupMetadataKey
		if err := gk.ReadFrom(b); err != nil {
			return k, false, fmt.Errorf("decoding group metadata key: %w", err)
		}
		return parsedKey{group: gk.Group}, true, nil
	default:
		return k, false, nil
	}
}

func parseOffsetValue(b []byte) (offsetEntry, error) {
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(b); err != nil {
		return offsetEntry{}, fmt.Errorf("decoding offset commit value: %w", err)
	}
	e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitMs: v.CommitTimestamp, expireMs: -1}
	if v.Version >= 3 {
		e.leaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 && v.ExpireTimestamp >= 0 {
		e.expireMs = v.ExpireTimestamp
	}
	return e, nil
}

func ptr[T any](v T) *T { return &v }
