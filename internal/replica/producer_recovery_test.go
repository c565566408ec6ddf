package replica

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// testNode is a log manager and replica manager over one data directory.
type testNode struct {
	logs *storage.LogManager
	m    *Manager
	p    *Partition
}

func openNode(t *testing.T, dir string, now func() time.Time) *testNode {
	t.Helper()
	logs, err := storage.NewLogManager(storage.ManagerConfig{Dirs: []string{dir}, CheckpointInterval: -1,
		RetentionCheckInterval: -1, CleanerThreads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m := NewManager(Config{Logs: logs, Now: now, ProducerIDExpirationMs: 3_600_000, ProducerIDExpirationCheckIntervalMs: 60_000})
	p, err := m.Ensure("orders", [16]byte{1}, 0, PartitionState{Leader: 0, Replicas: []int32{0}, ISR: []int32{0}}, PartitionConfig{
		Log:                  storage.LogConfig{SegmentBytes: 400},
		MaxMessageBytes:      1 << 20,
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  math.MaxInt64,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &testNode{logs, m, p}
}

// idemBatch is a batch of n records from producer pid starting at seq.
func idemBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: ts, Value: []byte("value")}
	}
	return record.Build(record.BuildOptions{Producer: &record.ProducerInfo{ID: pid, Epoch: epoch, BaseSequence: seq}}, recs)
}

func mustAppend(t *testing.T, p *Partition, b []byte) AppendResult {
	t.Helper()
	r, err := p.Append(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// copyDir copies a data directory as a crash would leave it: whatever is
// in the files now, no clean-shutdown marker, no final snapshot.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, src)
		return errors.Join(err, out.Close())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestProducerStateAfterRestart writes ten 2-record batches of one
// producer across several segments, then checks what a restarted
// partition remembers after a clean shutdown (the snapshot at the log end:
// the last batch only, as in Kafka) and after a crash (snapshot at a roll
// plus replay: the last five batches).
func TestProducerStateAfterRestart(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	ts := now.UnixMilli()
	dir := t.TempDir()
	n := openNode(t, dir, clock)
	var offsets []int64
	for i := 0; i < 10; i++ {
		offsets = append(offsets, mustAppend(t, n.p, idemBatch(7, 0, int32(2*i), 2, ts)).BaseOffset)
	}
	if offsets[9] != 18 {
		t.Fatalf("offsets %v", offsets)
	}
	segs := n.p.Log().Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want a few rolls", len(segs))
	}
	crashed := t.TempDir()
	n.p.Log().Flush() // let the roll snapshots land before the copy
	waitSnapshots(t, n.p.Log(), segs[len(segs)-1].BaseOffset)
	copyDir(t, dir, crashed)
	if err := n.logs.Close(); err != nil {
		t.Fatal(err)
	}
	// Clean shutdown: one snapshot at the log end, older ones pruned.
	snaps, _ := storage.Open(filepath.Join(dir, "orders-0"), storage.LogConfig{}, nil)
	offs, _ := snaps.ProducerSnapshotOffsets()
	snaps.Close()
	if len(offs) == 0 || offs[len(offs)-1] != 20 || len(offs) > 3 {
		t.Fatalf("snapshots after clean shutdown %v, want the newest at 20 and at most 3", offs)
	}

	t.Run("clean", func(t *testing.T) {
		n := openNode(t, dir, clock)
		if r := mustAppend(t, n.p, idemBatch(7, 0, 18, 2, ts)); r.BaseOffset != 18 {
			t.Fatalf("resent last batch answered offset %d, want 18", r.BaseOffset)
		}
		// The snapshot keeps only the last batch: an older one is out of
		// order, as in Kafka.
		if _, err := n.p.Append(idemBatch(7, 0, 16, 2, ts)); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
			t.Fatalf("resent older batch: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
		}
		if _, err := n.p.Append(idemBatch(7, 0, 21, 1, ts)); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
			t.Fatalf("gap: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
		}
		if r := mustAppend(t, n.p, idemBatch(7, 0, 20, 1, ts)); r.BaseOffset != 20 {
			t.Fatalf("next batch at %d, want 20", r.BaseOffset)
		}
		if leo := n.p.Offsets().LogEndOffset; leo != 21 {
			t.Fatalf("log end %d, want 21", leo)
		}
		ap := n.p.ActiveProducers()
		if len(ap) != 1 || ap[0].ProducerID != 7 || ap[0].LastSequence != 20 || ap[0].LastTimestamp != ts || ap[0].CurrentTxnStartOffset != -1 {
			t.Fatalf("active producers %+v", ap)
		}
	})
	t.Run("crash", func(t *testing.T) {
		n := openNode(t, crashed, clock)
		// The newest snapshot (at the last roll) gives the batch before
		// it; replaying the segment after it gives the rest, up to five.
		snap := segs[len(segs)-1].BaseOffset
		first := max(int(snap)/2-1, 5)
		for i := 9; i >= first; i-- {
			if r := mustAppend(t, n.p, idemBatch(7, 0, int32(2*i), 2, ts)); r.BaseOffset != int64(2*i) {
				t.Fatalf("resent batch %d answered offset %d, want %d", i, r.BaseOffset, 2*i)
			}
		}
		if _, err := n.p.Append(idemBatch(7, 0, int32(2*first-2), 2, ts)); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
			t.Fatalf("batch before the cached ones: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
		}
		if leo := n.p.Offsets().LogEndOffset; leo != 20 {
			t.Fatalf("log end %d after resending, want 20", leo)
		}
		if r := mustAppend(t, n.p, idemBatch(7, 0, 20, 1, ts)); r.BaseOffset != 20 {
			t.Fatalf("next batch at %d, want 20", r.BaseOffset)
		}
	})
}

// waitSnapshots waits for the background snapshot of a roll at offset.
func waitSnapshots(t *testing.T, l *storage.Log, offset int64) {
	t.Helper()
	for i := 0; i < 500; i++ {
		offs, err := l.ProducerSnapshotOffsets()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(offs, offset) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no snapshot at %d", offset)
}

func TestProducerStateTruncate(t *testing.T) {
	now := time.Now()
	ts := now.UnixMilli()
	n := openNode(t, t.TempDir(), func() time.Time { return now })
	for i := 0; i < 10; i++ {
		mustAppend(t, n.p, idemBatch(7, 0, int32(2*i), 2, ts))
	}
	mustAppend(t, n.p, idemBatch(8, 3, 0, 1, ts)) // offset 20
	segs := n.p.Log().Segments()
	waitSnapshots(t, n.p.Log(), segs[len(segs)-1].BaseOffset)
	if err := n.p.TruncateTo(9); err != nil {
		t.Fatal(err)
	}
	// The batch 8..9 straddles 9 and goes whole: the log ends at 8.
	if o := n.p.Offsets(); o.LogEndOffset != 8 || o.HighWatermark != 8 {
		t.Fatalf("offsets after truncation %+v", o)
	}
	offs, _ := n.p.Log().ProducerSnapshotOffsets()
	for _, off := range offs {
		if off > 8 {
			t.Fatalf("snapshot %d survived truncation to 8 (%v)", off, offs)
		}
	}
	ap := n.p.ActiveProducers()
	if len(ap) != 1 || ap[0].ProducerID != 7 || ap[0].LastSequence != 7 {
		t.Fatalf("producers after truncation %+v, want 7 at sequence 7", ap)
	}
	if r := mustAppend(t, n.p, idemBatch(7, 0, 6, 2, ts)); r.BaseOffset != 6 {
		t.Fatalf("duplicate after truncation at %d, want 6", r.BaseOffset)
	}
	if r := mustAppend(t, n.p, idemBatch(7, 0, 8, 2, ts)); r.BaseOffset != 8 {
		t.Fatalf("rewritten batch at %d, want 8", r.BaseOffset)
	}
}

func TestProducerExpiry(t *testing.T) {
	start := time.Now()
	now := start
	dir := t.TempDir()
	n := openNode(t, dir, func() time.Time { return now })
	mustAppend(t, n.p, idemBatch(1, 0, 0, 1, start.UnixMilli()))
	now = start.Add(50 * time.Minute)
	mustAppend(t, n.p, idemBatch(2, 0, 0, 1, now.UnixMilli()))
	if ap := n.p.ActiveProducers(); len(ap) != 2 {
		t.Fatalf("producers %+v, want 2", ap)
	}
	// An hour after producer 1's batch it is forgotten: any sequence goes.
	now = start.Add(61 * time.Minute)
	ap := n.p.ActiveProducers()
	if len(ap) != 1 || ap[0].ProducerID != 2 {
		t.Fatalf("producers %+v, want only 2", ap)
	}
	if _, err := n.p.Append(idemBatch(1, 0, 5, 1, now.UnixMilli())); err != nil {
		t.Fatalf("expired producer with sequence 5: %v", err)
	}
	// Expired producers are not loaded from a snapshot either.
	if err := n.logs.Close(); err != nil {
		t.Fatal(err)
	}
	now = start.Add(111 * time.Minute)
	ap = openNode(t, dir, func() time.Time { return now }).p.ActiveProducers()
	if len(ap) != 1 || ap[0].ProducerID != 1 || ap[0].LastSequence != 5 {
		t.Fatalf("producers after restart %+v, want only 1 at sequence 5", ap)
	}
}
