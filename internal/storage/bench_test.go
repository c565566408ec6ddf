package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/samsa-io/samsa/internal/record"
)

// BenchmarkAppend appends 1 KiB batches (one record each) to one log.
func BenchmarkAppend(b *testing.B) {
	l := openLog(b, b.TempDir(), LogConfig{SegmentBytes: 64 << 20})
	batch := makeBatch(b, 1, 1, 1024-record61Overhead)
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// record61Overhead makes makeBatch's output about 1 KiB: header plus the
// record's own framing.
const record61Overhead = 61 + 8

// BenchmarkRead reads 1 KiB batches one at a time from random offsets, as
// consumers spread over a partition would, through the index.
func BenchmarkRead(b *testing.B) {
	l := openLog(b, b.TempDir(), LogConfig{SegmentBytes: 16 << 20})
	batch := makeBatch(b, 1, 1, 1024-record61Overhead)
	const n = 40000 // ~40 MiB, 3 segments
	for i := 0; i < n; i++ {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := int64(i*7919) % n
		got, err := l.Read(off, 1, n)
		if err != nil || len(got) != len(batch) {
			b.Fatalf("Read(%d): %d bytes, %v", off, len(got), err)
		}
	}
}

// FuzzRecover opens a log whose only segment holds arbitrary bytes after
// two valid batches: recovery must keep exactly a valid prefix, and the log
// must stay usable.
func FuzzRecover(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 100))
	f.Add(makeBatch(f, 2, 5, 10))
	f.Add(corrupt(makeBatch(f, 2, 5, 10)))
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := filepath.Join(t.TempDir(), "f-0")
		os.MkdirAll(dir, 0o755)
		first := makeBatch(t, 2, 1, 10)
		second := makeBatch(t, 1, 2, 10)
		record.SetBaseOffset(second, 2)
		good := append(first, second...)
		os.WriteFile(segmentFileName(dir, 0, logSuffix), append(good, tail...), 0o644)
		l, err := Open(dir, LogConfig{IndexIntervalBytes: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		leo := l.LogEndOffset()
		if leo < 3 {
			t.Fatalf("valid prefix lost: LEO %d", leo)
		}
		got, err := l.Read(0, 1<<20, leo)
		if err != nil {
			t.Fatal(err)
		}
		hs := headers(t, got)
		if last := hs[len(hs)-1]; last.NextOffset() != leo {
			t.Fatalf("last batch ends at %d, LEO %d", last.NextOffset(), leo)
		}
		if off := mustAppend(t, l, makeBatch(t, 1, 3, 1)); off != leo {
			t.Fatalf("append at %d, want %d", off, leo)
		}
	})
}
