package storage

import (
	"errors"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/samsa-io/samsa/internal/record"
)

// CleanerOffsetCheckpointFile is, in each log directory, the first dirty
// offset of every compacted log (Kafka's cleaner-offset-checkpoint, in the
// same format as the other checkpoints).
const CleanerOffsetCheckpointFile = "cleaner-offset-checkpoint"

// loadCleanerCheckpoints reads cleaner-offset-checkpoint in every log
// directory, keeping the entries of logs that directory holds.
func (m *LogManager) loadCleanerCheckpoints() error {
	for _, dir := range m.cfg.Dirs {
		cp, err := ReadCheckpoint(filepath.Join(dir, CleanerOffsetCheckpointFile))
		if err != nil {
			return err
		}
		m.mu.Lock()
		for tp, off := range cp {
			if m.mu.dirOf[tp] == dir {
				m.mu.cleanerCheckpoints[tp] = off
			}
		}
		m.mu.Unlock()
	}
	return nil
}

// startBackground starts the retention task and the cleaner threads.
func (m *LogManager) startBackground() {
	m.stopBackground = make(chan struct{})
	if m.cfg.RetentionCheckInterval > 0 {
		m.background.Add(1)
		go m.retentionLoop()
	}
	for i := 0; i < m.cfg.CleanerThreads; i++ {
		m.background.Add(1)
		go m.cleanerLoop(i)
	}
}

func (m *LogManager) stopBackgroundTasks() {
	if m.stopBackground != nil {
		close(m.stopBackground)
		m.background.Wait()
	}
}

// retentionLoop applies retention every log.retention.check.interval.ms
// (Kafka's kafka-log-retention task).
func (m *LogManager) retentionLoop() {
	defer m.background.Done()
	t := time.NewTicker(m.cfg.RetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stopBackground:
			return
		case <-t.C:
			m.ApplyRetention()
		}
	}
}

// ApplyRetention runs Log.DeleteOldSegments on every log and, if any
// segment went, writes the log start offset checkpoints. It returns the
// number of segments deleted. The retention task calls it; tests and tools
// may too.
func (m *LogManager) ApplyRetention() int {
	total := 0
	for _, l := range m.Logs() {
		n, err := l.DeleteOldSegments()
		if err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Error("applying retention", "dir", l.Dir(), "err", err)
		}
		total += n
	}
	if total > 0 {
		if err := m.CheckpointAll(); err != nil {
			m.logger.Error("writing checkpoints after retention", "err", err)
		}
	}
	return total
}

// cleanerLoop is one cleaner thread (Kafka's CleanerThread): clean the
// filthiest log, or sleep log.cleaner.backoff.ms when none needs it.
func (m *LogManager) cleanerLoop(id int) {
	defer m.background.Done()
	c := newCleaner(m.cfg.CleanerDedupeBufferSize/int64(m.cfg.CleanerThreads), m.logger.With("cleaner", id))
	for {
		cleaned, _ := m.cleanOnce(c)
		if cleaned {
			select {
			case <-m.stopBackground:
				return
			default:
				continue
			}
		}
		t := time.NewTimer(m.cfg.CleanerBackoff)
		select {
		case <-m.stopBackground:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// CleanNow runs one cleaning pass on the filthiest compacted log, if one
// needs it, with a cleaner of its own, and reports what it did. Tests and
// tools use it; the cleaner threads do the same in a loop.
func (m *LogManager) CleanNow() (CleanStats, bool, error) {
	c := newCleaner(m.cfg.CleanerDedupeBufferSize, m.logger)
	cleaned, stats, err := m.cleanOnceStats(c)
	return stats, cleaned, err
}

func (m *LogManager) cleanOnce(c *cleaner) (bool, error) {
	cleaned, _, err := m.cleanOnceStats(c)
	return cleaned, err
}

func (m *LogManager) cleanOnceStats(c *cleaner) (bool, CleanStats, error) {
	tp, l, dir, checkpoint, ok := m.grabFilthiestLog()
	if !ok {
		return false, CleanStats{}, nil
	}
	stats, err := c.clean(l, checkpoint)
	m.mu.Lock()
	delete(m.mu.cleaning, tp)
	if err == nil {
		m.mu.cleanerCheckpoints[tp] = stats.EndOffset
	} else if !errors.Is(err, errCleaningAborted) {
		m.mu.uncleanable[tp] = true
	}
	m.mu.cleaningDone.Broadcast()
	m.mu.Unlock()
	switch {
	case errors.Is(err, errCleaningAborted):
		m.logger.Info("log cleaning aborted", "partition", tp.String(), "err", err)
		return false, stats, err
	case err != nil:
		m.logger.Error("log cleaning failed; not cleaning this log again until restart", "partition", tp.String(), "err", err)
		return false, stats, err
	}
	if err := m.writeCleanerCheckpoint(dir); err != nil {
		m.logger.Error("writing cleaner checkpoint", "dir", dir, "err", err)
	}
	m.logger.Info("cleaned log", "partition", tp.String(),
		"first_dirty_offset", stats.FirstDirtyOffset, "end_offset", stats.EndOffset,
		"segments", stats.SegmentsCleaned, "mb_read", float64(stats.BytesRead)/1e6,
		"mb_written", float64(stats.BytesWritten)/1e6, "records_read", stats.RecordsRead,
		"records_kept", stats.RecordsKept, "elapsed", stats.Elapsed, "mb_per_sec", stats.MBPerSec())
	return true, stats, nil
}

// logToClean is a candidate for cleaning.
type logToClean struct {
	tp         TopicPartition
	l          *Log
	dir        string
	checkpoint int64
	ratio      float64
}

// grabFilthiestLog picks the compacted log with the largest dirty ratio
// above its min.cleanable.dirty.ratio, or any whose oldest dirty record is
// older than max.compaction.lag.ms (Kafka's grabFilthiestCompactedLog), and
// marks it as being cleaned.
func (m *LogManager) grabFilthiestLog() (TopicPartition, *Log, string, int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *logToClean
	for tp, l := range m.mu.logs {
		if m.mu.cleaning[tp] || m.mu.uncleanable[tp] || l.closed.Load() {
			continue
		}
		cfg := l.Config()
		if !cfg.CleanupPolicy.Compact() {
			continue
		}
		cp, ok := m.mu.cleanerCheckpoints[tp]
		if !ok {
			cp = -1
		}
		ratio, must := dirtyRatio(l, cp, cfg)
		if ratio <= 0 || ratio <= cfg.MinCleanableDirtyRatio && !must {
			continue
		}
		if must {
			ratio = 2 // ahead of every ratio-driven candidate
		}
		if best == nil || ratio > best.ratio {
			best = &logToClean{tp, l, m.mu.dirOf[tp], cp, ratio}
		}
	}
	if best == nil {
		return TopicPartition{}, nil, "", 0, false
	}
	m.mu.cleaning[best.tp] = true
	return best.tp, best.l, best.dir, best.checkpoint, true
}

// dirtyRatio is dirty bytes / (clean + dirty bytes) of segments below the
// first uncleanable offset, and whether max.compaction.lag.ms forces a
// pass. Like Kafka it counts whole segments.
func dirtyRatio(l *Log, checkpoint int64, cfg LogConfig) (float64, bool) {
	segs := l.segments()
	now := cfg.Now()
	firstDirty, uncleanable := cleanableRange(l, segs, checkpoint, cfg, now)
	var clean, dirty int64
	var firstDirtySeg *segment
	for i, s := range segs[:len(segs)-1] {
		end := segs[i+1].baseOffset
		switch {
		case s.baseOffset >= uncleanable:
		case end <= firstDirty:
			clean += s.size.Load()
		default:
			dirty += s.size.Load()
			if firstDirtySeg == nil {
				firstDirtySeg = s
			}
		}
	}
	if dirty == 0 {
		return 0, false
	}
	must := false
	if cfg.MaxCompactionLagMs < math.MaxInt64 && firstDirtySeg != nil {
		if ts := firstBatchTimestamp(firstDirtySeg); ts >= 0 {
			must = now.UnixMilli()-ts > cfg.MaxCompactionLagMs
		}
	}
	return float64(dirty) / float64(clean+dirty), must
}

// firstBatchTimestamp is the max timestamp of a segment's first batch
// (Kafka's getFirstBatchTimestamp), or -1.
func firstBatchTimestamp(s *segment) int64 {
	var buf [record.HeaderSize]byte
	if s.size.Load() < record.HeaderSize {
		return noTimestamp
	}
	if _, err := s.log.ReadAt(buf[:], 0); err != nil && err != io.EOF {
		return noTimestamp
	}
	h, err := record.ParseHeader(buf[:])
	if err != nil {
		return noTimestamp
	}
	return h.MaxTimestamp
}

// writeCleanerCheckpoint writes dir's cleaner-offset-checkpoint with the
// entries of the logs in it.
func (m *LogManager) writeCleanerCheckpoint(dir string) error {
	m.mu.Lock()
	offsets := map[TopicPartition]int64{}
	for tp, off := range m.mu.cleanerCheckpoints {
		if d, ok := m.mu.dirOf[tp]; ok && d == dir {
			offsets[tp] = off
		}
	}
	m.mu.Unlock()
	return WriteCheckpoint(filepath.Join(dir, CleanerOffsetCheckpointFile), offsets)
}

// forgetCleaning waits for a cleaner pass on a deleted log to stop, then
// drops its cleaner checkpoint (Kafka's abortCleaning + updateCheckpoints).
func (m *LogManager) forgetCleaning(tp TopicPartition, dir string) {
	m.mu.Lock()
	for m.mu.cleaning[tp] {
		m.mu.cleaningDone.Wait()
	}
	_, had := m.mu.cleanerCheckpoints[tp]
	delete(m.mu.cleanerCheckpoints, tp)
	delete(m.mu.uncleanable, tp)
	m.mu.Unlock()
	if had {
		if err := m.writeCleanerCheckpoint(dir); err != nil {
			m.logger.Error("writing cleaner checkpoint", "dir", dir, "err", err)
		}
	}
}
