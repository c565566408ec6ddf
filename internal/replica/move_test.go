package replica

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// jbodNode is a node with two log directories hosting "orders"-0 as sole
// replica and leader.
type jbodNode struct {
	dirs []string
	logs *storage.LogManager
	m    *Manager
	p    *Partition
}

func startJBOD(t *testing.T, dirs []string, clock *fakeClock, hook func(context.Context)) *jbodNode {
	t.Helper()
	logs, err := storage.NewLogManager(storage.ManagerConfig{Dirs: dirs, CheckpointInterval: -1,
		RetentionCheckInterval: -1, CleanerThreads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Load(); err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{NodeID: 1, Logs: logs, Now: clock.Now, HighWatermarkCheckpointInterval: -1})
	m.testMoveStep = hook
	n := &jbodNode{dirs: dirs, logs: logs, m: m}
	t.Cleanup(n.close)
	st := PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}}
	n.p, err = m.Ensure("orders", [16]byte{1}, 0, st, PartitionConfig{MaxMessageBytes: 1 << 20,
		TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: math.MaxInt64})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *jbodNode) close() {
	n.m.Close()
	n.logs.Close()
}

// otherDir is the log directory not holding the partition.
func (n *jbodNode) otherDir(t *testing.T) string {
	cur, ok := n.logs.DirOf("orders", 0)
	if !ok {
		t.Fatal("orders-0 has no log directory")
	}
	if cur == n.dirs[0] {
		return n.dirs[1]
	}
	return n.dirs[0]
}

// waitMoved waits until the partition has no future log.
func waitMoved(t *testing.T, p *Partition) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, moving := p.FutureLog(); !moving {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the move did not finish")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// allRecords reads the whole log through the partition.
func allRecords(t *testing.T, p *Partition) []record.Record {
	t.Helper()
	var out []record.Record
	for off := p.Offsets().LogStartOffset; off < p.Offsets().HighWatermark; {
		b, _, err := p.Read(off, 1<<20, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		recs, err := record.Records(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Offset >= off {
				out = append(out, r)
			}
		}
		off = out[len(out)-1].Offset + 1
	}
	return out
}

// TestMoveLogDir: a move shows a future log, with its lag, while it is
// held; appends, an aborted transaction and reads go on meanwhile; after
// the swap the log is in the other directory with every record, offset,
// leader epoch and aborted transaction, and so it is after a restart.
func TestMoveLogDir(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ts := clock.Now().UnixMilli()
	dirs := []string{t.TempDir(), t.TempDir()}
	gate := make(chan struct{})
	n := startJBOD(t, dirs, clock, func(ctx context.Context) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	})
	for range 20 {
		mustAppend(t, n.p, plainBatch(5, ts))
	}
	mustAppend(t, n.p, txnBatch(9, 0, 0, 2, ts)) // 100-101, aborted below
	mustMarker(t, n.p, 9, 0, 5, false)           // 102
	from, to := filepath.Dir(n.p.Log().Dir()), n.otherDir(t)
	wantAborted := n.p.Log().AbortedTxns()
	if len(wantAborted) != 1 {
		t.Fatalf(".txnindex before the move: %v", wantAborted)
	}

	if err := n.m.AlterLogDir("orders", 0, to); err != nil {
		t.Fatalf("AlterLogDir: %v", err)
	}
	fut, lag, moving := n.p.FutureLog()
	if !moving || filepath.Dir(fut.Dir()) != to || !strings.HasSuffix(fut.Dir(), "-future") || lag != 103 {
		t.Fatalf("future log while held: %v, lag %d, moving %v; want one in %s lagging 103", fut, lag, moving, to)
	}
	if err := n.m.AlterLogDir("orders", 0, to); err != nil {
		t.Fatalf("AlterLogDir again to the same directory: %v", err)
	}
	if again, _, _ := n.p.FutureLog(); again != fut {
		t.Fatal("a repeated AlterLogDir replaced the move under way")
	}
	for range 10 {
		mustAppend(t, n.p, plainBatch(3, ts))
	}
	// A reader goes on through the swap: a read that finds the old log
	// closed reads the new one.
	stopReads, readErr := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stopReads:
				readErr <- nil
				return
			default:
			}
			if b, _, err := n.p.Read(0, 1<<20, true); err != nil || len(b) == 0 {
				readErr <- fmt.Errorf("read during the move: %d bytes, %v", len(b), err)
				return
			}
		}
	}()
	close(gate)
	mustAppend(t, n.p, plainBatch(3, ts))
	waitMoved(t, n.p)
	mustAppend(t, n.p, plainBatch(3, ts))
	close(stopReads)
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}

	if got := filepath.Dir(n.p.Log().Dir()); got != to {
		t.Fatalf("log in %s after the move, want %s", got, to)
	}
	if _, err := os.Stat(filepath.Join(from, "orders-0")); !os.IsNotExist(err) {
		t.Fatalf("old log directory: %v", err)
	}
	check := func(p *Partition) {
		t.Helper()
		recs := allRecords(t, p)
		if len(recs) != 103+36 {
			t.Fatalf("%d records, want %d", len(recs), 103+36)
		}
		for i, r := range recs {
			if r.Offset != int64(i) {
				t.Fatalf("record %d has offset %d", i, r.Offset)
			}
		}
		if got := p.Log().AbortedTxns(); !slices.Equal(got, wantAborted) {
			t.Fatalf(".txnindex %v, want %v", got, wantAborted)
		}
		if got := p.Log().LeaderEpochs(); !slices.Equal(got, []storage.EpochEntry{{Epoch: 1, StartOffset: 0}}) {
			t.Fatalf("epochs %v", got)
		}
	}
	check(n.p)
	n.close()
	n = startJBOD(t, dirs, clock, nil)
	if got := filepath.Dir(n.p.Log().Dir()); got != to {
		t.Fatalf("log in %s after restart, want %s", got, to)
	}
	check(n.p)
}

// TestMoveLogDirResumesAfterRestart: a move stopped by a shutdown goes on
// from its future log when the node hosts the partition again.
func TestMoveLogDirResumesAfterRestart(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ts := clock.Now().UnixMilli()
	dirs := []string{t.TempDir(), t.TempDir()}
	steps := 0
	n := startJBOD(t, dirs, clock, func(ctx context.Context) {
		if steps++; steps > 1 { // one chunk, then hold until Close
			<-ctx.Done()
		}
	})
	for range 10 {
		mustAppend(t, n.p, plainBatch(5, ts))
	}
	to := n.otherDir(t)
	if err := n.m.AlterLogDir("orders", 0, to); err != nil {
		t.Fatalf("AlterLogDir: %v", err)
	}
	n.close()
	if m, _ := filepath.Glob(filepath.Join(to, "orders-0.*-future")); len(m) != 1 {
		t.Fatalf("future log directories in %s after shutdown: %v", to, m)
	}
	n = startJBOD(t, dirs, clock, nil)
	waitMoved(t, n.p)
	if got := filepath.Dir(n.p.Log().Dir()); got != to {
		t.Fatalf("log in %s after the resumed move, want %s", got, to)
	}
	if recs := allRecords(t, n.p); len(recs) != 50 || recs[49].Offset != 49 {
		t.Fatalf("%d records after the resumed move", len(recs))
	}
}

// TestMoveLogDirFollowsTruncation: a truncation of the current log while
// the future log is filled truncates the future log too, so what the
// current log dropped never comes back with the swap.
func TestMoveLogDirFollowsTruncation(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ts := clock.Now().UnixMilli()
	dirs := []string{t.TempDir(), t.TempDir()}
	gate := make(chan struct{})
	steps := 0
	n := startJBOD(t, dirs, clock, func(ctx context.Context) {
		if steps++; steps > 1 {
			select {
			case <-gate:
			case <-ctx.Done():
			}
		}
	})
	for range 10 {
		mustAppend(t, n.p, plainBatch(5, ts))
	}
	if err := n.m.AlterLogDir("orders", 0, n.otherDir(t)); err != nil {
		t.Fatalf("AlterLogDir: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for fut, _, _ := n.p.FutureLog(); fut.LogEndOffset() != 50; fut, _, _ = n.p.FutureLog() {
		if time.Now().After(deadline) {
			t.Fatal("the first chunk was not copied")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := n.p.TruncateTo(20); err != nil {
		t.Fatal(err)
	}
	if fut, _, _ := n.p.FutureLog(); fut.LogEndOffset() != 20 {
		t.Fatalf("future log ends at %d after the truncation to 20", fut.LogEndOffset())
	}
	newer := record.Build(record.BuildOptions{}, []record.Record{{Timestamp: ts, Value: []byte("after")}})
	mustAppend(t, n.p, newer)
	close(gate)
	waitMoved(t, n.p)
	recs := allRecords(t, n.p)
	if len(recs) != 21 || string(recs[20].Value) != "after" {
		t.Fatalf("%d records after the move; want 21 ending with the one appended after the truncation", len(recs))
	}
}

// TestMoveLogDirCancelled: asking for the directory that holds the replica
// while a move elsewhere is under way cancels the move and deletes its
// future log; a directory not in log.dirs is LOG_DIR_NOT_FOUND and an
// unhosted partition REPLICA_NOT_AVAILABLE.
func TestMoveLogDirCancelled(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	dirs := []string{t.TempDir(), t.TempDir()}
	n := startJBOD(t, dirs, clock, func(ctx context.Context) { <-ctx.Done() })
	mustAppend(t, n.p, plainBatch(5, clock.Now().UnixMilli()))
	from, to := filepath.Dir(n.p.Log().Dir()), n.otherDir(t)
	if err := n.m.AlterLogDir("orders", 0, to); err != nil {
		t.Fatal(err)
	}
	if err := n.m.AlterLogDir("orders", 0, from); err != nil {
		t.Fatal(err)
	}
	if _, _, moving := n.p.FutureLog(); moving {
		t.Fatal("still moving after the move back to the current directory")
	}
	if m, _ := filepath.Glob(filepath.Join(to, "orders-0*")); len(m) != 0 {
		t.Fatalf("left in %s: %v", to, m)
	}
	if err := n.m.AlterLogDir("orders", 0, "/nowhere"); !errors.Is(err, kerr.LogDirNotFound) {
		t.Fatalf("AlterLogDir to /nowhere: %v", err)
	}
	if err := n.m.AlterLogDir("other", 0, to); !errors.Is(err, kerr.ReplicaNotAvailable) {
		t.Fatalf("AlterLogDir of an unhosted partition: %v", err)
	}
	if recs := allRecords(t, n.p); len(recs) != 5 {
		t.Fatalf("%d records", len(recs))
	}
}
