package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fillLog appends n two-record batches (timestamps 100+i) to a log whose
// segments hold three batches each, closes it, and returns the dir and the
// size of one batch.
func fillLog(t *testing.T, n int) (string, LogConfig, int) {
	t.Helper()
	size := len(makeBatch(t, 2, 1, 100))
	cfg := LogConfig{SegmentBytes: int64(3 * size), IndexIntervalBytes: 1, SegmentIndexBytes: 4096}
	dir := filepath.Join(t.TempDir(), "t-0")
	l, err := Open(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		mustAppend(t, l, makeBatch(t, 2, int64(100+i), 100))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, cfg, size
}

func TestRecoverTornTail(t *testing.T) {
	dir, cfg, size := fillLog(t, 8) // segments 0 (0..5), 6 (6..11), 12 (12..15)
	last := segmentFileName(dir, 12, logSuffix)
	if err := os.Truncate(last, int64(size+size/2)); err != nil { // second batch torn
		t.Fatal(err)
	}
	l := openLog(t, dir, cfg)
	if l.LogEndOffset() != 14 {
		t.Fatalf("LEO after torn tail %d, want 14", l.LogEndOffset())
	}
	if got := fileSize(t, last); got != int64(size) {
		t.Fatalf("segment cut to %d bytes, want %d", got, size)
	}
	if off := mustAppend(t, l, makeBatch(t, 1, 1, 10)); off != 14 {
		t.Fatalf("append after recovery at %d, want 14", off)
	}
	got, err := l.Read(12, 1<<20, l.LogEndOffset())
	if err != nil || !slices.Equal(baseOffsets(headers(t, got)), []int64{12, 14}) {
		t.Fatalf("Read(12) after recovery: %v, %v", baseOffsets(headers(t, got)), err)
	}
}

func TestRecoverGarbageTail(t *testing.T) {
	dir, cfg, size := fillLog(t, 7) // last segment 12 holds one batch
	last := segmentFileName(dir, 12, logSuffix)
	garbage := [][]byte{
		bytes.Repeat([]byte{0}, 4096),    // zeros, as after preallocation
		bytes.Repeat([]byte{0xab}, 100),  // huge length
		makeBatch(t, 2, 1, 100)[:70],     // a torn header+records
		corrupt(makeBatch(t, 2, 1, 100)), // complete but bad CRC
	}
	for i, g := range garbage {
		f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(g)
		f.Close()
		l, err := Open(dir, cfg, nil)
		if err != nil {
			t.Fatalf("garbage %d: %v", i, err)
		}
		if l.LogEndOffset() != 14 || fileSize(t, last) != int64(size) {
			t.Fatalf("garbage %d: LEO %d size %d; want 14 and %d", i, l.LogEndOffset(), fileSize(t, last), size)
		}
		l.Close()
	}
}

// corrupt flips a bit in the records of a batch (after the CRC'd header).
func corrupt(b []byte) []byte {
	b[len(b)-1] ^= 0x01
	return b
}

func TestRecoverCorruptMiddleDeletesLaterSegments(t *testing.T) {
	dir, cfg, size := fillLog(t, 8)
	first := segmentFileName(dir, 0, logSuffix)
	data, _ := os.ReadFile(first)
	corrupt(data[:2*size]) // last byte of the second batch
	os.WriteFile(first, data, 0o644)
	l := openLog(t, dir, cfg)
	if l.LogEndOffset() != 2 || !slices.Equal(segmentBases(l), []int64{0}) {
		t.Fatalf("LEO %d segments %v; want 2 and [0]", l.LogEndOffset(), segmentBases(l))
	}
	for _, base := range []int64{6, 12} {
		if _, err := os.Stat(segmentFileName(dir, base, logSuffix)); !os.IsNotExist(err) {
			t.Errorf("segment %d after the corruption survived: %v", base, err)
		}
	}
	if off := mustAppend(t, l, makeBatch(t, 1, 1, 10)); off != 2 {
		t.Fatalf("append at %d, want 2", off)
	}
}

func TestRebuildDeletedIndex(t *testing.T) {
	dir, cfg, _ := fillLog(t, 8)
	want, _ := os.ReadFile(segmentFileName(dir, 6, indexSuffix))
	wantTime, _ := os.ReadFile(segmentFileName(dir, 6, timeIndexSuffix))
	if len(want) != 16 || len(wantTime) != 24 {
		t.Fatalf("index of segment 6: %d / %d bytes, want 16 / 24", len(want), len(wantTime))
	}
	os.Remove(segmentFileName(dir, 6, indexSuffix))
	os.Remove(segmentFileName(dir, 6, timeIndexSuffix))
	// A clean start skips the scan, but the missing index is rebuilt.
	l, err := OpenWithOptions(dir, cfg, nil, OpenOptions{RecoveryPoint: 16, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(segmentFileName(dir, 6, indexSuffix))
	gotTime, _ := os.ReadFile(segmentFileName(dir, 6, timeIndexSuffix))
	if !bytes.Equal(got, want) || !bytes.Equal(gotTime, wantTime) {
		t.Fatalf("rebuilt index differs:\n%x\n%x\nrebuilt time index:\n%x\n%x", got, want, gotTime, wantTime)
	}
	if b, err := l.Read(9, 1, 16); err != nil || headers(t, b)[0].BaseOffset != 8 {
		t.Fatalf("Read(9) via rebuilt index: %v", err)
	}
	l.Close()
}

func TestReopenAfterCleanCloseContinues(t *testing.T) {
	dir, cfg, _ := fillLog(t, 7) // active segment 12 with one batch
	l, err := OpenWithOptions(dir, cfg, nil, OpenOptions{RecoveryPoint: 14, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != 14 || l.RecoveryPoint() != 14 {
		t.Fatalf("LEO %d recovery point %d, want 14", l.LogEndOffset(), l.RecoveryPoint())
	}
	if s := l.Segments(); s[len(s)-1].MaxTimestamp != 106 {
		t.Fatalf("active segment max timestamp %d, want 106", s[len(s)-1].MaxTimestamp)
	}
	for i := 0; i < 3; i++ {
		if off := mustAppend(t, l, makeBatch(t, 2, int64(200+i), 100)); off != int64(14+2*i) {
			t.Fatalf("append %d at %d", i, off)
		}
	}
	if !slices.Equal(segmentBases(l), []int64{0, 6, 12, 18}) {
		t.Fatalf("segments %v", segmentBases(l))
	}
	if off, _, found, _ := l.OffsetForTimestamp(201); !found || off != 16 {
		t.Fatalf("OffsetForTimestamp(201) = %d %v, want 16", off, found)
	}
}

func TestCrashKeepsAppendedData(t *testing.T) {
	size := len(makeBatch(t, 2, 1, 100))
	cfg := LogConfig{SegmentBytes: int64(3 * size), IndexIntervalBytes: 1}
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, cfg)
	for i := 0; i < 8; i++ {
		mustAppend(t, l, makeBatch(t, 2, int64(100+i), 100))
	}
	// kill -9: the files as they are now, preallocated indexes included.
	crashed := filepath.Join(t.TempDir(), "t-0")
	copyDir(t, dir, crashed)
	if got := fileSize(t, segmentFileName(crashed, 12, indexSuffix)); got != DefaultSegmentIndexBytes {
		t.Fatalf("active index in the crash image is %d bytes, want preallocated", got)
	}
	// Even if a checkpoint wrongly claimed a clean shutdown, the untrimmed
	// index fails its sanity check and is rebuilt.
	for _, opts := range []OpenOptions{{}, {RecoveryPoint: 16, CleanShutdown: true}} {
		copyDir(t, dir, crashed)
		r, err := OpenWithOptions(crashed, cfg, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.LogEndOffset() != 16 {
			t.Fatalf("%+v: LEO after crash %d, want 16", opts, r.LogEndOffset())
		}
		got, err := r.Read(13, 1, 16)
		if err != nil || headers(t, got)[0].BaseOffset != 12 {
			t.Fatalf("%+v: Read(13) after crash: %v", opts, err)
		}
		if s := r.Segments()[2]; s.IndexEntries != 1 {
			t.Fatalf("%+v: rebuilt active index has %d entries, want 1", opts, s.IndexEntries)
		}
		r.Close()
	}
}
