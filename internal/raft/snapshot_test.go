package raft

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// countingApplier is a memApplier that counts the entries applied to it.
type countingApplier struct {
	memApplier
	mu      sync.Mutex
	applied int
}

func (a *countingApplier) Apply(index uint64, data []byte) error {
	a.mu.Lock()
	a.applied++
	a.mu.Unlock()
	return a.memApplier.Apply(index, data)
}

func openCountingNode(t *testing.T, dir string, cfg Config) (*Node, *countingApplier) {
	t.Helper()
	a := &countingApplier{}
	cfg.ID, cfg.Dir, cfg.Applier, cfg.Logger, cfg.TickInterval = 1, dir, a, quietLogger(), 10*time.Millisecond
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := n.Barrier(ctx); err != nil {
		t.Fatalf("barrier: %v", err)
	}
	return n, a
}

// TestSnapshotOnCloseRestartReplaysNothing: with SnapshotOnClose a node
// that stops writes a snapshot, and its restart restores it instead of
// replaying the entries since the last one.
func TestSnapshotOnCloseRestartReplaysNothing(t *testing.T) {
	dir := t.TempDir()
	n, a := openCountingNode(t, dir, Config{SnapshotEvery: 1000, SnapshotOnClose: true})
	proposeAll(t, n, "a", "b", "c")
	wantIdx, wantData := a.state()
	n.Close()

	n2, a2 := openCountingNode(t, dir, Config{SnapshotEvery: 1000, SnapshotOnClose: true})
	gotIdx, gotData := a2.state()
	if !slices.Equal(gotIdx, wantIdx) || !slices.Equal(gotData, wantData) {
		t.Fatalf("restarted with %v %v, want %v %v", gotIdx, gotData, wantIdx, wantData)
	}
	if a2.restores != 1 || a2.applied != 0 {
		t.Fatalf("restart restored %d snapshots and replayed %d entries, want 1 and 0", a2.restores, a2.applied)
	}
	proposeAll(t, n2, "d")
	if _, d := a2.state(); !slices.Equal(d, []string{"a", "b", "c", "d"}) {
		t.Fatalf("after a new proposal: %v", d)
	}
}

// TestSnapshotBytes: entries fewer than SnapshotEvery but holding
// SnapshotBytes make a snapshot due, so a restart replays only those
// after it.
func TestSnapshotBytes(t *testing.T) {
	dir := t.TempDir()
	n, a := openCountingNode(t, dir, Config{SnapshotEvery: 1000, SnapshotBytes: 1000})
	big := string(make([]byte, 600))
	proposeAll(t, n, "a", big, big, "b")
	wantIdx, wantData := a.state()
	n.Close()

	_, a2 := openCountingNode(t, dir, Config{SnapshotEvery: 1000, SnapshotBytes: 1000})
	gotIdx, gotData := a2.state()
	if !slices.Equal(gotIdx, wantIdx) || !slices.Equal(gotData, wantData) {
		t.Fatalf("restarted with %v entries, want %v", gotIdx, wantIdx)
	}
	// The snapshot came after the second big entry: only "b" is replayed.
	if a2.restores != 1 || a2.applied != 1 {
		t.Fatalf("restart restored %d snapshots and replayed %d entries, want 1 and 1", a2.restores, a2.applied)
	}
}
