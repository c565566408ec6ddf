package storage

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// Retention (Kafka's UnifiedLog.deleteOldSegments): only whole segments are
// ever deleted, oldest first, and a segment is deletable only when every
// segment before it is. Three rules, applied in Kafka's order:
//
//   - log start offset: a segment whose successor starts at or below the log
//     start offset holds nothing readable (DeleteRecords moved past it);
//   - retention.bytes: the oldest segments go while the log minus the
//     segment is still at least retention.bytes;
//   - retention.ms: segments whose largest timestamp is older than
//     retention.ms.
//
// The last two apply only when cleanup.policy includes delete. A segment is
// deleted only when it lies wholly below the high watermark (SetHighWatermark;
// the log end offset when nobody set one), so consumers never lose records
// they could not yet read. If every segment including a non-empty active one
// is due, the log first rolls so the active segment can go: an empty active
// segment always stays, so the log keeps its end offset.
//
// Deleted segments leave the segment list at once, under structMu, so no
// reader sees them afterwards; their files are renamed to *.deleted and
// closed and removed file.delete.delay.ms later by a goroutine the log owns
// and joins on Close (Kafka's asyncDeleteSegment). A crash in between leaves
// *.deleted files, which Open removes.

// pendingDelete is a segment waiting out file.delete.delay.ms.
type pendingDelete struct{ segs []*segment }

// SetHighWatermark tells the log its partition's high watermark, which
// bounds retention: a segment is deleted only when it ends at or below it.
// Until it is called the log end offset is used, which is right for a
// partition with one replica.
func (l *Log) SetHighWatermark(hw int64) { l.hw.Store(hw) }

func (l *Log) highWatermark() int64 {
	if hw := l.hw.Load(); hw >= 0 {
		return min(hw, l.leo.Load())
	}
	return l.leo.Load()
}

// DeleteRecordsBefore moves the log start offset to offset (Kafka's
// DeleteRecords at the log level) and returns the new log start offset.
// Reads below it fail with ErrOffsetOutOfRange at once; the segments
// wholly below it are deleted by the next DeleteOldSegments. An offset at
// or below the current log start offset changes nothing. The caller checks
// offset against the high watermark.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	if err := l.IncrementLogStartOffset(offset); err != nil {
		return l.LogStartOffset(), err
	}
	return l.LogStartOffset(), nil
}

// DeleteOldSegments applies retention once (see the comment at the top of
// retention.go) and returns how many segments it deleted. The LogManager
// calls it every log.retention.check.interval.ms.
func (l *Log) DeleteOldSegments() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	cfg := l.mu.cfg
	total := 0
	n, err := l.deleteSegmentsWhileLocked("log start offset", func(s, next *segment) bool {
		return next != nil && next.baseOffset <= l.logStart.Load()
	})
	total += n
	if err != nil || !cfg.CleanupPolicy.Delete() {
		return total, err
	}
	if cfg.RetentionBytes >= 0 {
		var size int64
		for _, s := range l.segments() {
			size += s.size.Load()
		}
		diff := size - cfg.RetentionBytes
		n, err = l.deleteSegmentsWhileLocked("retention.bytes", func(s, _ *segment) bool {
			if diff-s.size.Load() < 0 {
				return false
			}
			diff -= s.size.Load()
			return true
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	if cfg.RetentionMs >= 0 {
		now := cfg.Now().UnixMilli()
		n, err = l.deleteSegmentsWhileLocked("retention.ms", func(s, _ *segment) bool {
			return now-s.largestTimestamp() > cfg.RetentionMs
		})
		total += n
	}
	return total, err
}

// deleteSegmentsWhileLocked deletes the longest prefix of segments for which
// due holds (Kafka's deletableSegments + deleteSegments).
func (l *Log) deleteSegmentsWhileLocked(reason string, due func(s, next *segment) bool) (int, error) {
	segs := l.segments()
	hw := l.highWatermark()
	n := 0
	for i, s := range segs {
		var next *segment
		upper := l.leo.Load()
		if i+1 < len(segs) {
			next = segs[i+1]
			upper = next.baseOffset
		} else if s.size.Load() == 0 {
			break // the empty active segment keeps the log end offset
		}
		if upper > hw || !due(s, next) {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(segs) {
		if _, err := l.rollLocked(l.leo.Load()); err != nil {
			return 0, err
		}
	}
	if err := l.replaceSegmentsLocked(0, n, nil); err != nil {
		return 0, err
	}
	l.logger.Info("deleted segments", "reason", reason, "count", n, "log_start_offset", l.logStart.Load())
	return n, l.epochs.truncateFromStart(l.logStart.Load())
}

// replaceSegmentsLocked replaces segments i..i+n-1 with replacement (nil
// for none; else a committed *.swap segment from the cleaner), moves the
// log start offset up to the first segment, and schedules the old files'
// removal. It holds structMu so that no reader is inside the list while
// it changes, and renames the old files before the new ones because the
// replacement may take the first old segment's name.
func (l *Log) replaceSegmentsLocked(i, n int, replacement *segment) error {
	l.structMu.Lock()
	defer l.structMu.Unlock()
	segs := l.segments()
	doomed := segs[i : i+n]
	kept := slices.Clone(segs[:i])
	if replacement != nil {
		kept = append(kept, replacement)
	}
	kept = append(kept, segs[i+n:]...)
	if err := l.renameDeletedLocked(doomed); err != nil {
		return err
	}
	if replacement != nil {
		l.cleanHook("deleted")
		if err := errors.Join(replacement.renameFiles(""), syncDir(l.dir)); err != nil {
			// The swap is committed on disk; Open completes it.
			return fmt.Errorf("install cleaned segment %d of %s: %w", replacement.baseOffset, l.dir, err)
		}
	}
	if kept[0].baseOffset > l.logStart.Load() {
		l.logStart.Store(kept[0].baseOffset)
	}
	l.segs.Store(&kept)
	l.scheduleDeleteLocked(doomed)
	if i == 0 && replacement == nil {
		// Producer snapshots go with the segments below them, as in
		// Kafka; a stale one would make a restart replay from an offset
		// the log no longer has. snapMu is not needed: the only
		// concurrent change is a writer pruning old files too.
		first := kept[0].baseOffset
		if err := l.deleteProducerSnapshotsLocked(func(off int64) bool { return off < first }); err != nil {
			l.logger.Warn("deleting producer snapshots", "below", first, "err", err)
		}
	}
	return nil
}

// renameDeletedLocked renames segments leaving the list to *.deleted, so
// that a crash before their removal cannot bring them back.
func (l *Log) renameDeletedLocked(doomed []*segment) error {
	var err error
	for _, s := range doomed {
		err = errors.Join(err, s.renameFiles(deletedSuffix))
	}
	if err = errors.Join(err, syncDir(l.dir)); err != nil {
		return fmt.Errorf("delete segments of %s: %w", l.dir, err)
	}
	return nil
}

// scheduleDeleteLocked closes and removes segments that left the list
// file.delete.delay.ms from now (Kafka's asyncDeleteSegment). Callers
// hold mu and have checked that the log is open, so shutdown, which sets
// closed under mu, joins the goroutine; it removes the files at once.
func (l *Log) scheduleDeleteLocked(doomed []*segment) {
	delay := time.Duration(l.mu.cfg.FileDeleteDelayMs) * time.Millisecond
	p := pendingDelete{segs: doomed}
	l.deletes.Add(1)
	go func() {
		defer l.deletes.Done()
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.stopDeletes:
		}
		for _, s := range p.segs {
			if err := s.remove(); err != nil && !errors.Is(err, os.ErrNotExist) {
				l.logger.Warn("removing deleted segment", "segment", s.baseOffset, "err", err)
			}
		}
	}()
}
