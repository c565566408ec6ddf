package raft

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/record"
)

// A VotersRecord reads back as written, and a reader skips the tagged
// fields a newer writer may add.
func TestVotersRecordRoundTrip(t *testing.T) {
	vs := []Voter{
		{ID: 1, DirectoryID: [16]byte{1, 2}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093}}},
		{ID: 7},
		{ID: 9, DirectoryID: [16]byte{15: 9}, Endpoints: []Endpoint{{Name: "A", Host: "::1", Port: 1}, {Name: "B", Host: "h", Port: 65535}}},
	}
	got, err := readVotersRecord(appendVotersRecord(nil, vs))
	if err != nil || !reflect.DeepEqual(got, vs) {
		t.Fatalf("read %+v, %v; want %+v", got, err, vs)
	}
	if !isVotersControlKey(votersControlKey()) || isVotersControlKey([]byte{0, 0, 0, 1}) {
		t.Fatal("KRaftVoters control key not recognized, or a commit marker taken for one")
	}

	// One voter whose record ends with a tagged field (tag 5, 2 bytes).
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactArrayLen(b, 1)
	b = kbin.AppendInt32(b, 3)
	b = kbin.AppendUuid(b, [16]byte{})
	b = kbin.AppendCompactArrayLen(b, 0)
	b = append(kbin.AppendInt16(kbin.AppendInt16(b, 0), 1), 0)
	b = append(b, 1, 5, 2, 0xab, 0xcd) // one tag: 5, length 2
	b = append(b, 0)
	got, err = readVotersRecord(b)
	if err != nil || len(got) != 1 || got[0].ID != 3 {
		t.Fatalf("read %+v, %v; want voter 3", got, err)
	}
	if _, err := readVotersRecord(b[:len(b)-3]); err == nil {
		t.Fatal("a truncated record read without error")
	}
}

// A voter change reaches observers through the metadata log: snapshots
// fetched with FetchSnapshot carry the voter set, and the leader serves
// each later change as a KRaftVoters control batch holding the new voter
// set; an observer that applies it dials the voter's new endpoint.
func TestMetadataLogServesVoterChanges(t *testing.T) {
	n, _ := openQuorum(t, 1000)
	m := NewMetadataLog(n)
	proposeFeature(t, n, "a", 1)
	moved := Voter{ID: 1, DirectoryID: [16]byte{7}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.9", Port: 9093}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.UpdateVoter(ctx, moved); err != nil {
		t.Fatal(err)
	}
	// A node that never runs is added as a learner (a snapshot follows,
	// so it could catch up) and removed again: one more voter change.
	actx, acancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer acancel()
	if err := n.AddVoter(actx, Voter{ID: 9}); err == nil {
		t.Fatal("AddVoter of a node that never runs succeeded")
	}
	last := proposeFeature(t, n, "b", 1)

	p := onlyPartition(t, m.fetch(ctx, metadataFetch(16, 2, 0)))
	if p.ErrorCode != 0 || p.SnapshotID.EndOffset <= 2 {
		t.Fatalf("fetch from 2: %v, snapshot %+v; want the snapshot taken for the learner", kerr.ErrorForCode(p.ErrorCode), p.SnapshotID)
	}
	sreq := kmsg.NewPtrFetchSnapshotRequest()
	st := kmsg.NewFetchSnapshotRequestTopic()
	st.Topic = MetadataTopic
	sp := kmsg.NewFetchSnapshotRequestTopicPartition()
	sp.SnapshotID.EndOffset, sp.SnapshotID.Epoch = p.SnapshotID.EndOffset, p.SnapshotID.Epoch
	st.Partitions = append(st.Partitions, sp)
	sreq.Topics = append(sreq.Topics, st)
	chunk := m.fetchSnapshot(ctx, sreq).Topics[0].Partitions[0]
	if voters, _, err := unwrapSnapshot(chunk.Bytes); chunk.ErrorCode != 0 || int64(len(chunk.Bytes)) != chunk.Size || err != nil || !reflect.DeepEqual(voters[1], moved) {
		t.Fatalf("FetchSnapshot: %v, %d of %d bytes, voters %+v, %v; want voter %+v", kerr.ErrorForCode(chunk.ErrorCode), len(chunk.Bytes), chunk.Size, voters, err, moved)
	}

	from := p.SnapshotID.EndOffset
	p = onlyPartition(t, m.fetch(ctx, metadataFetch(16, from, 0)))
	var found bool
	for b := p.RecordBatches; len(b) > 0; {
		batch, rest, err := record.NextBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		b = rest
		h, _ := record.ParseHeader(batch)
		recs, _ := record.Records(batch)
		if !h.Control() {
			continue
		}
		if len(recs) != 1 || !isVotersControlKey(recs[0].Key) {
			t.Fatalf("control batch at %d is not one KRaftVoters record", h.BaseOffset)
		}
		vs, err := readVotersRecord(recs[0].Value)
		if err != nil || !reflect.DeepEqual(vs, []Voter{moved}) {
			t.Fatalf("VotersRecord at %d: %+v, %v; want %+v", h.BaseOffset, vs, err, moved)
		}
		found = true
	}
	if !found {
		t.Fatalf("no KRaftVoters control batch from %d", from)
	}

	o := NewObserver(ObserverConfig{NodeID: 7, Voters: map[int32]string{1: "127.0.0.1:1"}, Listener: "CONTROLLER",
		Applier: metadata.NewLoader("cluster", quietLogger()), Logger: quietLogger()})
	o.next = uint64(from)
	if err := o.apply(p.RecordBatches); err != nil {
		t.Fatal(err)
	}
	if addr, _ := o.Addr(1); addr != "127.0.0.9:9093" || o.next != last+1 {
		t.Fatalf("observer dials voter 1 at %q, next %d; want 127.0.0.9:9093, %d", addr, o.next, last+1)
	}
}
