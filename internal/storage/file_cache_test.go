package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/samsa-io/samsa/internal/record"
)

// openFDs counts the process's open descriptors whose target is under dir.
func openFDs(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && len(target) > len(dir) && target[:len(dir)+1] == dir+"/" {
			n++
		}
	}
	return n
}

// readChecked reads the log from its start and checks every batch's offsets
// and CRC; it returns how many records it read.
func readChecked(t *testing.T, l *Log) int64 {
	t.Helper()
	next := l.LogStartOffset()
	for next < l.LogEndOffset() {
		got, err := l.Read(next, 1<<20, l.LogEndOffset())
		if err != nil {
			t.Fatalf("%s: read at %d: %v", l.Dir(), next, err)
		}
		if len(got) == 0 {
			t.Fatalf("%s: nothing at %d below the log end %d", l.Dir(), next, l.LogEndOffset())
		}
		for _, h := range headers(t, got) {
			if h.BaseOffset != next {
				t.Fatalf("%s: batch at %d, want %d", l.Dir(), h.BaseOffset, next)
			}
			next = h.NextOffset()
		}
	}
	return next - l.LogStartOffset()
}

// Many logs sharing a small cache keep at most its capacity of files open,
// serve every read and append, and come back after a clean restart.
func TestFileCacheBoundsOpenFiles(t *testing.T) {
	const logs, capacity = 40, 8
	root := t.TempDir()
	cache := NewFileCache(capacity)
	batch := makeBatch(t, 5, 1, 100)
	cfg := LogConfig{Files: cache, SegmentBytes: int64(3 * len(batch)), IndexIntervalBytes: 1}
	open := func(opts OpenOptions) []*Log {
		var out []*Log
		for i := range logs {
			l, err := OpenWithOptions(filepath.Join(root, fmt.Sprintf("t-%d", i)), cfg, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, l)
		}
		return out
	}
	ls := open(OpenOptions{})
	for round := range 7 {
		for _, l := range ls {
			if _, err := l.Append(makeBatch(t, 5, int64(round), 100)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, l := range ls {
		l.flushes.Wait() // the fsyncs that rolls start hold their files meanwhile
	}
	if n := openFDs(t, root); n > capacity {
		t.Fatalf("%d files open under the log dirs, want at most %d", n, capacity)
	}
	for _, l := range ls {
		if n := readChecked(t, l); n != 35 {
			t.Fatalf("%s: read %d records, want 35", l.Dir(), n)
		}
		if len(l.Segments()) != 3 {
			t.Fatalf("%s: %d segments, want 3", l.Dir(), len(l.Segments()))
		}
	}
	if st := cache.Stats(); st.Open > capacity || st.Evictions == 0 {
		t.Fatalf("cache %+v: want at most %d open and some evictions", st, capacity)
	}
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := openFDs(t, root); n != 0 {
		t.Fatalf("%d files still open after every log closed", n)
	}
	ls = open(OpenOptions{CleanShutdown: true, RecoveryPoint: 35})
	for _, l := range ls {
		if l.LogEndOffset() != 35 || readChecked(t, l) != 35 {
			t.Fatalf("%s after restart: log end %d, want 35 records", l.Dir(), l.LogEndOffset())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Readers and appenders of many logs over a cache of two files: every read
// sees whole, correct batches while the cache closes and reopens files
// under them (run with -race).
func TestFileCacheConcurrentUse(t *testing.T) {
	root := t.TempDir()
	cache := NewFileCache(2)
	batch := makeBatch(t, 4, 1, 64)
	const logs, batches = 6, 150
	var wg sync.WaitGroup
	errs := make(chan error, 4*logs)
	for i := range logs {
		l, err := Open(filepath.Join(root, fmt.Sprintf("c-%d", i)), LogConfig{Files: cache, SegmentBytes: int64(10 * len(batch)), IndexIntervalBytes: 128}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		wg.Add(3)
		go func() {
			defer wg.Done()
			for i := range batches {
				if _, err := l.Append(makeBatch(t, 4, int64(i), 64)); err != nil {
					errs <- err
					return
				}
			}
		}()
		for range 2 {
			go func() {
				defer wg.Done()
				for next := int64(0); next < batches*4; {
					got, err := l.Read(next, 700, l.LogEndOffset())
					if err != nil {
						errs <- err
						return
					}
					for len(got) > 0 {
						h, err := record.ParseHeader(got)
						if err != nil || h.BaseOffset != next || record.ComputeCRC(got[:h.Size()]) != h.CRC {
							errs <- fmt.Errorf("%s: wrong or torn batch at %d", l.Dir(), next)
							return
						}
						next = h.NextOffset()
						got = got[h.Size():]
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A file closed while in use stays usable by its user, is closed by the
// last release, and refuses later uses; one evicted and then renamed
// reopens under its new name.
func TestCachedFileCloseAndRename(t *testing.T) {
	dir := t.TempDir()
	cache := NewFileCache(1)
	a, err := cache.openCachedFile(filepath.Join(dir, "a"), os.O_RDWR|os.O_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	b, err := cache.openCachedFile(filepath.Join(dir, "b"), os.O_RDWR|os.O_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	if st := cache.Stats(); st.Open != 1 {
		t.Fatalf("%d files open, want 1 (a evicted for b)", st.Open)
	}
	if err := a.rename(filepath.Join(dir, "a2")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := a.ReadAt(buf, 0); err != nil || string(buf) != "hello" {
		t.Fatalf("read after evict and rename: %q, %v", buf, err)
	}
	if a.Name() != filepath.Join(dir, "a2") {
		t.Fatalf("name %s after rename", a.Name())
	}

	f, err := b.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatalf("write by a user that holds the closed file: %v", err)
	}
	b.release()
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("descriptor still open after the last release: %v", err)
	}
	if _, err := b.ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("use after close: %v, want os.ErrClosed", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if st := cache.Stats(); st.Open != 0 {
		t.Fatalf("%d files open after both closed", st.Open)
	}
}

// Opening an idle log after a clean stop and closing it again changes none
// of its segment files and fsyncs none: a node with many idle partitions
// starts and stops without touching them. An append after the reopen sizes
// the indexes again and is flushed on close.
func TestIdleLogReopenTouchesNoFile(t *testing.T) {
	dir := t.TempDir()
	cache := NewFileCache(16)
	cfg := LogConfig{Files: cache, IndexIntervalBytes: 1}
	l, err := Open(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustAppend(t, l, makeBatch(t, 2, int64(i), 50))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	type file struct {
		size  int64
		mtime int64
	}
	files := func() map[string]file {
		out := map[string]file{}
		for _, ext := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			st, err := os.Stat(segmentFileName(dir, 0, ext))
			if err != nil {
				t.Fatal(err)
			}
			out[ext] = file{st.Size(), st.ModTime().UnixNano()}
		}
		return out
	}
	before := files()
	syncs := cache.Stats().Syncs
	l, err = OpenWithOptions(dir, cfg, nil, OpenOptions{CleanShutdown: true, RecoveryPoint: 6})
	if err != nil {
		t.Fatal(err)
	}
	if n := readChecked(t, l); n != 6 {
		t.Fatalf("read %d records after reopen, want 6", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if after := files(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("segment files changed by an idle open and close: %v, then %v", before, after)
	}
	if n := cache.Stats().Syncs - syncs; n != 0 {
		t.Fatalf("%d fsyncs for an idle open and close, want 0", n)
	}

	l, err = OpenWithOptions(dir, cfg, nil, OpenOptions{CleanShutdown: true, RecoveryPoint: 6})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustAppend(t, l, makeBatch(t, 2, int64(10+i), 50))
	}
	if segs := l.Segments(); len(segs) != 1 || segs[0].IndexEntries != 5 {
		t.Fatalf("segments %+v after three more appends: want one segment (its trimmed indexes sized again) with 5 index entries", segs)
	}
	syncs = cache.Stats().Syncs
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := cache.Stats().Syncs - syncs; n < 3 {
		t.Fatalf("%d fsyncs closing a log with new appends, want the log and both indexes", n)
	}
	if st, _ := os.Stat(segmentFileName(dir, 0, indexSuffix)); st.Size() != 5*offsetIndexEntrySize {
		t.Fatalf("index of %d bytes after close, want 5 entries trimmed", st.Size())
	}
	l, err = OpenWithOptions(dir, cfg, nil, OpenOptions{CleanShutdown: true, RecoveryPoint: 12})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n := readChecked(t, l); n != 12 {
		t.Fatalf("read %d records after the second reopen, want 12", n)
	}
}
