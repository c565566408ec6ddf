package storage

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/samsa-io/samsa/internal/record"
)

// recover rebuilds the segment's indexes by scanning every batch, and cuts
// the log at the first batch that is torn (runs past the end of the file),
// malformed (bad length or magic), fails its CRC-32C, or goes backwards in
// offsets. It returns how many bytes were cut. This is Kafka's
// LogSegment.recover: what follows a bad batch cannot be trusted, because
// appends are sequential and a crash only tears the tail.
func (s *segment) recover(indexInterval, maxIndexBytes int) (truncated int64, err error) {
	st, err := s.log.Stat()
	if err != nil {
		return 0, err
	}
	fileSize := st.Size()
	s.index.reset()
	s.timeIndex.reset()
	// A trimmed (inactive) segment's indexes have no room for new entries.
	if err := s.resizeIndexes(maxIndexBytes); err != nil {
		return 0, err
	}
	s.maxTimestamp.Store(noTimestamp)
	s.offsetOfMaxTimestamp = s.baseOffset
	s.firstBatchTimestamp = noTimestamp
	s.bytesSinceIndexEntry = 0

	r := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, fileSize), 64<<10)
	var pos int64
	next := s.baseOffset
	var buf []byte
	for {
		var reason error
		buf, reason = readBatch(r, buf, fileSize-pos)
		if reason == io.EOF {
			break
		}
		var h record.Header
		if reason == nil {
			h, reason = checkBatch(buf, next, s.baseOffset)
		}
		if reason != nil {
			if pos < fileSize {
				if err := s.log.Truncate(pos); err != nil {
					return 0, fmt.Errorf("truncate segment %d at %d: %w", s.baseOffset, pos, err)
				}
			}
			truncated = fileSize - pos
			if truncated > 0 {
				// Logged by the caller, which knows the partition.
				err = fmt.Errorf("segment %d: cut %d bytes at position %d: %w", s.baseOffset, truncated, pos, reason)
			}
			break
		}
		if pos == 0 {
			s.firstBatchTimestamp = h.MaxTimestamp
		}
		m := batchMeta{size: h.Size(), lastOffset: h.LastOffset(), maxTimestamp: h.MaxTimestamp}
		if err := s.indexBatch(pos, m, indexInterval); err != nil {
			return 0, err
		}
		pos += int64(h.Size())
		next = h.NextOffset()
	}
	s.size.Store(pos)
	s.nextOffset.Store(next)
	// Entries of abort markers that were cut off go too; entries the
	// file lost come back when the partition replays its markers
	// (AppendAbortedTxn skips those already present).
	if err := s.txnIndex.truncateTo(next); err != nil {
		return 0, err
	}
	if truncated > 0 {
		return truncated, &truncatedError{err}
	}
	return 0, nil
}

// truncatedError is what recover returns after cutting a bad tail: the
// segment is usable, the error is for the log.
type truncatedError struct{ err error }

func (e *truncatedError) Error() string { return e.err.Error() }
func (e *truncatedError) Unwrap() error { return e.err }

// readBatch reads the next batch into buf. io.EOF means a clean end;
// any other error describes a torn or impossible batch.
func readBatch(r *bufio.Reader, buf []byte, remaining int64) ([]byte, error) {
	if remaining == 0 {
		return buf, io.EOF
	}
	if remaining < record.LogOverhead {
		return buf, fmt.Errorf("%w: %d trailing bytes", record.ErrCorrupt, remaining)
	}
	prefix, err := r.Peek(record.LogOverhead)
	if err != nil {
		return buf, fmt.Errorf("%w: %v", record.ErrCorrupt, err)
	}
	length := int64(int32(binary.BigEndian.Uint32(prefix[8:])))
	size := length + record.LogOverhead
	if size < record.HeaderSize {
		return buf, fmt.Errorf("%w: batch length %d", record.ErrCorrupt, length)
	}
	if size > remaining {
		return buf, fmt.Errorf("%w: batch of %d bytes but %d left in the file (torn write)", record.ErrCorrupt, size, remaining)
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf, fmt.Errorf("%w: %v", record.ErrCorrupt, err)
	}
	return buf, nil
}

var errOffsets = errors.New("batch offsets out of order")

// checkBatch validates a complete batch read during recovery.
func checkBatch(b []byte, next, baseOffset int64) (record.Header, error) {
	h, err := record.ParseHeader(b)
	if err != nil {
		return h, err
	}
	if crc := record.ComputeCRC(b); crc != h.CRC {
		return h, fmt.Errorf("%w: CRC %#08x, want %#08x", record.ErrCorrupt, crc, h.CRC)
	}
	if h.BaseOffset < next || h.LastOffsetDelta < 0 || h.LastOffset()-baseOffset > math.MaxInt32 {
		return h, fmt.Errorf("%w: batch %d..%d after offset %d", errOffsets, h.BaseOffset, h.LastOffset(), next)
	}
	return h, nil
}

// listSegments returns the base offsets of the .log files in dir, deleting
// leftovers of interrupted deletes and cleanings and index files without a
// log, and completing committed cleaner swaps, as Kafka's LogLoader does.
func (l *Log) listSegments() ([]int64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	logs := map[int64]bool{}
	var indexes []string
	var swaps []int64
	var txnSwaps []string
	snapshots := []int64{}
	for _, e := range entries {
		name := e.Name()
		if off, ok := producerSnapshotOffset(name); ok {
			snapshots = append(snapshots, off)
			continue
		}
		switch {
		case strings.HasSuffix(name, deletedSuffix) || strings.HasSuffix(name, cleanedSuffix):
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				return nil, err
			}
		case strings.HasSuffix(name, logSuffix+swapSuffix):
			if base, ok := parseBaseOffset(strings.TrimSuffix(name, swapSuffix), logSuffix); ok {
				swaps = append(swaps, base)
			}
		case strings.HasSuffix(name, txnIndexSuffix+swapSuffix):
			// Unlike the other indexes it cannot be rebuilt from the
			// segment alone: keep it if its swap committed.
			txnSwaps = append(txnSwaps, name)
		case strings.HasSuffix(name, swapSuffix):
			// An index renamed before its .log: the swap either did
			// not commit, or did and the index is rebuilt below.
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				return nil, err
			}
		case strings.HasSuffix(name, logSuffix):
			if base, ok := parseBaseOffset(name, logSuffix); ok {
				logs[base] = true
			}
		case strings.HasSuffix(name, indexSuffix) || strings.HasSuffix(name, timeIndexSuffix) || strings.HasSuffix(name, txnIndexSuffix):
			indexes = append(indexes, name)
		}
	}
	slices.Sort(swaps)
	for _, base := range swaps {
		if err := l.completeSwap(base, logs); err != nil {
			return nil, err
		}
	}
	for _, name := range txnSwaps {
		path := filepath.Join(l.dir, name)
		base, ok := parseBaseOffset(strings.TrimSuffix(name, swapSuffix), txnIndexSuffix)
		var err error
		if ok && slices.Contains(swaps, base) {
			err = os.Rename(path, segmentFileName(l.dir, base, txnIndexSuffix))
		} else {
			err = os.Remove(path)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, name := range indexes {
		base, ok := parseBaseOffset(name, filepath.Ext(name))
		if ok && !logs[base] {
			l.logger.Warn("deleting index file without a segment", "file", name)
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
	}
	slices.Sort(snapshots)
	l.snapListed = &snapshots
	bases := make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	return bases, nil
}

// completeSwap finishes a cleaner swap that committed (its .log.swap file
// exists) but did not finish: the segments the cleaned one replaces, those
// starting inside its offset range, are deleted, and it takes its live
// name. Its indexes are deleted so that Open rebuilds them (Kafka's
// LogLoader does the same with swap files).
func (l *Log) completeSwap(base int64, logs map[int64]bool) error {
	swap := segmentFileName(l.dir, base, logSuffix) + swapSuffix
	next, err := scanNextOffset(swap, base)
	if err != nil {
		return err
	}
	for b := range logs {
		if b < base || b >= next && b != base {
			continue
		}
		for _, ext := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if err := os.Remove(segmentFileName(l.dir, b, ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		delete(logs, b)
	}
	for _, ext := range []string{indexSuffix, timeIndexSuffix} {
		if err := os.Remove(segmentFileName(l.dir, base, ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(swap, segmentFileName(l.dir, base, logSuffix)); err != nil {
		return err
	}
	logs[base] = true
	l.logger.Warn("completed a log cleaner swap interrupted by a crash", "segment", base, "next_offset", next)
	return syncDir(l.dir)
}

// scanNextOffset returns the offset after the last whole batch of a
// segment file (base when it has none).
func scanNextOffset(path string, base int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	next := base
	var buf []byte
	for pos := int64(0); pos < st.Size(); pos += int64(len(buf)) {
		if buf, err = readBatch(r, buf, st.Size()-pos); err != nil {
			break // fsynced before the commit: cannot happen but is harmless
		}
		h, err := record.ParseHeader(buf)
		if err != nil {
			break
		}
		next = h.NextOffset()
	}
	return next, nil
}

func parseBaseOffset(name, suffix string) (int64, bool) {
	s := strings.TrimSuffix(name, suffix)
	if len(s) != 20 {
		return 0, false
	}
	b, err := strconv.ParseInt(s, 10, 64)
	return b, err == nil && b >= 0
}

// load opens the segments, recovers those that may hold unflushed or torn
// data, and sets the offsets.
func (l *Log) load(opts OpenOptions) error {
	cfg := l.mu.cfg
	segs, recovered, err := l.openSegments(opts)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		for _, s := range segs {
			s.close()
		}
		return err
	}
	if len(segs) == 0 {
		s, err := createSegment(l.dir, opts.LogStartOffset, cfg)
		if err != nil {
			return err
		}
		segs = append(segs, s)
	}
	active := segs[len(segs)-1]
	if !recovered[active] {
		if err := active.loadTail(cfg.IndexIntervalBytes); err != nil {
			l.logger.Warn("recovering active segment despite clean shutdown", "segment", active.baseOffset, "err", err)
			if _, err := active.recover(cfg.IndexIntervalBytes, cfg.SegmentIndexBytes); err != nil && !errors.As(err, new(*truncatedError)) {
				return fail(err)
			}
			recovered[active] = true
		}
	}
	for _, s := range segs[:len(segs)-1] {
		if recovered[s] {
			if err := s.finishActive(); err != nil {
				return fail(err)
			}
		}
	}
	// An active segment that was not recovered keeps its trimmed indexes
	// until its first append (Log.append sizes them).
	active.unsized = !recovered[active]
	// Recovered bytes came from the page cache; make them durable so the
	// recovery point can move to the end.
	for _, s := range segs {
		if recovered[s] {
			if err := s.flush(); err != nil {
				return fail(err)
			}
		}
	}
	l.segs.Store(&segs)
	leo := active.nextOffset.Load()
	l.leo.Store(leo)
	l.logStart.Store(min(max(opts.LogStartOffset, segs[0].baseOffset), leo))
	l.mu.recoveryPoint = leo
	l.mu.syncedTo = leo
	return nil
}

// openSegments opens every segment in order and recovers those from the
// one holding the recovery point on (all of them without a clean shutdown
// only from there; with one, only those whose indexes are broken). After a
// segment whose tail had to be cut, later segments are deleted: appends are
// sequential, so nothing after a torn write can be trusted.
func (l *Log) openSegments(opts OpenOptions) (segs []*segment, recovered map[*segment]bool, err error) {
	cfg := l.mu.cfg
	recovered = map[*segment]bool{}
	bases, err := l.listSegments()
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			for _, s := range segs {
				s.close()
			}
		}
	}()
	for i, base := range bases {
		s, indexErr, err := openSegment(l.dir, base, cfg)
		if err != nil {
			return segs, nil, err
		}
		segs = append(segs, s)
		last := i == len(bases)-1
		if !last {
			s.nextOffset.Store(bases[i+1])
		}
		needRecover := !opts.CleanShutdown && (last || bases[i+1] > opts.RecoveryPoint)
		if indexErr != nil {
			// After a crash the active segment's indexes are still
			// preallocated (zeros past the last entry, which read as
			// entries out of order): not corruption, and rebuilt by the
			// recovery the segment gets anyway.
			level := slog.LevelWarn
			if needRecover {
				level = slog.LevelDebug
			}
			l.logger.Log(context.Background(), level, "rebuilding index", "segment", base, "err", indexErr)
			needRecover = true
		}
		if !needRecover {
			continue
		}
		_, err = s.recover(cfg.IndexIntervalBytes, cfg.SegmentIndexBytes)
		recovered[s] = true
		if !errors.As(err, new(*truncatedError)) {
			if err != nil {
				return segs, nil, err
			}
			continue
		}
		l.logger.Warn("truncated corrupt log tail", "err", err)
		for _, b := range bases[i+1:] {
			l.logger.Warn("deleting segment after corrupt tail", "segment", b)
			for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				if err := os.Remove(segmentFileName(l.dir, b, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return segs, nil, err
				}
			}
		}
		break
	}
	return segs, recovered, nil
}
