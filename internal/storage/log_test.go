package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/record"
)

func TestAppendReadRoundTrip(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "orders-0"), LogConfig{})
	if l.Topic() != "orders" || l.Partition() != 0 {
		t.Fatalf("topic/partition from dir = %q/%d", l.Topic(), l.Partition())
	}
	var want []byte
	for i, n := range []int{3, 1, 5} {
		b := makeBatch(t, n, 1000+int64(i), 10)
		off := mustAppend(t, l, b)
		if wantOff := []int64{0, 3, 4}[i]; off != wantOff {
			t.Fatalf("batch %d at offset %d, want %d", i, off, wantOff)
		}
		// Append rewrote the base offset in the caller's bytes.
		if got := int64(binary.BigEndian.Uint64(b)); got != off {
			t.Fatalf("base offset in caller's bytes = %d, want %d", got, off)
		}
		want = append(want, b...)
	}
	if l.LogEndOffset() != 9 || l.LogStartOffset() != 0 {
		t.Fatalf("LEO %d start %d, want 9 and 0", l.LogEndOffset(), l.LogStartOffset())
	}
	got, err := l.Read(0, 1<<20, l.LogEndOffset())
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Read(0) = %d bytes, %v; want the %d appended bytes", len(got), err, len(want))
	}
	// An offset inside the third batch returns that batch whole.
	got, err = l.Read(6, 1<<20, 9)
	if err != nil {
		t.Fatal(err)
	}
	if hs := headers(t, got); len(hs) != 1 || hs[0].BaseOffset != 4 || hs[0].NumRecords != 5 {
		t.Fatalf("Read(6) = %+v, want the batch at 4", hs)
	}
	// The segment file holds exactly the appended bytes.
	disk, err := os.ReadFile(filepath.Join(l.Dir(), "00000000000000000000.log"))
	if err != nil || !bytes.Equal(disk, want) {
		t.Fatalf("segment file differs from the appended batches (%v)", err)
	}
}

func TestReadLimits(t *testing.T) {
	l := openLog(t, t.TempDir(), LogConfig{})
	var sizes []int
	for i := 0; i < 4; i++ {
		b := makeBatch(t, 2, 1, 100)
		sizes = append(sizes, len(b))
		mustAppend(t, l, b) // offsets 0,2,4,6; LEO 8
	}
	cases := []struct {
		name      string
		offset    int64
		maxBytes  int
		maxOffset int64
		wantBases []int64
	}{
		{"all", 0, 1 << 20, 8, []int64{0, 2, 4, 6}},
		{"high watermark cuts", 0, 1 << 20, 4, []int64{0, 2}},
		{"high watermark inside a batch excludes it", 0, 1 << 20, 5, []int64{0, 2}},
		{"maxBytes cuts at batch boundary", 0, sizes[0] + sizes[1] + 10, 8, []int64{0, 2}},
		{"first batch whole even if larger than maxBytes", 2, 1, 8, []int64{2}},
		{"from the middle of a batch", 5, 1 << 20, 8, []int64{4, 6}},
		{"at log end", 8, 1 << 20, 8, nil},
		{"at high watermark", 4, 1 << 20, 4, nil},
		{"maxOffset above LEO is clamped", 6, 1 << 20, 100, []int64{6}},
	}
	for _, c := range cases {
		got, err := l.Read(c.offset, c.maxBytes, c.maxOffset)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if bases := baseOffsets(headers(t, got)); !slices.Equal(bases, c.wantBases) {
			t.Errorf("%s: got batches %v, want %v", c.name, bases, c.wantBases)
		}
	}
	if _, err := l.Read(9, 100, 9); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("Read past LEO: err %v, want ErrOffsetOutOfRange", err)
	}
	if err := l.IncrementLogStartOffset(4); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(3, 100, 8); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("Read below log start: err %v, want ErrOffsetOutOfRange", err)
	}
	if got, _ := l.Read(4, 1, 8); baseOffsets(headers(t, got))[0] != 4 {
		t.Errorf("Read at new log start did not return batch 4")
	}
}

func TestRollBySizeAndIndexLookup(t *testing.T) {
	batch := makeBatch(t, 1, 1, 200)
	size := len(batch)
	cfg := LogConfig{SegmentBytes: int64(10 * size), IndexIntervalBytes: 3 * size, SegmentIndexBytes: 1024}
	l := openLog(t, t.TempDir(), cfg)
	for i := 0; i < 35; i++ {
		if off := mustAppend(t, l, makeBatch(t, 1, int64(1000+i), 200)); off != int64(i) {
			t.Fatalf("append %d got offset %d", i, off)
		}
	}
	segs := l.Segments()
	if got := len(segs); got != 4 {
		t.Fatalf("%d segments, want 4: %+v", got, segs)
	}
	for i, s := range segs {
		wantBase := int64(10 * i)
		if s.BaseOffset != wantBase {
			t.Errorf("segment %d base %d, want %d", i, s.BaseOffset, wantBase)
		}
		wantBatches := min(10, 35-10*i)
		if s.Size != int64(wantBatches*size) || s.NextOffset != wantBase+int64(wantBatches) {
			t.Errorf("segment %d: size %d next %d, want %d and %d", i, s.Size, s.NextOffset, wantBatches*size, wantBase+int64(wantBatches))
		}
		// One entry each time more than 3 batches' bytes passed: at batches 4 and 8.
		if i < 3 && (s.IndexEntries != 2 || s.TimeIndexEntries != 3) {
			t.Errorf("segment %d: %d index / %d time index entries, want 2 and 3 (2 + final)", i, s.IndexEntries, s.TimeIndexEntries)
		}
		if s.MaxTimestamp != 1000+wantBase+int64(wantBatches-1) {
			t.Errorf("segment %d max timestamp %d", i, s.MaxTimestamp)
		}
	}
	// Inactive segments' indexes are trimmed; the active one is preallocated.
	dir := l.Dir()
	if got := fileSize(t, segmentFileName(dir, 10, indexSuffix)); got != 16 {
		t.Errorf("inactive .index is %d bytes, want 16", got)
	}
	if got := fileSize(t, segmentFileName(dir, 10, timeIndexSuffix)); got != 36 {
		t.Errorf("inactive .timeindex is %d bytes, want 36", got)
	}
	if got := fileSize(t, segmentFileName(dir, 30, indexSuffix)); got != 1024 {
		t.Errorf("active .index is %d bytes, want 1024", got)
	}
	if got := fileSize(t, segmentFileName(dir, 30, timeIndexSuffix)); got != 1020 {
		t.Errorf("active .timeindex is %d bytes, want 1020 (rounded to 12)", got)
	}
	// Entries as Kafka writes them: (last offset - base, batch position).
	idx, _ := os.ReadFile(segmentFileName(dir, 10, indexSuffix))
	if rel, pos := binary.BigEndian.Uint32(idx), binary.BigEndian.Uint32(idx[4:]); rel != 4 || pos != uint32(4*size) {
		t.Errorf("first index entry (%d, %d), want (4, %d)", rel, pos, 4*size)
	}
	tidx, _ := os.ReadFile(segmentFileName(dir, 10, timeIndexSuffix))
	if ts, rel := binary.BigEndian.Uint64(tidx), binary.BigEndian.Uint32(tidx[8:]); ts != 1014 || rel != 4 {
		t.Errorf("first time index entry (%d, %d), want (1014, 4)", ts, rel)
	}
	// Every offset reads back its own batch, through the index.
	for off := int64(0); off < 35; off++ {
		got, err := l.Read(off, 1, 35)
		if err != nil {
			t.Fatal(err)
		}
		if hs := headers(t, got); len(hs) != 1 || hs[0].BaseOffset != off {
			t.Fatalf("Read(%d) = %v", off, baseOffsets(hs))
		}
	}
	// A read is limited to one segment.
	got, _ := l.Read(17, 1<<20, 35)
	if bases := baseOffsets(headers(t, got)); len(bases) != 3 || bases[0] != 17 || bases[2] != 19 {
		t.Errorf("Read(17) = %v, want 17..19", bases)
	}
	for _, c := range []struct{ ts, off, foundTs int64 }{{0, 0, 1000}, {1015, 15, 1015}, {1034, 34, 1034}} {
		off, ts, found, err := l.OffsetForTimestamp(c.ts)
		if err != nil || !found || off != c.off || ts != c.foundTs {
			t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d", c.ts, off, ts, found, err, c.off, c.foundTs)
		}
	}
	if _, _, found, _ := l.OffsetForTimestamp(2000); found {
		t.Errorf("OffsetForTimestamp past the max timestamp found something")
	}
}

func TestRollByTime(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_000_000)}
	cfg := LogConfig{SegmentMs: time.Hour, Now: clock.Now}
	l := openLog(t, t.TempDir(), cfg)
	hour := time.Hour.Milliseconds()
	// With timestamps, the segment's age is measured by them (Kafka).
	mustAppend(t, l, makeBatch(t, 1, 5000, 10))
	mustAppend(t, l, makeBatch(t, 1, 5000+hour, 10)) // exactly segment.ms: no roll
	mustAppend(t, l, makeBatch(t, 1, 5001+hour, 10)) // past it: roll at offset 2
	if bases := segmentBases(l); !slices.Equal(bases, []int64{0, 2}) {
		t.Fatalf("segments %v, want [0 2]", bases)
	}
	// Without timestamps, by the clock since the segment was created.
	l2 := openLog(t, t.TempDir(), cfg)
	mustAppend(t, l2, makeBatch(t, 1, -1, 10))
	clock.Advance(time.Hour)
	mustAppend(t, l2, makeBatch(t, 1, -1, 10))
	clock.Advance(time.Millisecond)
	mustAppend(t, l2, makeBatch(t, 1, -1, 10))
	if bases := segmentBases(l2); !slices.Equal(bases, []int64{0, 2}) {
		t.Fatalf("segments %v, want [0 2]", bases)
	}
}

func segmentBases(l *Log) []int64 {
	var out []int64
	for _, s := range l.Segments() {
		out = append(out, s.BaseOffset)
	}
	return out
}

func TestAppendAsFollower(t *testing.T) {
	l := openLog(t, t.TempDir(), LogConfig{})
	b := makeBatch(t, 3, 1, 10)
	record.SetBaseOffset(b, 10) // a gap, as after compaction on the leader
	first, last, err := l.AppendAsFollower(b)
	if err != nil || first != 10 || last != 12 || l.LogEndOffset() != 13 {
		t.Fatalf("follower append = %d..%d, %v, LEO %d; want 10..12, LEO 13", first, last, err, l.LogEndOffset())
	}
	b2 := makeBatch(t, 1, 1, 10)
	record.SetBaseOffset(b2, 12)
	if _, _, err := l.AppendAsFollower(b2); !errors.Is(err, ErrOffsetsOutOfOrder) {
		t.Fatalf("overlapping follower append: err %v, want ErrOffsetsOutOfOrder", err)
	}
	// Two batches at once, offsets kept.
	two := append(makeBatch(t, 2, 1, 10), makeBatch(t, 2, 1, 10)...)
	record.SetBaseOffset(two, 13)
	record.SetBaseOffset(two[len(two)/2:], 20)
	if first, last, err := l.AppendAsFollower(two); err != nil || first != 13 || last != 21 {
		t.Fatalf("two-batch follower append = %d..%d, %v", first, last, err)
	}
	got, _ := l.Read(15, 1<<20, 22)
	if bases := baseOffsets(headers(t, got)); !slices.Equal(bases, []int64{20}) {
		t.Fatalf("Read(15) across the gap = %v, want [20]", bases)
	}
}

func TestAppendBatchesAndBadInput(t *testing.T) {
	l := openLog(t, t.TempDir(), LogConfig{})
	two := append(makeBatch(t, 2, 1, 10), makeBatch(t, 3, 1, 10)...)
	if first, last, err := l.AppendBatches(two); err != nil || first != 0 || last != 4 {
		t.Fatalf("AppendBatches = %d..%d, %v; want 0..4", first, last, err)
	}
	b := makeBatch(t, 1, 1, 10)
	if _, err := l.Append(b[:len(b)-1]); !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("truncated batch: err %v, want ErrCorrupt", err)
	}
	if _, err := l.Append(nil); !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("empty append: err %v, want ErrCorrupt", err)
	}
	if l.LogEndOffset() != 5 {
		t.Fatalf("failed appends moved LEO to %d", l.LogEndOffset())
	}
}

func TestTruncateTo(t *testing.T) {
	size := len(makeBatch(t, 2, 1, 100))
	l := openLog(t, t.TempDir(), LogConfig{SegmentBytes: int64(3 * size), IndexIntervalBytes: 1})
	for i := 0; i < 8; i++ {
		mustAppend(t, l, makeBatch(t, 2, int64(100+i), 100)) // bases 0,2,...,14; segments at 0, 6, 12
	}
	if err := l.TruncateTo(9); err != nil { // inside the batch at 8: removed whole
		t.Fatal(err)
	}
	if l.LogEndOffset() != 8 || !slices.Equal(segmentBases(l), []int64{0, 6}) {
		t.Fatalf("after TruncateTo(9): LEO %d segments %v; want 8, [0 6]", l.LogEndOffset(), segmentBases(l))
	}
	if _, err := os.Stat(segmentFileName(l.Dir(), 12, logSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 12 still on disk: %v", err)
	}
	if off := mustAppend(t, l, makeBatch(t, 1, 500, 10)); off != 8 {
		t.Fatalf("append after truncate at %d, want 8", off)
	}
	if s := l.Segments()[1]; s.MaxTimestamp != 500 || s.NextOffset != 9 {
		t.Fatalf("active segment after truncate+append: %+v", s)
	}
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 0 || !slices.Equal(segmentBases(l), []int64{0}) || l.Segments()[0].Size != 0 {
		t.Fatalf("after TruncateTo(0): LEO %d segments %+v", l.LogEndOffset(), l.Segments())
	}
}

func TestConcurrentReadsDuringAppends(t *testing.T) {
	batch := makeBatch(t, 4, 1, 64)
	l := openLog(t, t.TempDir(), LogConfig{SegmentBytes: int64(20 * len(batch)), IndexIntervalBytes: 256})
	const batches = 400
	done := make(chan struct{})
	errs := make(chan error, 4)
	for r := 0; r < 3; r++ {
		go func() {
			next := int64(0)
			for next < batches*4 {
				got, err := l.Read(next, 1000, l.LogEndOffset())
				if err != nil {
					errs <- err
					return
				}
				for len(got) > 0 {
					h, err := record.ParseHeader(got)
					if err != nil || h.BaseOffset != next || record.ComputeCRC(got) != h.CRC {
						errs <- errors.New("reader saw a wrong or torn batch")
						return
					}
					next = h.NextOffset()
					got = got[h.Size():]
				}
			}
			errs <- nil
		}()
	}
	go func() {
		defer close(done)
		for i := 0; i < batches; i++ {
			if _, err := l.Append(makeBatch(t, 4, int64(i), 64)); err != nil {
				errs <- err
				return
			}
		}
	}()
	<-done
	for r := 0; r < 3; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if l.LogEndOffset() != batches*4 || len(l.Segments()) != 20 {
		t.Fatalf("LEO %d, %d segments; want %d and 20", l.LogEndOffset(), len(l.Segments()), batches*4)
	}
}

func TestFlushPolicy(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(0)}
	l := openLog(t, t.TempDir(), LogConfig{FlushMessages: 5, FlushMs: 1000, Now: clock.Now})
	synced := func() int64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.mu.syncedTo
	}
	mustAppend(t, l, makeBatch(t, 3, 1, 10))
	if s := synced(); s != 0 {
		t.Fatalf("fsynced up to %d after 3 messages, want 0", s)
	}
	mustAppend(t, l, makeBatch(t, 2, 1, 10))
	if s := synced(); s != 5 {
		t.Fatalf("fsynced up to %d after flush.messages, want 5", s)
	}
	mustAppend(t, l, makeBatch(t, 1, 1, 10))
	clock.Advance(time.Second)
	if err := l.flushIfDue(); err != nil || synced() != 6 {
		t.Fatalf("flush.ms: fsynced up to %d (%v), want 6", synced(), err)
	}
	// The recovery point (fsynced with indexes) moves on a full flush.
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d before a full flush, want 0", rp)
	}
	if err := l.Flush(); err != nil || l.RecoveryPoint() != 6 {
		t.Fatalf("Flush: recovery point %d (%v), want 6", l.RecoveryPoint(), err)
	}
}
