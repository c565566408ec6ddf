package raft

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestCommittedEntriesAndCommitWatch(t *testing.T) {
	n, _ := openNode(t, t.TempDir(), 1000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	commit, changed := n.Commit()
	idx, err := n.Propose(ctx, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("commit channel not closed after a proposal committed")
	}
	if c, _ := n.Commit(); c < idx || c <= commit {
		t.Fatalf("commit %d after proposing index %d (was %d)", c, idx, commit)
	}
	if _, err := n.Propose(ctx, []byte("bb")); err != nil {
		t.Fatal(err)
	}
	ents, err := n.CommittedEntries(ctx, idx, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 || ents[0].Index != idx || string(ents[0].Data) != "a" || ents[1].Index != idx+1 || string(ents[1].Data) != "bb" {
		t.Fatalf("entries from %d = %+v", idx, ents)
	}
	// Earlier entries are the leader's no-op and the barrier: no data.
	ents, err = n.CommittedEntries(ctx, 2, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if ents[0].Index != 2 || ents[0].Data != nil || ents[len(ents)-1].Index != idx+1 {
		t.Fatalf("entries from 2 = %+v", ents)
	}
	// maxBytes limits, but never below one entry.
	if ents, _ := n.CommittedEntries(ctx, idx, 1); len(ents) != 1 {
		t.Fatalf("maxBytes 1 returned %d entries", len(ents))
	}
	if ents, err := n.CommittedEntries(ctx, idx+2, 1<<20); err != nil || len(ents) != 0 {
		t.Fatalf("past commit: %v, %v", ents, err)
	}
	if _, err := n.CommittedEntries(ctx, 1, 1<<20); !errors.Is(err, ErrCompacted) {
		t.Fatalf("index 1 (bootstrap checkpoint): err = %v, want ErrCompacted", err)
	}
}

func TestLatestSnapshotCoversCompactedEntries(t *testing.T) {
	n, _ := openNode(t, t.TempDir(), 5)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var last uint64
	for i := range 12 {
		idx, err := n.Propose(ctx, []byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		last = idx
	}
	s, err := n.LatestSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Index < 5 || s.Index > last || len(s.Data) == 0 {
		t.Fatalf("snapshot at %d (%d bytes), last %d", s.Index, len(s.Data), last)
	}
	a := &memApplier{}
	if err := a.Restore(s.Data); err != nil {
		t.Fatal(err)
	}
	if idx, _ := a.state(); len(idx) == 0 || idx[len(idx)-1] > s.Index {
		t.Fatalf("snapshot at %d holds indexes %v", s.Index, idx)
	}
	if _, err := n.CommittedEntries(ctx, s.Index, 1<<20); !errors.Is(err, ErrCompacted) {
		t.Fatalf("entries at the snapshot index: err = %v, want ErrCompacted", err)
	}
	ents, err := n.CommittedEntries(ctx, s.Index+1, 1<<20)
	if err != nil || len(ents) == 0 || ents[len(ents)-1].Index != last {
		t.Fatalf("entries after the snapshot: %+v, %v", ents, err)
	}
}
