package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/samsa-io/samsa/internal/record"
)

// Log compaction (Kafka's Cleaner). One pass over a log:
//
//  1. The dirty section runs from the cleaner checkpoint (first dirty
//     offset) to the first uncleanable offset: the active segment's base,
//     the high watermark, or the first segment holding a record younger
//     than min.compaction.lag.ms, whichever comes first.
//  2. The offset map gets key → latest offset for every keyed record of
//     the dirty section, batch by batch, until the section ends or the map
//     is full; endOffset is where it stopped. A too small
//     log.cleaner.dedupe.buffer.size so cleans only part of the section;
//     the next pass goes on from endOffset.
//  3. Every segment that starts below endOffset (clean part included, never
//     the active segment) is rewritten, in groups of consecutive segments
//     that together fit in segment.bytes, into one new segment per group
//     keeping each record whose offset is the latest for its key. Offsets
//     never change; the gaps are what consumers of compacted topics expect.
//     Records at or after endOffset are kept as they are.
//  4. Each group's new segment is written as <base>.log.cleaned (and its
//     two indexes), fsynced, renamed to *.swap (the .log file last: its
//     rename commits the swap), and then, holding the log's locks, the old
//     segments are renamed to *.deleted and the new one to its live names.
//     Open finishes a committed swap and drops uncommitted files (see
//     completeSwaps), so a crash at any point loses nothing.
//
// Record rules, as Kafka's: a record without a key is dropped (Kafka's
// producers cannot write one to a compacted topic; the broker must reject
// them at produce time). A tombstone (null value) that is the latest for
// its key is kept until the delete horizon of its batch passes: the first
// pass that rewrites a batch holding a tombstone stamps it with
// now + delete.retention.ms (KIP-534: attribute bit 6, horizon in the base
// timestamp), and a later pass after that time drops the tombstone.
// Batches with the transactional or control bit are copied untouched:
// removing aborted data and obsolete markers needs the transaction index
// (issue 4). Batches keep their base offset, producer id, epoch, base
// sequence, leader epoch, timestamp type and compression codec; a batch
// left without records is dropped.

// errCleaningAborted means the log changed under a pass (a truncation,
// retention, another swap, Close): the pass's output is thrown away.
var errCleaningAborted = errors.New("log cleaning aborted: the log changed")

// CleanStats describes one cleaning pass.
type CleanStats struct {
	FirstDirtyOffset int64
	EndOffset        int64 // the new cleaner checkpoint
	SegmentsCleaned  int   // source segments rewritten
	BytesRead        int64 // of the rewritten segments
	BytesWritten     int64
	RecordsRead      int64
	RecordsKept      int64
	MapEntries       int
	Elapsed          time.Duration
}

// MBPerSec is the cleaner throughput: bytes read per second, in MB.
func (s CleanStats) MBPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.BytesRead) / 1e6 / s.Elapsed.Seconds()
}

// cleaner is the state of one cleaner thread: its offset map and buffers.
type cleaner struct {
	offsets *offsetMap
	logger  *slog.Logger
	log     *Log   // being cleaned: a pass stops when it closes
	buf     []byte // batch read buffer
	out     []byte // cleaned batches waiting to be appended
}

func newCleaner(dedupeBytes int64, logger *slog.Logger) *cleaner {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &cleaner{offsets: newOffsetMap(dedupeBytes), logger: logger}
}

// cleanableRange returns the first dirty and first uncleanable offsets of a
// log for a checkpoint (Kafka's LogCleanerManager.cleanableOffsets).
func cleanableRange(l *Log, segs []*segment, checkpoint int64, cfg LogConfig, now time.Time) (firstDirty, uncleanable int64) {
	start := l.LogStartOffset()
	firstDirty = checkpoint
	if firstDirty < start || firstDirty > l.LogEndOffset() {
		// Missing, or invalidated by DeleteRecords, retention or a
		// truncation: everything from the start counts as dirty.
		firstDirty = start
	}
	active := segs[len(segs)-1]
	uncleanable = min(active.baseOffset, l.highWatermark())
	if cfg.MinCompactionLagMs > 0 {
		cutoff := now.UnixMilli() - cfg.MinCompactionLagMs
		for i, s := range segs[:len(segs)-1] {
			if segs[i+1].baseOffset <= firstDirty {
				continue
			}
			if s.largestTimestamp() > cutoff {
				uncleanable = min(uncleanable, s.baseOffset)
				break
			}
		}
	}
	return firstDirty, max(uncleanable, firstDirty)
}

// clean runs one pass over l from checkpoint (see the top of this file).
func (c *cleaner) clean(l *Log, checkpoint int64) (CleanStats, error) {
	started := time.Now()
	c.log = l
	defer func() { c.log = nil }()
	cfg := l.Config()
	now := cfg.Now()
	segs := l.segments()
	firstDirty, uncleanable := cleanableRange(l, segs, checkpoint, cfg, now)
	stats := CleanStats{FirstDirtyOffset: firstDirty, EndOffset: firstDirty}
	if firstDirty >= uncleanable {
		return stats, nil
	}
	c.offsets.reset(int(uncleanable - firstDirty)) // at most one key per offset
	end, err := c.buildOffsetMap(segs[:len(segs)-1], firstDirty, uncleanable)
	if err != nil {
		return stats, err
	}
	if end <= firstDirty {
		return stats, fmt.Errorf("clean %s: log.cleaner.dedupe.buffer.size holds %d keys, too few for the batch at offset %d",
			l.dir, c.offsets.maxEntries(), firstDirty)
	}
	stats.EndOffset, stats.MapEntries = end, c.offsets.entries
	var sources []*segment
	for _, s := range segs[:len(segs)-1] {
		if s.baseOffset < end {
			sources = append(sources, s)
		}
	}
	for _, group := range groupSegmentsBySize(sources, cfg.SegmentBytes) {
		if err := c.cleanSegments(l, group, end, now.UnixMilli(), cfg, &stats); err != nil {
			return stats, err
		}
	}
	stats.Elapsed = time.Since(started)
	return stats, nil
}

// eachBatch calls fn with every batch of s, in order. The slice is only
// valid during the call.
func (c *cleaner) eachBatch(s *segment, fn func(h record.Header, b []byte) (bool, error)) error {
	size := s.size.Load()
	r := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, size), 256<<10)
	for pos := int64(0); pos < size; {
		if c.log != nil && c.log.closed.Load() {
			return errCleaningAborted
		}
		var err error
		c.buf, err = readBatch(r, c.buf, size-pos)
		if err != nil {
			return fmt.Errorf("segment %d position %d: %w", s.baseOffset, pos, err)
		}
		h, err := record.ParseHeader(c.buf)
		if err != nil {
			return err
		}
		more, err := fn(h, c.buf)
		if err != nil || !more {
			return err
		}
		pos += int64(len(c.buf))
	}
	return nil
}

// buildOffsetMap fills the map from the dirty section [firstDirty,
// uncleanable) and returns the offset it reached: uncleanable, or the end
// of the last batch that fit when the map filled up.
func (c *cleaner) buildOffsetMap(segs []*segment, firstDirty, uncleanable int64) (int64, error) {
	end := firstDirty
	full := false
	for i, s := range segs {
		if full || s.baseOffset >= uncleanable {
			break
		}
		if i+1 < len(segs) && segs[i+1].baseOffset <= firstDirty {
			continue
		}
		err := c.eachBatch(s, func(h record.Header, b []byte) (bool, error) {
			if h.LastOffset() < firstDirty {
				return true, nil
			}
			if h.LastOffset() >= uncleanable {
				return false, nil
			}
			if !h.Transactional() && !h.Control() {
				if c.offsets.entries+int(h.NumRecords) > c.offsets.maxEntries() {
					full = true
					return false, nil
				}
				recs, err := record.Records(b)
				if err != nil {
					return false, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
				}
				for _, r := range recs {
					if r.Key != nil {
						c.offsets.put(hashKey(r.Key), r.Offset)
					}
				}
			}
			end = h.NextOffset()
			return true, nil
		})
		if err != nil {
			return end, err
		}
	}
	if !full {
		end = max(end, uncleanable)
	}
	return end, nil
}

// groupSegmentsBySize splits segs into runs of consecutive segments whose
// sizes sum to at most maxSize and whose offsets fit one segment's int32
// relative offsets (Kafka's groupSegmentsBySize), so that cleaning merges
// segments that compaction has made small.
func groupSegmentsBySize(segs []*segment, maxSize int64) [][]*segment {
	var groups [][]*segment
	for len(segs) > 0 {
		g := segs[:1]
		size := segs[0].size.Load()
		for len(g) < len(segs) {
			next := segs[len(g)]
			if size+next.size.Load() > maxSize || next.nextOffset.Load()-1-g[0].baseOffset > math.MaxInt32 {
				break
			}
			size += next.size.Load()
			g = segs[:len(g)+1]
		}
		groups = append(groups, g)
		segs = segs[len(g):]
	}
	return groups
}

// cleanSegments rewrites one group into a new segment and swaps it in.
func (c *cleaner) cleanSegments(l *Log, group []*segment, end, nowMs int64, cfg LogConfig, stats *CleanStats) error {
	base := group[0].baseOffset
	var srcBytes int64
	for _, s := range group {
		srcBytes += s.size.Load()
	}
	for _, ext := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		for _, suffix := range []string{cleanedSuffix, swapSuffix} {
			if err := os.Remove(segmentFileName(l.dir, base, ext) + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	// Room for an entry per index interval of the sources, which the
	// output cannot exceed; trimmed when finished.
	indexBytes := max(cfg.SegmentIndexBytes, int(srcBytes/int64(cfg.IndexIntervalBytes)+2)*timeIndexEntrySize)
	dst, err := createSegmentFiles(l.dir, base, cfg, cleanedSuffix, indexBytes)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			dst.remove()
		}
	}()
	c.out = c.out[:0]
	for _, s := range group {
		err := c.eachBatch(s, func(h record.Header, b []byte) (bool, error) {
			kept, err := c.filterBatch(h, b, end, nowMs, cfg, stats)
			if err != nil {
				return false, err
			}
			c.out = kept
			if len(c.out) >= 1<<20 {
				return true, c.flushOut(dst, cfg)
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("clean %s: %w", l.dir, err)
		}
	}
	if err := c.flushOut(dst, cfg); err != nil {
		return err
	}
	// The cleaned segment answers for the aborted transactions of the
	// segments it replaces, as Kafka's cleaner carries them over.
	for _, s := range group {
		for _, e := range s.txnIndex.all() {
			if err := dst.txnIndex.add(e); err != nil {
				return err
			}
		}
	}
	// The new segment covers the whole range of the old ones, so the
	// next segment still starts where it says.
	dst.nextOffset.Store(group[len(group)-1].nextOffset.Load())
	if err := errors.Join(dst.finishActive(), dst.flush()); err != nil {
		return err
	}
	l.cleanHook("cleaned")
	if err := dst.renameFiles(swapSuffix); err != nil {
		return err
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	l.cleanHook("swap")
	if err := l.replaceCleaned(group, dst); err != nil {
		if !errors.Is(err, errCleaningAborted) {
			// The swap is committed on disk and Open will complete
			// it: keep the files. The manager stops cleaning this log.
			ok = true
			dst.close()
		}
		return err
	}
	ok = true
	stats.SegmentsCleaned += len(group)
	stats.BytesRead += srcBytes
	stats.BytesWritten += dst.size.Load()
	return nil
}

// flushOut appends the cleaned batches gathered in c.out to dst.
func (c *cleaner) flushOut(dst *segment, cfg LogConfig) error {
	if len(c.out) == 0 {
		return nil
	}
	var metas []batchMeta
	for pos := 0; pos < len(c.out); {
		h, err := record.ParseHeader(c.out[pos:])
		if err != nil {
			return err
		}
		metas = append(metas, batchMeta{pos: pos, baseOffset: h.BaseOffset, size: h.Size(), lastOffset: h.LastOffset(), maxTimestamp: h.MaxTimestamp})
		pos += h.Size()
	}
	if dst.size.Load() == 0 {
		dst.firstBatchTimestamp = metas[0].maxTimestamp
	}
	if err := dst.append(c.out, metas, cfg.IndexIntervalBytes); err != nil {
		return err
	}
	c.out = c.out[:0]
	return nil
}

// filterBatch appends to c.out what survives of one batch: the batch
// itself when nothing changes, a rebuilt batch, or nothing.
func (c *cleaner) filterBatch(h record.Header, b []byte, end, nowMs int64, cfg LogConfig, stats *CleanStats) ([]byte, error) {
	if h.Transactional() || h.Control() {
		stats.RecordsRead += int64(h.NumRecords)
		stats.RecordsKept += int64(h.NumRecords)
		return append(c.out, b...), nil
	}
	recs, err := record.Records(b)
	if err != nil {
		return nil, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	horizon, hasHorizon := h.DeleteHorizon()
	kept := make([]record.Record, 0, len(recs))
	tombstones := false
	for _, r := range recs {
		if r.Offset >= end {
			kept = append(kept, r) // beyond the offset map: not judged yet
			continue
		}
		if r.Key == nil {
			continue
		}
		if latest, ok := c.offsets.get(hashKey(r.Key)); ok && latest > r.Offset {
			continue
		}
		if r.Value == nil {
			if hasHorizon && nowMs >= horizon {
				continue
			}
			tombstones = true
		}
		kept = append(kept, r)
	}
	stats.RecordsRead += int64(len(recs))
	stats.RecordsKept += int64(len(kept))
	switch {
	case len(kept) == 0:
		return c.out, nil
	case len(kept) == len(recs) && (!tombstones || hasHorizon):
		return append(c.out, b...), nil
	}
	opts := record.BuildOptions{
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Codec:                h.Codec(),
		Producer:             &record.ProducerInfo{ID: h.ProducerID, Epoch: h.ProducerEpoch, BaseSequence: h.BaseSequence},
		LogAppendTime:        h.LogAppendTime(),
		AppendTime:           h.MaxTimestamp,
		KeepOffsets:          true,
	}
	if tombstones {
		opts.HasDeleteHorizon = true
		opts.DeleteHorizonMs = nowMs + cfg.DeleteRetentionMs
		if hasHorizon {
			opts.DeleteHorizonMs = horizon
		}
	}
	return record.AppendBuild(c.out, opts, kept)
}

// replaceCleaned swaps the committed (*.swap) segment dst in for group,
// unless the log changed since the pass began: then the pass is dropped.
func (l *Log) replaceCleaned(group []*segment, dst *segment) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return errCleaningAborted
	}
	segs := l.segments()
	i := -1
	for j, s := range segs {
		if s == group[0] {
			i = j
			break
		}
	}
	if i < 0 || i+len(group) >= len(segs) {
		return errCleaningAborted
	}
	for k, s := range group {
		if segs[i+k] != s {
			return errCleaningAborted
		}
	}
	return l.replaceSegmentsLocked(i, len(group), dst)
}

// cleanHook lets tests copy the directory at each step of a swap, as a
// crash there would leave it.
func (l *Log) cleanHook(step string) {
	if l.testHook != nil {
		l.testHook(step)
	}
}
