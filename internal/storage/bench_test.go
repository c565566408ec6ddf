package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

// BenchmarkCompaction writes 1,000,000 updates of 100-byte values over 1,000
// keys (random order, 100 records a batch, 64 MiB segments), then cleans
// the log once. It reports the cleaner's throughput (MB of log read per
// second) and the disk used after cleaning against the live data (one
// record per key). Run with -benchtime=1x. TestCompactionDiskTarget
// (cleaner_test.go) checks the same target on a smaller log in every
// go test run.
func BenchmarkCompaction(b *testing.B) {
	const keys, updates = 1000, 1_000_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "bench-0")
		l, ts := writeCompactionLog(b, dir, keys, updates, 64<<20, uint64(i))
		c := newCleaner(DefaultCleanerDedupeBufferSize, nil)
		b.StartTimer()
		st, err := c.clean(l, -1)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		disk, live := compactionDiskUse(b, l, dir, keys, ts)
		b.ReportMetric(st.MBPerSec(), "MB/s")
		b.ReportMetric(float64(st.BytesRead)/1e6, "MB-before")
		b.ReportMetric(float64(disk)/1e3, "kB-disk-after")
		b.ReportMetric(float64(disk)/float64(live), "disk/live")
		checkCompactionTarget(b, st, keys, disk, live)
		l.Close()
	}
}

// compactionValueSize and compactionPerBatch are the compaction target's
// workload (issue 6): 100-byte values, 100 records a batch.
const compactionValueSize, compactionPerBatch = 100, 100

// writeCompactionLog opens a compacted log in dir with segmentBytes
// segments, appends updates records with keys drawn at random (seeded) out
// of keys, compactionPerBatch records a batch, no compression, and rolls
// the active segment so that all of it can be cleaned. It returns the log
// and the records' timestamp.
func writeCompactionLog(tb testing.TB, dir string, keys, updates int, segmentBytes int64, seed uint64) (*Log, int64) {
	tb.Helper()
	l := openLog(tb, dir, LogConfig{SegmentBytes: segmentBytes, CleanupPolicy: CleanupCompact, FileDeleteDelayMs: 1})
	rng := rand.New(rand.NewPCG(1, seed))
	value := bytes.Repeat([]byte("v"), compactionValueSize)
	recs := make([]record.Record, compactionPerBatch)
	ts := time.Now().UnixMilli()
	for n := 0; n < updates; n += compactionPerBatch {
		for j := range recs {
			recs[j] = record.Record{Timestamp: ts, Key: fmt.Appendf(nil, "key-%04d", rng.IntN(keys)), Value: value}
		}
		if _, err := l.Append(record.Build(record.BuildOptions{}, recs)); err != nil {
			tb.Fatal(err)
		}
	}
	forceRoll(tb, l)
	return l, ts
}

// compactionDiskUse waits for the cleaned log's replaced files to be
// deleted and returns the disk dir uses and the live data: keys records of
// one key each, every one as its own batch. Disk use is allocated blocks:
// the empty active segment's preallocated indexes are sparse files of
// segment.index.bytes.
func compactionDiskUse(tb testing.TB, l *Log, dir string, keys int, ts int64) (disk, live int64) {
	tb.Helper()
	l.deletes.Wait()
	for _, name := range filesIn(tb, dir) {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		disk += st.Sys().(*syscall.Stat_t).Blocks * 512
	}
	one := record.Build(record.BuildOptions{}, []record.Record{{Timestamp: ts, Key: []byte("key-0000"), Value: bytes.Repeat([]byte("v"), compactionValueSize)}})
	return disk, int64(keys * len(one))
}

// checkCompactionTarget fails tb unless the cleaner kept exactly one record
// per key and the log uses under 2x its live data on disk (issue 6's
// target, docs/benchmarks.md "Log compaction").
func checkCompactionTarget(tb testing.TB, st CleanStats, keys int, disk, live int64) {
	tb.Helper()
	if st.RecordsKept != int64(keys) {
		tb.Errorf("cleaner kept %d records, want one per key (%d)", st.RecordsKept, keys)
	}
	if disk >= 2*live {
		tb.Errorf("%d bytes on disk after cleaning, %.2fx the live data (%d bytes); target: under 2x", disk, float64(disk)/float64(live), live)
	}
}

func filesIn(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// BenchmarkAppendFsyncEach appends 1 KiB batches from 16 goroutines to one
// log with flush.messages=1: each append returns once fsynced, and
// concurrent appends share fsyncs (group commit).
func BenchmarkAppendFsyncEach(b *testing.B) {
	l := openLog(b, b.TempDir(), LogConfig{SegmentBytes: 64 << 20, FlushMessages: 1})
	batch := makeBatch(b, 1, 1, 1024-record61Overhead)
	b.SetBytes(int64(len(batch)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		own := bytes.Clone(batch) // Append writes the base offset in place
		for pb.Next() {
			if _, err := l.Append(own); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
