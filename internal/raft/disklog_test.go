package raft

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

func testEntries(term, from, to uint64) []*pb.Entry {
	var ents []*pb.Entry
	for i := from; i <= to; i++ {
		ents = append(ents, &pb.Entry{Term: new(term), Index: new(i), Type: new(pb.EntryNormal), Data: []byte{byte(i), byte(term)}})
	}
	return ents
}

// Raft replacing an uncommitted tail that starts exactly at a segment
// (one rolled by a snapshot) removes that segment and reopens the one
// before. The next append used to land at offset 0 of the reopened
// segment, over its first entries: the log lost everything below the
// conflict at the next recovery. Found by the simulation (seed 143).
func TestDiskLogTruncateWholeSegmentThenAppend(t *testing.T) {
	dir := t.TempDir()
	l, _, err := openDiskLog(dir, quietLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.append(testEntries(1, 2, 5)))
	snap := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: new(uint64(3)), Term: new(uint64(1)),
		ConfState: &pb.ConfState{Voters: []uint64{1}}}}
	must(l.saveSnapshot(snap)) // rolls: entries 6.. go to a new segment
	must(l.append(testEntries(1, 6, 7)))
	must(l.append(testEntries(2, 6, 6))) // conflict at the new segment's first index
	must(l.append(testEntries(2, 7, 7)))
	must(l.close())

	_, rec, err := openDiskLog(dir, quietLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]uint64
	for _, e := range rec.entries {
		got = append(got, [2]uint64{e.GetIndex(), e.GetTerm()})
	}
	want := [][2]uint64{{4, 1}, {5, 1}, {6, 2}, {7, 2}}
	if len(got) != len(want) {
		t.Fatalf("recovered entries (index, term) %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("recovered entries (index, term) %v, want %v", got, want)
		}
	}
}
