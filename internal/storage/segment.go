package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/record"
)

// File name suffixes, as Kafka names them.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted"
	cleanedSuffix   = ".cleaned"
	swapSuffix      = ".swap"
)

// segmentFileName is Kafka's "%020d" + suffix.
func segmentFileName(dir string, baseOffset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", baseOffset, suffix))
}

// segment is one .log file with its two indexes (Kafka's LogSegment).
//
// Fields marked "writer" are touched only with Log.mu held. The atomics are
// published after the bytes they describe, for lock-free readers.
type segment struct {
	baseOffset int64
	path       string // of the .log file; changes when renameFiles renames it
	log        *cachedFile
	index      *offsetIndex
	timeIndex  *timeIndex
	txnIndex   *txnIndex

	size         atomic.Int64 // bytes of whole batches in log
	nextOffset   atomic.Int64 // offset after the last batch; baseOffset when empty
	maxTimestamp atomic.Int64 // largest batch max timestamp; noTimestamp if none

	offsetOfMaxTimestamp int64     // writer: last offset of the batch holding maxTimestamp
	bytesSinceIndexEntry int       // writer
	firstBatchTimestamp  int64     // writer: rolling base for segment.ms; noTimestamp if unknown
	created              time.Time // writer: fallback base for segment.ms
	// unsized (writer) marks an active segment loaded after a clean stop
	// whose indexes still have their trimmed length: the first append
	// preallocates them, so that loading and stopping an idle partition
	// changes none of its files.
	unsized bool
}

// batchMeta describes one batch of an append, found by walking its headers.
type batchMeta struct {
	pos          int // within the appended bytes
	baseOffset   int64
	size         int
	lastOffset   int64
	maxTimestamp int64
	leaderEpoch  int32 // the batch's partition leader epoch
}

// createSegment makes a new, empty segment with preallocated indexes.
func createSegment(dir string, baseOffset int64, cfg LogConfig) (*segment, error) {
	return createSegmentFiles(dir, baseOffset, cfg, "", cfg.SegmentIndexBytes)
}

// createSegmentFiles is createSegment with a suffix after each file's
// extension (the cleaner writes "<base>.log.cleaned" and so on) and an
// explicit preallocated index size.
func createSegmentFiles(dir string, baseOffset int64, cfg LogConfig, suffix string, indexBytes int) (*segment, error) {
	// O_EXCL: a leftover file with this name means our bookkeeping is wrong,
	// and overwriting it could destroy data.
	f, err := cfg.Files.openCachedFile(segmentFileName(dir, baseOffset, logSuffix)+suffix, os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return nil, err
	}
	for _, ext := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := os.Remove(segmentFileName(dir, baseOffset, ext) + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			f.Close()
			return nil, err
		}
	}
	s, _, err := openSegmentFiles(cfg.Files, dir, baseOffset, f, suffix)
	if err != nil {
		return nil, err
	}
	s.created = cfg.Now()
	if err := s.resizeIndexes(indexBytes); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// openSegment opens an existing segment. indexErr reports indexes that fail
// their sanity check and must be rebuilt with recover; err is fatal.
func openSegment(dir string, baseOffset int64, cfg LogConfig) (s *segment, indexErr, err error) {
	if s, ok, err := openEmptySegment(dir, baseOffset, cfg); ok || err != nil {
		return s, nil, err
	}
	f, err := cfg.Files.openCachedFile(segmentFileName(dir, baseOffset, logSuffix), os.O_RDWR)
	if err != nil {
		return nil, nil, err
	}
	var missing error
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		if _, err := os.Stat(segmentFileName(dir, baseOffset, suffix)); errors.Is(err, os.ErrNotExist) {
			missing = fmt.Errorf("%w: %s is missing", errCorruptIndex, segmentFileName(dir, baseOffset, suffix))
		}
	}
	s, indexErr, err = openSegmentFiles(cfg.Files, dir, baseOffset, f, "")
	if err != nil {
		return nil, nil, err
	}
	s.created = cfg.Now()
	st, err := f.Stat()
	if err != nil {
		s.close()
		return nil, nil, err
	}
	s.size.Store(st.Size())
	if st.Size() == 0 {
		// An empty segment's indexes index nothing, whatever their files
		// hold: after a crash they are still preallocated (zeros, which
		// read as entries pointing at position 0), or missing. Nothing
		// to rebuild, nothing to warn about.
		s.index.reset()
		s.timeIndex.reset()
		s.maxTimestamp.Store(noTimestamp)
		s.offsetOfMaxTimestamp = baseOffset
		return s, nil, nil
	}
	if missing != nil {
		indexErr = missing
	}
	if indexErr == nil {
		// Index entries must point inside the log.
		if last, err := s.index.lastEntry(); err != nil || last.position >= st.Size() && s.index.entries() > 0 {
			indexErr = fmt.Errorf("%w: %s: last entry position %d is past the log end %d",
				errCorruptIndex, s.index.path, last.position, st.Size())
		}
	}
	return s, indexErr, nil
}

// openEmptySegment opens a segment whose .log file is empty without
// opening any of its files: it only looks at their sizes. Its indexes
// index nothing (openSegment says why), and its files are opened by the
// file cache when first used, typically by the partition's first append.
// A node with many idle partitions starts without opening (and the cache
// closing again) three files for each. ok is false when the segment is
// not empty or an index file is missing (openSegment then opens it the
// usual way).
func openEmptySegment(dir string, baseOffset int64, cfg LogConfig) (s *segment, ok bool, err error) {
	path := segmentFileName(dir, baseOffset, logSuffix)
	st, err := os.Stat(path)
	if err != nil || st.Size() != 0 {
		return nil, false, err
	}
	var sizes [2]int64
	for i, suffix := range []string{indexSuffix, timeIndexSuffix} {
		ist, err := os.Stat(segmentFileName(dir, baseOffset, suffix))
		if err != nil {
			return nil, false, nil
		}
		sizes[i] = ist.Size()
	}
	txn, err := openTxnIndex(cfg.Files, segmentFileName(dir, baseOffset, txnIndexSuffix))
	if err != nil {
		return nil, false, err
	}
	c := cfg.Files
	s = &segment{baseOffset: baseOffset, path: path, log: c.unopenedCachedFile(path), firstBatchTimestamp: noTimestamp,
		created: cfg.Now(), txnIndex: txn}
	s.nextOffset.Store(baseOffset)
	s.maxTimestamp.Store(noTimestamp)
	s.offsetOfMaxTimestamp = baseOffset
	s.index = &offsetIndex{indexFile: unopenedIndexFile(c, segmentFileName(dir, baseOffset, indexSuffix), offsetIndexEntrySize, sizes[0]),
		baseOffset: baseOffset, lastOffset: baseOffset}
	s.timeIndex = &timeIndex{indexFile: unopenedIndexFile(c, segmentFileName(dir, baseOffset, timeIndexSuffix), timeIndexEntrySize, sizes[1]),
		baseOffset: baseOffset, last: timeEntry{noTimestamp, baseOffset}}
	return s, true, nil
}

func openSegmentFiles(c *FileCache, dir string, baseOffset int64, f *cachedFile, suffix string) (*segment, error, error) {
	s := &segment{baseOffset: baseOffset, path: f.Name(), log: f, firstBatchTimestamp: noTimestamp}
	s.nextOffset.Store(baseOffset)
	s.maxTimestamp.Store(noTimestamp)
	var indexErr error
	var err error
	if s.index, err = openOffsetIndex(c, segmentFileName(dir, baseOffset, indexSuffix)+suffix, baseOffset); s.index == nil {
		f.Close()
		return nil, nil, err
	}
	indexErr = err
	if s.timeIndex, err = openTimeIndex(c, segmentFileName(dir, baseOffset, timeIndexSuffix)+suffix, baseOffset); s.timeIndex == nil {
		f.Close()
		s.index.close()
		return nil, nil, err
	}
	if indexErr == nil {
		indexErr = err
	}
	if s.txnIndex, err = openTxnIndex(c, segmentFileName(dir, baseOffset, txnIndexSuffix)+suffix); err != nil {
		f.Close()
		s.index.close()
		s.timeIndex.close()
		return nil, nil, err
	}
	if indexErr == nil {
		s.maxTimestamp.Store(s.timeIndex.last.timestamp)
		s.offsetOfMaxTimestamp = s.timeIndex.last.offset
	}
	return s, indexErr, nil
}

func (s *segment) resizeIndexes(maxBytes int) error {
	if err := s.index.resize(maxBytes); err != nil {
		return err
	}
	return s.timeIndex.resize(maxBytes)
}

// readHeader reads the batch header at pos. A header that does not fit
// before end, or one that is not a v2 batch, is record.ErrCorrupt.
func (s *segment) readHeader(pos, end int64, buf []byte) (record.Header, error) {
	if pos+record.HeaderSize > end {
		return record.Header{}, fmt.Errorf("%w: batch header at position %d of segment %d runs past %d",
			record.ErrCorrupt, pos, s.baseOffset, end)
	}
	if _, err := s.log.ReadAt(buf[:record.HeaderSize], pos); err != nil {
		return record.Header{}, err
	}
	h, err := record.ParseHeader(buf[:record.HeaderSize])
	if err != nil {
		return h, fmt.Errorf("segment %d position %d: %w", s.baseOffset, pos, err)
	}
	if pos+int64(h.Size()) > end {
		return h, fmt.Errorf("%w: batch at position %d of segment %d runs past %d",
			record.ErrCorrupt, pos, s.baseOffset, end)
	}
	return h, nil
}

// findBatch returns the position and header of the first batch at or after
// from whose last offset is >= offset (Kafka's translateOffset), scanning
// headers only. found is false when no such batch is below end.
func (s *segment) findBatch(offset, from, end int64) (pos int64, h record.Header, found bool, err error) {
	var buf [record.HeaderSize]byte
	for pos = from; pos < end; pos += int64(h.Size()) {
		if h, err = s.readHeader(pos, end, buf[:]); err != nil {
			return 0, h, false, err
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
	}
	return 0, h, false, nil
}

// read returns whole batches starting with the one holding offset, ending
// before the first batch that reaches maxOffset, at most maxBytes long but
// never less than one batch (Kafka's minOneMessage).
func (s *segment) read(offset int64, maxBytes int, maxOffset int64) ([]byte, error) {
	end := s.size.Load()
	e, err := s.index.lookup(offset)
	if err != nil {
		return nil, err
	}
	pos, h, found, err := s.findBatch(offset, e.position, end)
	if err != nil || !found || h.LastOffset() >= maxOffset {
		return nil, err
	}
	want := int64(maxBytes)
	if want < int64(h.Size()) {
		want = int64(h.Size())
	}
	if want > end-pos {
		want = end - pos
	}
	buf := make([]byte, want)
	if _, err := s.log.ReadAt(buf, pos); err != nil {
		return nil, err
	}
	return buf[:wholeBatchesBelow(buf, maxOffset)], nil
}

// wholeBatchesBelow returns the length of the prefix of buf made of
// complete batches whose last offset is below maxOffset.
func wholeBatchesBelow(buf []byte, maxOffset int64) int {
	n := 0
	for n+record.HeaderSize <= len(buf) {
		h, err := record.ParseHeader(buf[n:])
		if err != nil || n+h.Size() > len(buf) || h.LastOffset() >= maxOffset {
			break
		}
		n += h.Size()
	}
	return n
}

// findByTimestamp returns the first batch at or after startingOffset whose
// max timestamp is >= ts (Kafka's LogSegment.findOffsetByTimestamp, at batch
// granularity).
func (s *segment) findByTimestamp(ts, startingOffset int64) (h record.Header, found bool, err error) {
	te, err := s.timeIndex.lookup(ts)
	if err != nil {
		return h, false, err
	}
	e, err := s.index.lookup(max(te.offset, startingOffset))
	if err != nil {
		return h, false, err
	}
	end := s.size.Load()
	var buf [record.HeaderSize]byte
	for pos := e.position; pos < end; pos += int64(h.Size()) {
		if h, err = s.readHeader(pos, end, buf[:]); err != nil {
			return h, false, err
		}
		if h.MaxTimestamp >= ts && h.LastOffset() >= startingOffset {
			return h, true, nil
		}
	}
	return h, false, nil
}

// shouldRoll is Kafka's LogSegment.shouldRoll for an append of size bytes
// whose batches end at lastOffset and reach maxTimestamp. An empty segment
// never rolls: there is nothing to close.
func (s *segment) shouldRoll(cfg LogConfig, size int, lastOffset, maxTimestamp int64) bool {
	cur := s.size.Load()
	if cur == 0 {
		return false
	}
	return cur > cfg.SegmentBytes-int64(size) ||
		s.timeWaitedForRoll(cfg.Now(), maxTimestamp) > cfg.SegmentMs ||
		s.index.full() || s.timeIndex.full() ||
		lastOffset-s.baseOffset > math.MaxInt32
}

// timeWaitedForRoll measures the segment's age by record timestamps when it
// has them (so replaying old data does not roll on every append), else by
// the clock since the segment was created or loaded.
func (s *segment) timeWaitedForRoll(now time.Time, maxTimestamp int64) time.Duration {
	if s.firstBatchTimestamp >= 0 {
		return time.Duration(maxTimestamp-s.firstBatchTimestamp) * time.Millisecond
	}
	return now.Sub(s.created)
}

// append writes batches (already carrying their offsets) at the end of the
// segment and indexes them. Writer only.
func (s *segment) append(batches []byte, metas []batchMeta, indexInterval int) error {
	pos := s.size.Load()
	if _, err := s.log.WriteAt(batches, pos); err != nil {
		// Do not leave a partial batch for readers or recovery to trip on.
		return errors.Join(fmt.Errorf("append to segment %d: %w", s.baseOffset, err), s.log.Truncate(pos))
	}
	if pos == 0 && len(metas) > 0 {
		s.firstBatchTimestamp = metas[0].maxTimestamp
	}
	for _, m := range metas {
		if err := s.indexBatch(pos+int64(m.pos), m, indexInterval); err != nil {
			return err
		}
	}
	last := metas[len(metas)-1]
	s.size.Store(pos + int64(len(batches)))
	s.nextOffset.Store(last.lastOffset + 1)
	return nil
}

// indexBatch folds one batch at position pos into the indexes, in Kafka's
// order: the batch's timestamp counts before the interval check, and the
// entry points at the batch that crosses the interval.
func (s *segment) indexBatch(pos int64, m batchMeta, indexInterval int) error {
	if m.maxTimestamp > s.maxTimestamp.Load() {
		s.maxTimestamp.Store(m.maxTimestamp)
		s.offsetOfMaxTimestamp = m.lastOffset
	}
	if s.bytesSinceIndexEntry > indexInterval {
		if err := s.index.append(m.lastOffset, pos); err != nil {
			return err
		}
		if err := s.timeIndex.maybeAppend(s.maxTimestamp.Load(), s.offsetOfMaxTimestamp, false); err != nil {
			return err
		}
		s.bytesSinceIndexEntry = 0
	}
	s.bytesSinceIndexEntry += m.size
	return nil
}

// loadTail restores the writer state of a segment whose indexes were
// trusted: it scans the batches after the last offset index entry (a few
// KiB) for the next offset, the largest timestamp and the bytes since the
// last entry. It is Kafka's readNextOffset plus the timestamp bookkeeping.
func (s *segment) loadTail(indexInterval int) error {
	e, err := s.index.lastEntry()
	if err != nil {
		return err
	}
	s.maxTimestamp.Store(s.timeIndex.last.timestamp)
	s.offsetOfMaxTimestamp = s.timeIndex.last.offset
	end := s.size.Load()
	var buf [record.HeaderSize]byte
	var h record.Header
	next := s.baseOffset
	for pos := e.position; pos < end; pos += int64(h.Size()) {
		if h, err = s.readHeader(pos, end, buf[:]); err != nil {
			return err
		}
		if pos == 0 {
			s.firstBatchTimestamp = h.MaxTimestamp
		}
		if h.MaxTimestamp > s.maxTimestamp.Load() {
			s.maxTimestamp.Store(h.MaxTimestamp)
			s.offsetOfMaxTimestamp = h.LastOffset()
		}
		next = h.NextOffset()
	}
	s.nextOffset.Store(next)
	s.bytesSinceIndexEntry = int(end - e.position)
	if s.firstBatchTimestamp == noTimestamp && end > 0 {
		if h, err = s.readHeader(0, end, buf[:]); err != nil {
			return err
		}
		s.firstBatchTimestamp = h.MaxTimestamp
	}
	return nil
}

// finishActive prepares a segment that stops receiving appends: the final
// time index entry (so the largest timestamp survives a restart) and
// indexes trimmed to their entries. Writer only.
func (s *segment) finishActive() error {
	if err := s.timeIndex.maybeAppend(s.maxTimestamp.Load(), s.offsetOfMaxTimestamp, true); err != nil {
		return err
	}
	if err := s.index.trim(); err != nil {
		return err
	}
	return s.timeIndex.trim()
}

// truncateTo removes every batch whose last offset is >= offset (Kafka's
// LogSegment.truncateTo) and returns the bytes removed. Callers hold both
// Log locks: no reader is inside the segment.
func (s *segment) truncateTo(offset int64, indexInterval int) (int64, error) {
	end := s.size.Load()
	e, err := s.index.lookup(offset)
	if err != nil {
		return 0, err
	}
	pos, _, found, err := s.findBatch(offset, e.position, end)
	if err != nil || !found {
		return 0, err
	}
	if err := s.index.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.timeIndex.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.txnIndex.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.log.Truncate(pos); err != nil {
		return 0, err
	}
	s.size.Store(pos)
	s.firstBatchTimestamp = noTimestamp
	if err := s.loadTail(indexInterval); err != nil {
		return 0, err
	}
	return end - pos, nil
}

func (s *segment) flush() error {
	return errors.Join(s.log.Sync(), s.index.sync(), s.timeIndex.sync(), s.txnIndex.sync())
}

// syncData fsyncs what a restart cannot rebuild: the records and the
// transaction index (Log.syncData).
func (s *segment) syncData() error {
	return errors.Join(s.log.Sync(), s.txnIndex.sync())
}

// dirty reports changes to the segment's files that flush has not made
// durable yet.
func (s *segment) dirty() bool {
	return s.log.isDirty() || s.index.f.isDirty() || s.timeIndex.f.isDirty() || s.txnIndex.dirty()
}

func (s *segment) close() error {
	return errors.Join(s.log.Close(), s.index.close(), s.timeIndex.close(), s.txnIndex.close())
}

// remove closes and deletes the segment's files.
func (s *segment) remove() error {
	err := s.close()
	for _, f := range []string{s.path, s.index.path, s.timeIndex.path, s.txnIndex.path} {
		if e := os.Remove(f); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = errors.Join(err, e)
		}
	}
	return err
}

// renameFiles renames the segment's files (three, four with a .txnindex) to Kafka's names for its
// base offset followed by suffix ("" for the live names, ".deleted",
// ".swap"), keeping them open: readers and the writer keep their file
// descriptors. The index files go first and the .log file last, so the
// .log name is the commit point that recovery looks at.
func (s *segment) renameFiles(suffix string) error {
	dir := filepath.Dir(s.path)
	if err := s.txnIndex.rename(segmentFileName(dir, s.baseOffset, txnIndexSuffix) + suffix); err != nil {
		return fmt.Errorf("rename segment file: %w", err)
	}
	for _, f := range []struct {
		path *string
		ext  string
		file *cachedFile
	}{{&s.index.path, indexSuffix, s.index.f}, {&s.timeIndex.path, timeIndexSuffix, s.timeIndex.f}, {&s.path, logSuffix, s.log}} {
		to := segmentFileName(dir, s.baseOffset, f.ext) + suffix
		if *f.path == to {
			continue
		}
		if err := f.file.rename(to); err != nil {
			return fmt.Errorf("rename segment file: %w", err)
		}
		*f.path = to
	}
	return nil
}

// largestTimestamp is what retention.ms compares with (Kafka's
// LogSegment.largestTimestamp): the largest record timestamp, or the file's
// modification time when no batch has a timestamp.
func (s *segment) largestTimestamp() int64 {
	if ts := s.maxTimestamp.Load(); ts >= 0 {
		return ts
	}
	st, err := os.Stat(s.path)
	if err != nil {
		return noTimestamp
	}
	return st.ModTime().UnixMilli()
}
