package raft

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The metadata log serves each voter change to observers as Kafka's
// quorum leader writes it (KIP-853): a control batch holding one
// KRaftVoters control record whose value is a VotersRecord, the whole
// voter set after the change. A broker-only node follows the voters so,
// and the leader through Fetch's CurrentLeader and NodeEndpoints.

// votersControlKey is the key of a KRaftVoters control record.
func votersControlKey() []byte {
	k := kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyTypeKraftVoters}
	return k.AppendTo(nil)
}

// isVotersControlKey reports whether key is a KRaftVoters control key.
func isVotersControlKey(key []byte) bool {
	var k kmsg.ControlRecordKey
	return k.ReadFrom(key) == nil && k.Type == kmsg.ControlRecordKeyTypeKraftVoters
}

// appendVotersRecord encodes vs as VotersRecord version 0 (flexible).
// Each voter supports kraft.version 0-1, what Samsa implements.
func appendVotersRecord(dst []byte, vs []Voter) []byte {
	dst = kbin.AppendInt16(dst, 0)
	dst = kbin.AppendCompactArrayLen(dst, len(vs))
	for _, v := range vs {
		dst = kbin.AppendInt32(dst, int32(v.ID))
		dst = kbin.AppendUuid(dst, v.DirectoryID)
		dst = kbin.AppendCompactArrayLen(dst, len(v.Endpoints))
		for _, e := range v.Endpoints {
			dst = kbin.AppendCompactString(dst, e.Name)
			dst = kbin.AppendCompactString(dst, e.Host)
			dst = kbin.AppendUint16(dst, e.Port)
			dst = kbin.AppendUvarint(dst, 0) // no tagged fields
		}
		dst = kbin.AppendInt16(dst, 0)
		dst = kbin.AppendInt16(dst, 1)
		dst = kbin.AppendUvarint(dst, 0) // KRaftVersionFeature's tags
		dst = kbin.AppendUvarint(dst, 0) // the voter's
	}
	return kbin.AppendUvarint(dst, 0)
}

// readVotersRecord decodes a VotersRecord; tagged fields are skipped.
func readVotersRecord(src []byte) ([]Voter, error) {
	b := kbin.Reader{Src: src}
	if ver := b.Int16(); ver != 0 {
		return nil, errors.New("VotersRecord: unknown version")
	}
	n := b.CompactArrayLen()
	var vs []Voter
	for i := int32(0); i < n && b.Ok(); i++ {
		v := Voter{ID: uint64(b.Int32()), DirectoryID: b.Uuid()}
		ne := b.CompactArrayLen()
		for j := int32(0); j < ne && b.Ok(); j++ {
			v.Endpoints = append(v.Endpoints, Endpoint{Name: b.CompactString(), Host: b.CompactString(), Port: b.Uint16()})
			skipTags(&b)
		}
		b.Int16()
		b.Int16()
		skipTags(&b)
		skipTags(&b)
		vs = append(vs, v)
	}
	skipTags(&b)
	if err := b.Complete(); err != nil {
		return nil, errors.New("VotersRecord: truncated")
	}
	return vs, nil
}

func skipTags(b *kbin.Reader) {
	for n := b.Uvarint(); n > 0 && b.Ok(); n-- {
		b.Uvarint()
		b.Span(int(b.Uvarint()))
	}
}

// votersAfter is the voter set once cc is applied: the current voters
// (with what is known of them) changed by cc, whose added or updated
// voter is v. Learners are not voters. It runs on the node goroutine.
func (n *Node) votersAfter(cc *pb.ConfChangeV2, v Voter) []Voter {
	ids := slices.Clone(n.confState.GetVoters())
	for _, ch := range cc.GetChanges() {
		id := ch.GetNodeId()
		switch ch.GetType() {
		case pb.ConfChangeAddNode:
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		case pb.ConfChangeRemoveNode, pb.ConfChangeAddLearnerNode:
			ids = slices.DeleteFunc(ids, func(x uint64) bool { return x == id })
		}
	}
	slices.Sort(ids)
	out := make([]Voter, 0, len(ids))
	for _, id := range ids {
		if id == v.ID {
			out = append(out, v)
		} else {
			out = append(out, n.voterInfo(id))
		}
	}
	return out
}
