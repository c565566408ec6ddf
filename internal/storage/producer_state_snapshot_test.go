package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/record"
)

func TestProducerSnapshotRoundTrip(t *testing.T) {
	entries := []ProducerSnapshotEntry{
		{ProducerID: 1, Epoch: 2, LastSequence: 3, LastOffset: 4, OffsetDelta: 5, Timestamp: 6, CoordinatorEpoch: 7, CurrentTxnFirstOffset: 8},
		{ProducerID: 1 << 40, Epoch: -1, LastSequence: 0x7fffffff, LastOffset: -1, OffsetDelta: 0, Timestamp: -1, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
	}
	b := EncodeProducerSnapshot(entries)
	if len(b) != 10+2*46 {
		t.Fatalf("%d bytes, want %d", len(b), 10+2*46)
	}
	// Kafka's layout: version 1, CRC-32C of what follows, int32 count, then
	// the first entry's producer id.
	if v := binary.BigEndian.Uint16(b); v != 1 {
		t.Fatalf("version %d", v)
	}
	if crc := binary.BigEndian.Uint32(b[2:]); crc != crc32.Checksum(b[6:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatalf("crc %#x does not cover the bytes after it", crc)
	}
	if n := binary.BigEndian.Uint32(b[6:]); n != 2 {
		t.Fatalf("count %d", n)
	}
	if pid := binary.BigEndian.Uint64(b[10:]); pid != 1 {
		t.Fatalf("first producer id %d", pid)
	}
	if ts := binary.BigEndian.Uint64(b[10+26:]); ts != 6 {
		t.Fatalf("first timestamp %d at byte 36", ts)
	}
	got, err := DecodeProducerSnapshot(b)
	if err != nil || !slices.Equal(got, entries) {
		t.Fatalf("decode: %+v %v", got, err)
	}
	if got, err := DecodeProducerSnapshot(EncodeProducerSnapshot(nil)); err != nil || len(got) != 0 {
		t.Fatalf("empty snapshot: %+v %v", got, err)
	}

	bad := slices.Clone(b)
	bad[20] ^= 1
	if _, err := DecodeProducerSnapshot(bad); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("flipped bit: %v", err)
	}
	if _, err := DecodeProducerSnapshot(b[:len(b)-1]); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("short file: %v", err)
	}
	v2 := slices.Clone(b)
	v2[1] = 2
	if _, err := DecodeProducerSnapshot(v2); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("version 2: %v", err)
	}
}

func appendN(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := l.Append(makeBatch(t, 1, time.Now().UnixMilli(), 10)); err != nil {
			t.Fatal(err)
		}
	}
}

func snapshotOffsets(t *testing.T, l *Log) []int64 {
	t.Helper()
	offs, err := l.ProducerSnapshotOffsets()
	if err != nil {
		t.Fatal(err)
	}
	return offs
}

func TestProducerSnapshotFiles(t *testing.T) {
	dir := t.TempDir() + "/t-0"
	l, err := Open(dir, LogConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, 10)
	entry := []ProducerSnapshotEntry{{ProducerID: 9, LastSequence: 4, LastOffset: 7, CurrentTxnFirstOffset: -1}}
	gen := l.ProducerSnapshotGeneration()
	for _, off := range []int64{2, 4, 6, 8} {
		if err := l.WriteProducerSnapshot(off, gen, entry); err != nil {
			t.Fatal(err)
		}
	}
	// Only the newest three are kept.
	if got := snapshotOffsets(t, l); !slices.Equal(got, []int64{4, 6, 8}) {
		t.Fatalf("snapshots %v, want [4 6 8]", got)
	}
	if _, err := os.Stat(dir + "/00000000000000000008.snapshot"); err != nil {
		t.Fatal(err)
	}
	got, err := l.ReadProducerSnapshot(8)
	if err != nil || !slices.Equal(got, entry) {
		t.Fatalf("read: %+v %v", got, err)
	}

	// Truncation deletes the snapshots above the new end and voids one
	// taken before it.
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOffsets(t, l); !slices.Equal(got, []int64{4}) {
		t.Fatalf("after TruncateTo(5): %v, want [4]", got)
	}
	if err := l.WriteProducerSnapshot(5, gen, entry); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOffsets(t, l); !slices.Equal(got, []int64{4}) {
		t.Fatalf("stale snapshot written: %v", got)
	}
}

func TestProducerSnapshotsDeletedWithSegments(t *testing.T) {
	dir := t.TempDir() + "/t-0"
	l, err := Open(dir, LogConfig{SegmentBytes: 200, FileDeleteDelayMs: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, 6)
	var bases []int64
	for _, s := range l.Segments() {
		bases = append(bases, s.BaseOffset)
	}
	if len(bases) < 3 {
		t.Fatalf("segments %v: want at least 3", bases)
	}
	gen := l.ProducerSnapshotGeneration()
	for _, b := range bases[1:] {
		if err := l.WriteProducerSnapshot(b, gen, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.DeleteRecordsBefore(bases[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteOldSegments(); err != nil {
		t.Fatal(err)
	}
	got := snapshotOffsets(t, l)
	if len(got) == 0 || got[0] != bases[2] {
		t.Fatalf("snapshots %v after deleting segments below %d (bases %v, now %+v)", got, bases[2], bases, l.Segments())
	}
}

func TestScanBatchHeaders(t *testing.T) {
	l, err := Open(t.TempDir()+"/t-0", LogConfig{SegmentBytes: 300}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 8; i++ {
		if _, err := l.Append(makeBatch(t, 2, int64(1000+i), 10)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.Segments()); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	var bases, ts []int64
	err = l.ScanBatchHeaders(5, func(h record.Header) error {
		bases = append(bases, h.BaseOffset)
		ts = append(ts, h.MaxTimestamp)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Offset 5 is inside the batch 4..5.
	if !slices.Equal(bases, []int64{4, 6, 8, 10, 12, 14}) || ts[0] != 1002 || ts[5] != 1007 {
		t.Fatalf("bases %v timestamps %v", bases, ts)
	}
}

// A log without a batch gets no empty snapshot (nothing to replay on
// load); one with batches does, even an empty one.
func TestEmptyLogSkipsEmptyProducerSnapshot(t *testing.T) {
	l, err := Open(t.TempDir()+"/t-0", LogConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.WriteProducerSnapshot(0, l.ProducerSnapshotGeneration(), nil); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOffsets(t, l); len(got) != 0 {
		t.Fatalf("snapshots %v of a log without batches, want none", got)
	}
	appendN(t, l, 3)
	if err := l.WriteProducerSnapshot(3, l.ProducerSnapshotGeneration(), nil); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOffsets(t, l); !slices.Equal(got, []int64{3}) {
		t.Fatalf("snapshots %v, want [3]", got)
	}
}
