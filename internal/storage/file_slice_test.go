package storage

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestReadSliceMatchesRead: for random offsets, byte limits and bounds
// over a log of several segments with batches of random sizes and a small
// index interval, ReadSlice names exactly the bytes Read returns.
func TestReadSliceMatchesRead(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "orders-0"), LogConfig{SegmentBytes: 64 << 10, IndexIntervalBytes: 512})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		mustAppend(t, l, makeBatch(t, 1+rng.IntN(8), 1000, rng.IntN(400)))
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("%d segments, want several", len(l.Segments()))
	}
	leo := l.LogEndOffset()
	for range 2000 {
		offset := rng.Int64N(leo + 1)
		maxOffset := offset + rng.Int64N(leo-offset+2)
		maxBytes := rng.IntN(20 << 10)
		want, err := l.Read(offset, maxBytes, maxOffset)
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.ReadSlice(offset, maxBytes, maxOffset)
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			if len(want) != 0 {
				t.Fatalf("ReadSlice(%d, %d, %d) = nothing, Read = %d bytes", offset, maxBytes, maxOffset, len(want))
			}
			continue
		}
		got := make([]byte, s.Len())
		if err := s.ReadTo(got); err != nil {
			t.Fatal(err)
		}
		s.Release()
		if !bytes.Equal(got, want) {
			t.Fatalf("ReadSlice(%d, %d, %d) = %d bytes, Read = %d bytes", offset, maxBytes, maxOffset, len(got), len(want))
		}
		hs := headers(t, got)
		if next := hs[len(hs)-1].NextOffset(); s.UpperOffset() < next || s.UpperOffset() > maxOffset {
			t.Fatalf("ReadSlice(%d, %d, %d): upper offset %d, want within [%d, %d]", offset, maxBytes, maxOffset, s.UpperOffset(), next, maxOffset)
		}
	}
}

// TestReadSliceOutlivesRetention: a slice read before retention deletes
// its segment, and the log closes, still reads its bytes; the file
// closes when the slice is released.
func TestReadSliceOutlivesRetention(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "orders-0"), LogConfig{SegmentBytes: 4 << 10})
	for range 40 {
		mustAppend(t, l, makeBatch(t, 4, 1000, 200))
	}
	want, err := l.Read(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.ReadSlice(0, 1<<20, l.LogEndOffset())
	if err != nil || s == nil || s.Len() != len(want) {
		t.Fatalf("ReadSlice = %v, %v; want %d bytes", s, err, len(want))
	}
	if err := l.IncrementLogStartOffset(l.LogEndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	if n, err := l.DeleteOldSegments(); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments, %v", n, err)
	}
	// Closing the log removes the deleted segments' files at once.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.File(); fileExists(f.Name()) {
		t.Fatalf("%s still exists after retention and close", f.Name())
	}
	got := make([]byte, s.Len())
	if err := s.ReadTo(got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after retention: %v, bytes equal %v", err, bytes.Equal(got, want))
	}
	s.Release()
	s.Release() // a second release does nothing
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestReadSliceBoundedByFileCache: slices hold at most half of the file
// cache's capacity; past that ReadSlice returns the same bytes read into
// memory, and releasing slices makes room again.
func TestReadSliceBoundedByFileCache(t *testing.T) {
	cache := NewFileCache(8) // slices may hold 4 files
	l := openLog(t, filepath.Join(t.TempDir(), "orders-0"), LogConfig{Files: cache})
	for range 3 {
		mustAppend(t, l, makeBatch(t, 2, 1000, 100))
	}
	want, err := l.Read(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	var held []*FileSlice
	for i := range 6 {
		s, err := l.ReadSlice(0, 1<<20, l.LogEndOffset())
		if err != nil || s == nil {
			t.Fatalf("ReadSlice %d: %v, %v", i, s, err)
		}
		f, _ := s.File()
		if inFile := i < 4; (f != nil) != inFile || (s.Bytes() == nil) != inFile {
			t.Fatalf("slice %d: file %v, %d bytes in memory; want it in the file: %v", i, f != nil, len(s.Bytes()), inFile)
		}
		got := make([]byte, s.Len())
		if err := s.ReadTo(got); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("slice %d: %v, bytes equal %v", i, err, bytes.Equal(got, want))
		}
		held = append(held, s)
	}
	for _, s := range held {
		s.Release()
	}
	s, err := l.ReadSlice(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if f, _ := s.File(); f == nil {
		t.Fatal("after releasing every slice, a new one is still read into memory")
	}
}
