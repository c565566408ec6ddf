package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/record"
)

// keyedBatch builds a batch of records with the given keys and values (nil
// value: tombstone), all stamped ts.
func keyedBatch(ts int64, kv ...string) []byte {
	var recs []record.Record
	for i := 0; i+1 < len(kv); i += 2 {
		r := record.Record{Timestamp: ts, Key: []byte(kv[i])}
		if kv[i+1] != "<nil>" {
			r.Value = []byte(kv[i+1])
		}
		recs = append(recs, r)
	}
	return record.Build(record.BuildOptions{}, recs)
}

// forceRoll makes the active segment inactive, as the next append past
// segment.bytes would.
func forceRoll(tb testing.TB, l *Log) {
	tb.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.rollLocked(l.leo.Load()); err != nil {
		tb.Fatal(err)
	}
}

func filesWithSuffix(tb testing.TB, dir, suffix string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// fiveSegments appends five one-record batches, one segment each, stamped
// one hour apart from t0, and returns the log (segments 0..4, active 4).
func fiveSegments(t *testing.T, cfg LogConfig, t0 time.Time) *Log {
	t.Helper()
	b := keyedBatch(t0.UnixMilli(), "k", "v")
	cfg.SegmentBytes = int64(len(b)) // every append rolls
	l := openLog(t, filepath.Join(t.TempDir(), "orders-0"), cfg)
	for i := 0; i < 5; i++ {
		mustAppend(t, l, keyedBatch(t0.Add(time.Duration(i)*time.Hour).UnixMilli(), "k", "v"))
	}
	if got := segmentBases(l); len(got) != 5 {
		t.Fatalf("segments %v, want 5", got)
	}
	return l
}

func TestRetentionByTime(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0.Add(4*time.Hour + 30*time.Minute)}
	l := fiveSegments(t, LogConfig{RetentionMs: int64(150 * time.Minute / time.Millisecond), Now: clock.Now}, t0)

	// At 4.5 h, segments stamped 0 h and 1 h are older than 2.5 h; the one
	// stamped 2 h is exactly 2.5 h old and stays (Kafka wants strictly
	// older), and so do 3 h and 4 h.
	n, err := l.DeleteOldSegments()
	if err != nil || n != 2 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 2", n, err)
	}
	if got := segmentBases(l); len(got) != 3 || got[0] != 2 || l.LogStartOffset() != 2 {
		t.Fatalf("after retention: segments %v start %d, want [2 3 4] and 2", got, l.LogStartOffset())
	}
	if _, err := l.Read(1, 1<<20, l.LogEndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start offset: %v, want ErrOffsetOutOfRange", err)
	}
	b, err := l.Read(2, 1<<20, l.LogEndOffset())
	if err != nil || len(headers(t, b)) != 1 || headers(t, b)[0].BaseOffset != 2 {
		t.Fatalf("read at the new start: %v", err)
	}
	// The deleted files wait out file.delete.delay.ms (60 s by default).
	if got := filesWithSuffix(t, l.Dir(), ".log"+deletedSuffix); len(got) != 2 {
		t.Fatalf("deleted segment files %v, want 2 *.log.deleted", got)
	}
	// Everything expires: the active segment is rolled and deleted too,
	// leaving one empty segment at the log end offset.
	clock.Advance(10 * time.Hour)
	if n, err := l.DeleteOldSegments(); err != nil || n != 3 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 3", n, err)
	}
	if got := segmentBases(l); len(got) != 1 || got[0] != 5 || l.LogStartOffset() != 5 || l.LogEndOffset() != 5 {
		t.Fatalf("after full expiry: segments %v start %d end %d, want [5], 5, 5", got, l.LogStartOffset(), l.LogEndOffset())
	}
	if off := mustAppend(t, l, keyedBatch(clock.Now().UnixMilli(), "k", "v")); off != 5 {
		t.Fatalf("append after expiry at %d, want 5", off)
	}
	// Close removes the pending files at once.
	l.Close()
	if got := filesWithSuffix(t, l.Dir(), deletedSuffix); len(got) != 0 {
		t.Fatalf("deleted files left after Close: %v", got)
	}
}

func TestRetentionBySize(t *testing.T) {
	t0 := time.Now()
	l := fiveSegments(t, LogConfig{FileDeleteDelayMs: 1}, t0)
	size := l.Segments()[0].Size
	if err := l.SetConfig(LogConfig{SegmentBytes: size, FileDeleteDelayMs: 1, RetentionBytes: 2*size + 10}); err != nil {
		t.Fatal(err)
	}
	// 5 segments of size S against 2S+10: dropping two leaves 3S >= 2S+10,
	// dropping a third would leave less than retention.bytes.
	if n, err := l.DeleteOldSegments(); err != nil || n != 2 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 2", n, err)
	}
	if got := segmentBases(l); len(got) != 3 || got[0] != 2 || l.LogStartOffset() != 2 {
		t.Fatalf("segments %v start %d, want [2 3 4], 2", got, l.LogStartOffset())
	}
	l.deletes.Wait()
	if got := filesWithSuffix(t, l.Dir(), deletedSuffix); len(got) != 0 {
		t.Fatalf("files left after file.delete.delay.ms: %v", got)
	}
	for _, name := range []string{"00000000000000000000.log", "00000000000000000001.index"} {
		if _, err := os.Stat(filepath.Join(l.Dir(), name)); !os.IsNotExist(err) {
			t.Fatalf("%s still exists: %v", name, err)
		}
	}
}

func TestRetentionHighWatermarkBound(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0.Add(100 * time.Hour)}
	l := fiveSegments(t, LogConfig{RetentionMs: 1, Now: clock.Now}, t0)
	// Only segments wholly below the high watermark may go.
	l.SetHighWatermark(2)
	if n, _ := l.DeleteOldSegments(); n != 2 || l.LogStartOffset() != 2 {
		t.Fatalf("deleted %d, start %d; want 2 and 2 under high watermark 2", n, l.LogStartOffset())
	}
}

func TestDeleteRecordsAndRetention(t *testing.T) {
	dir := t.TempDir()
	m, err := NewLogManager(ManagerConfig{Dirs: []string{dir}, CheckpointInterval: -1, RetentionCheckInterval: -1, CleanerThreads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	b := keyedBatch(time.Now().UnixMilli(), "k", "v", "k", "w")
	// Compact-only: retention.ms/bytes do not apply, but DeleteRecords does.
	l, err := m.GetOrCreate("events", 0, [16]byte{}, LogConfig{SegmentBytes: int64(len(b)), CleanupPolicy: CleanupCompact})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		mustAppend(t, l, keyedBatch(time.Now().UnixMilli(), "k", "v", "k", "w"))
	}
	// Segments at 0, 2, 4, 6. Delete before 5: mid-segment.
	if lso, err := l.DeleteRecordsBefore(5); err != nil || lso != 5 {
		t.Fatalf("DeleteRecordsBefore(5) = %d, %v", lso, err)
	}
	if lso, err := l.DeleteRecordsBefore(3); err != nil || lso != 5 {
		t.Fatalf("DeleteRecordsBefore(3) = %d, %v; the start never moves back", lso, err)
	}
	if _, err := l.DeleteRecordsBefore(9); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("DeleteRecordsBefore past the end: %v", err)
	}
	if _, err := l.Read(4, 1<<20, 8); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	if n := m.ApplyRetention(); n != 2 {
		t.Fatalf("retention deleted %d segments, want 2 (0 and 2, wholly below 5)", n)
	}
	if got := segmentBases(l); len(got) != 2 || got[0] != 4 || l.LogStartOffset() != 5 {
		t.Fatalf("segments %v start %d, want [4 6] and 5", got, l.LogStartOffset())
	}
	cp, err := ReadCheckpoint(filepath.Join(dir, LogStartOffsetCheckpointFile))
	if err != nil || cp[TopicPartition{"events", 0}] != 5 {
		t.Fatalf("log-start-offset-checkpoint %v, %v; want events-0 at 5", cp, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := newManager(t, []string{dir})
	defer m2.Close()
	l2, _ := m2.Get("events", 0)
	if l2.LogStartOffset() != 5 {
		t.Fatalf("log start offset after restart %d, want 5", l2.LogStartOffset())
	}
}
