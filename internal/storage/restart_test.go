package storage

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// TestIdleEmptyLogReopenSyncsNothing: a log without records, opened after
// a clean stop and closed again, fsyncs none of its files. A node with
// many empty partitions stops in the time of its busy ones.
func TestIdleEmptyLogReopenSyncsNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cache := NewFileCache(16)
	cfg := LogConfig{Files: cache}
	l, err := Open(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	syncs := cache.Stats().Syncs
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := cache.Stats().Syncs - syncs; n != 0 {
		t.Fatalf("%d fsyncs for the clean stop of a new empty log, want 0", n)
	}
	for range 2 {
		syncs := cache.Stats().Syncs
		l, err = OpenWithOptions(dir, cfg, nil, OpenOptions{CleanShutdown: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if n := cache.Stats().Syncs - syncs; n != 0 {
			t.Fatalf("%d fsyncs for an idle open and close of an empty log, want 0", n)
		}
	}
	// Still a working log.
	l = openLog(t, dir, cfg)
	defer l.Close()
	if off := mustAppend(t, l, makeBatch(t, 2, 1, 10)); off != 0 {
		t.Fatalf("first append at %d, want 0", off)
	}
}

// TestCrashedEmptyLogOpensQuietly: after a crash an empty log's indexes are
// still preallocated (zeros); opening it is no corrupt index to warn about,
// and the log is empty and appendable, its indexes working.
func TestCrashedEmptyLogOpensQuietly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := LogConfig{IndexIntervalBytes: 1, SegmentIndexBytes: 4096}
	l, err := Open(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, segmentFileName(dir, 0, indexSuffix)); got != 4096 {
		t.Fatalf("new segment's index is %d bytes, want 4096 (preallocated)", got)
	}
	crashed := filepath.Join(t.TempDir(), "t-0")
	copyDir(t, dir, crashed) // the files as a kill -9 leaves them
	l.Close()

	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err = OpenWithOptions(crashed, cfg, logger, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if strings.Contains(logs.String(), "index") {
		t.Fatalf("opening a crashed empty log warned: %s", logs.String())
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end offset %d, want 0", l.LogEndOffset())
	}
	for i := range 3 {
		mustAppend(t, l, makeBatch(t, 2, int64(100+i), 50))
	}
	if segs := l.Segments(); len(segs) != 1 || segs[0].IndexEntries != 2 || segs[0].NextOffset != 6 {
		t.Fatalf("segments %+v after three appends, want one segment with 2 index entries (the first batch is not indexed) ending at 6", segs)
	}
	got, err := l.Read(4, 1<<20, l.LogEndOffset())
	if err != nil || len(headers(t, got)) != 1 || headers(t, got)[0].BaseOffset != 4 {
		t.Fatalf("Read(4): %v, %v", headers(t, got), err)
	}
}

// TestCrashedLogOpensQuietly: after a crash the active segment's indexes
// are preallocated past their entries; its recovery rebuilds them without
// a warning, and the log has every record.
func TestCrashedLogOpensQuietly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := LogConfig{IndexIntervalBytes: 1, SegmentIndexBytes: 4096}
	l, err := Open(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		mustAppend(t, l, makeBatch(t, 2, int64(100+i), 50))
	}
	crashed := filepath.Join(t.TempDir(), "t-0")
	copyDir(t, dir, crashed)
	l.Close()

	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err = OpenWithOptions(crashed, cfg, logger, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if logs.Len() > 0 {
		t.Fatalf("opening a crashed log warned: %s", logs.String())
	}
	if l.LogEndOffset() != 8 {
		t.Fatalf("log end offset %d, want 8", l.LogEndOffset())
	}
	if segs := l.Segments(); len(segs) != 1 || segs[0].IndexEntries != 3 || segs[0].TimeIndexEntries != 3 {
		t.Fatalf("segments %+v, want one with 3 offset and 3 time index entries", segs)
	}
	got, err := l.Read(6, 1<<20, l.LogEndOffset())
	if err != nil || len(headers(t, got)) != 1 || headers(t, got)[0].BaseOffset != 6 {
		t.Fatalf("Read(6): %v, %v", headers(t, got), err)
	}
}
