package raft

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// memApplier records applied entries; its snapshot is the whole record.
type memApplier struct {
	mu       sync.Mutex
	Indexes  []uint64
	Data     []string
	restores int
}

func (a *memApplier) Apply(index uint64, data []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if string(data) == "reject" {
		return fmt.Errorf("rejected")
	}
	a.Indexes = append(a.Indexes, index)
	a.Data = append(a.Data, string(data))
	return nil
}

func (a *memApplier) Snapshot() ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return json.Marshal(a)
}

func (a *memApplier) Restore(data []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.restores++
	a.Indexes, a.Data = nil, nil
	return json.Unmarshal(data, a)
}

func (a *memApplier) state() ([]uint64, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.Indexes), slices.Clone(a.Data)
}

func quietLogger() *slog.Logger {
	if os.Getenv("RAFT_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func openNode(t *testing.T, dir string, every uint64) (*Node, *memApplier) {
	t.Helper()
	a := &memApplier{}
	n, err := Open(Config{ID: 1, Dir: dir, Applier: a, Logger: quietLogger(), TickInterval: 10 * time.Millisecond, SnapshotEvery: every})
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

func proposeAll(t *testing.T, n *Node, data ...string) []uint64 {
	t.Helper()
	var idx []uint64
	for _, d := range data {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		i, err := n.Propose(ctx, []byte(d))
		cancel()
		if err != nil {
			t.Fatalf("propose %q: %v", d, err)
		}
		idx = append(idx, i)
	}
	return idx
}

func TestProposeAppliesInOrder(t *testing.T) {
	n, a := openNode(t, t.TempDir(), 1000)
	if !n.IsLeader() || n.Leader() != 1 {
		t.Fatalf("single voter should lead: leader=%d", n.Leader())
	}
	idx := proposeAll(t, n, "a", "b", "c")
	// Index 1 is the bootstrap checkpoint, 2 the leader's no-op, 3 the barrier.
	if want := []uint64{4, 5, 6}; !slices.Equal(idx, want) {
		t.Fatalf("indexes = %v, want %v", idx, want)
	}
	gotIdx, gotData := a.state()
	if !slices.Equal(gotIdx, idx) || !slices.Equal(gotData, []string{"a", "b", "c"}) {
		t.Fatalf("applied %v %v", gotIdx, gotData)
	}
}

func TestApplyErrorReturnedToProposer(t *testing.T) {
	n, a := openNode(t, t.TempDir(), 1000)
	_, err := n.Propose(context.Background(), []byte("reject"))
	if err == nil || err.Error() != "rejected" {
		t.Fatalf("err = %v, want rejected", err)
	}
	idx := proposeAll(t, n, "ok")
	if _, d := a.state(); !slices.Equal(d, []string{"ok"}) || idx[0] != 5 {
		t.Fatalf("applied %v at %v", d, idx)
	}
}

func TestConcurrentProposalsGetDistinctIndexes(t *testing.T) {
	n, a := openNode(t, t.TempDir(), 1000)
	var wg sync.WaitGroup
	res := make([]uint64, 20)
	for i := range res {
		wg.Go(func() {
			idx, err := n.Propose(context.Background(), fmt.Appendf(nil, "p%d", i))
			if err != nil {
				t.Error(err)
			}
			res[i] = idx
		})
	}
	wg.Wait()
	gotIdx, gotData := a.state()
	for i, idx := range res {
		pos := slices.Index(gotIdx, idx)
		if pos < 0 || gotData[pos] != fmt.Sprintf("p%d", i) {
			t.Fatalf("proposal %d at index %d not applied there: %v %v", i, idx, gotIdx, gotData)
		}
	}
	if !slices.IsSorted(gotIdx) || len(gotIdx) != 20 {
		t.Fatalf("applied out of order or lost: %v", gotIdx)
	}
}

func TestRestartReplaysLog(t *testing.T) {
	dir := t.TempDir()
	n, a := openNode(t, dir, 1000)
	proposeAll(t, n, "a", "b", "c")
	wantIdx, wantData := a.state()
	n.Close()

	n2, a2 := openNode(t, dir, 1000)
	gotIdx, gotData := a2.state()
	if !slices.Equal(gotIdx, wantIdx) || !slices.Equal(gotData, wantData) {
		t.Fatalf("replayed %v %v, want %v %v", gotIdx, gotData, wantIdx, wantData)
	}
	if a2.restores != 0 {
		t.Fatalf("no data snapshot expected, got %d restores", a2.restores)
	}
	// New entries continue after the replayed ones (and the new no-op/barrier).
	idx := proposeAll(t, n2, "d")
	if idx[0] <= wantIdx[len(wantIdx)-1] {
		t.Fatalf("new index %d not after %d", idx[0], wantIdx[len(wantIdx)-1])
	}
}

func TestSnapshotCompactsAndRestartRestoresSnapshotPlusTail(t *testing.T) {
	dir := t.TempDir()
	n, a := openNode(t, dir, 4)
	proposeAll(t, n, "a", "b", "c", "d", "e", "f", "g")
	wantIdx, wantData := a.state()
	n.Close()

	ckpts, _ := filepath.Glob(filepath.Join(dir, "*.checkpoint"))
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(ckpts) != 1 {
		t.Fatalf("checkpoints = %v, want exactly the latest", ckpts)
	}
	// Indexes 1..10 exist (bootstrap, no-op, barrier, a..g at 4..10);
	// snapshots are taken at 5 and 9 (term 2: the bootstrap is term 1),
	// so only entries after 9 remain.
	if filepath.Base(ckpts[0]) != "00000000000000000009-0000000002.checkpoint" {
		t.Fatalf("checkpoint = %s", filepath.Base(ckpts[0]))
	}
	if len(segs) != 1 || filepath.Base(segs[0]) != "00000000000000000010.log" {
		t.Fatalf("segments = %v", segs)
	}

	n2, a2 := openNode(t, dir, 4)
	gotIdx, gotData := a2.state()
	if a2.restores != 1 || !slices.Equal(gotIdx, wantIdx) || !slices.Equal(gotData, wantData) {
		t.Fatalf("restored %v %v (restores=%d), want %v %v", gotIdx, gotData, a2.restores, wantIdx, wantData)
	}
	proposeAll(t, n2, "h")
}

func lastSegment(t *testing.T, dir string) string {
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	slices.Sort(segs)
	return segs[len(segs)-1]
}

func TestTornTailIsTruncated(t *testing.T) {
	dir := t.TempDir()
	n, _ := openNode(t, dir, 1000)
	proposeAll(t, n, "a", "b", "c")
	n.Close()

	seg := lastSegment(t, dir)
	st, _ := os.Stat(seg)
	good := st.Size()
	// A crash mid-write leaves a partial frame: header claims 100 bytes.
	f, _ := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{0, 0, 0, 100, 1, 2, 3, 4, 5, 6})
	f.Close()

	n2, a2 := openNode(t, dir, 1000)
	if _, d := a2.state(); !slices.Equal(d, []string{"a", "b", "c"}) {
		t.Fatalf("recovered %v", d)
	}
	n2.Close()
	st, _ = os.Stat(seg)
	// Truncated back to the good prefix, then the restart's no-op and
	// barrier (two frames of 17+0 and 17+17 body bytes) were appended.
	if want := good + (8 + 17) + (8 + 17 + 17); st.Size() != want {
		t.Fatalf("segment size %d, want %d", st.Size(), want)
	}
}

func TestCorruptLastFrameDropsOnlyThatEntry(t *testing.T) {
	dir := t.TempDir()
	n, _ := openNode(t, dir, 1000)
	proposeAll(t, n, "a", "b", "c")
	n.Close()

	seg := lastSegment(t, dir)
	b, _ := os.ReadFile(seg)
	b[len(b)-1] ^= 0xff // last byte of "c"'s payload
	os.WriteFile(seg, b, 0o644)

	_, a2 := openNode(t, dir, 1000)
	if _, d := a2.state(); !slices.Equal(d, []string{"a", "b"}) {
		t.Fatalf("recovered %v, want [a b]", d)
	}
}

func TestProposeAfterCloseFails(t *testing.T) {
	n, _ := openNode(t, t.TempDir(), 1000)
	n.Close()
	if _, err := n.Propose(context.Background(), []byte("x")); err != ErrStopped {
		t.Fatalf("err = %v, want ErrStopped", err)
	}
}
