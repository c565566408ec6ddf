package replica

// Moving a replica between this broker's log directories (Kafka's
// AlterReplicaLogDirs and ReplicaAlterLogDirsThread, KIP-113).
//
// The storage.LogManager creates the future log in the destination; a
// goroutine of the Manager copies the current log into it batch by batch,
// keeping offsets, leader epochs and aborted transactions, while the
// partition keeps serving. Reads of the current log happen without the
// partition lock; each copied chunk is appended under it, and only if no
// truncation of the current log happened since the chunk was read
// (mu.truncations), since a truncation also truncates the future log.
// When the future log ends where the current log does, the swap happens
// under the partition lock, so no append lands in between: the future log
// becomes the partition's log (storage.ReplaceCurrentWithFuture) and the
// old one is deleted.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/storage"
)

// moveChunkBytes bounds one copy step, so an append waits at most for one
// chunk's write.
const moveChunkBytes = 1 << 20

// AlterLogDir moves a hosted partition's replica to the log directory dir
// (Kafka's ReplicaManager.alterReplicaLogDirs): nil when the move started,
// is already under way to dir, or dir already holds the replica. Errors:
// LOG_DIR_NOT_FOUND for a directory that is not in log.dirs,
// KAFKA_STORAGE_ERROR for an offline one (or while any is offline), and
// REPLICA_NOT_AVAILABLE for a partition not hosted here, which is then
// created in dir when it arrives.
func (m *Manager) AlterLogDir(topic string, partition int32, dir string) error {
	d, err := m.cfg.Logs.ResolveDir(dir)
	if err != nil {
		return err
	}
	p, ok := m.Partition(topic, partition)
	if !ok {
		m.cfg.Logs.SetPreferredDir(topic, partition, d)
		return fmt.Errorf("%w: partition %s-%d has no replica on this broker", kerr.ReplicaNotAvailable, topic, partition)
	}
	if err := p.Log().Failed(); err != nil {
		return err
	}
	fut, created, err := m.cfg.Logs.CreateFuture(topic, partition, d)
	if errors.Is(err, storage.ErrClosed) {
		return fmt.Errorf("%w: partition %s-%d has no replica on this broker", kerr.ReplicaNotAvailable, topic, partition)
	}
	if err != nil {
		return err
	}
	switch {
	case created:
		p.startMove(fut)
	case fut == nil:
		// dir holds the replica: a move elsewhere, if any, was cancelled.
		p.mu.Lock()
		p.mu.future = nil
		p.mu.Unlock()
	}
	return nil
}

// OfflineLogDirs are the log directories a failure took offline.
func (m *Manager) OfflineLogDirs() []string { return m.cfg.Logs.OfflineDirs() }

// FutureLog is the partition's future log while it moves, with the lag
// DescribeLogDirs reports for it: how far it is behind the current log.
func (p *Partition) FutureLog() (l *storage.Log, lag int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.future == nil {
		return nil, 0, false
	}
	return p.mu.future, max(p.Log().LogEndOffset()-p.mu.future.LogEndOffset(), 0), true
}

// startMove starts the goroutine copying into fut (one per partition: a
// newer move replaces an older one, whose goroutine then stops).
func (p *Partition) startMove(fut *storage.Log) {
	p.mu.Lock()
	p.mu.future = fut
	p.mu.Unlock()
	p.mgr.goBackground(func() { p.runMove(p.mgr.ctx, fut) })
}

// runMove copies until the swap, a cancelled move or Close.
func (p *Partition) runMove(ctx context.Context, fut *storage.Log) {
	p.logger.Info("moving replica to another log directory", "dir", filepath.Dir(fut.Dir()))
	for ctx.Err() == nil {
		if hook := p.mgr.testMoveStep; hook != nil {
			if hook(ctx); ctx.Err() != nil {
				return
			}
		}
		done, err := p.moveStep(fut)
		if done {
			if err != nil {
				p.logger.Error("moving replica to another log directory", "dir", filepath.Dir(fut.Dir()), "err", err)
			}
			return
		}
		if err != nil {
			p.logger.Warn("copying to future log, retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// moveStep copies one chunk, or swaps the logs when the future log has
// caught up. done: the move is over (swapped, cancelled or failed for
// good).
func (p *Partition) moveStep(fut *storage.Log) (done bool, err error) {
	p.mu.Lock()
	if p.mu.future != fut {
		p.mu.Unlock()
		return true, nil
	}
	if err := fut.Failed(); err != nil {
		// Its log directory is offline: the LogManager has it.
		p.mu.future = nil
		p.mu.Unlock()
		return true, err
	}
	cur := p.Log()
	from, start, end := fut.LogEndOffset(), cur.LogStartOffset(), cur.LogEndOffset()
	switch {
	case from < start:
		// New, or behind the current log's start after retention or
		// DeleteRecords: begin at its start.
		err = fut.TruncateFullyAndStartAt(start)
	case fut.LogStartOffset() < start:
		err = fut.IncrementLogStartOffset(start)
	case from > end:
		// Truncations keep it from happening; never copy past the end.
		err = fut.TruncateTo(end)
	case from == end:
		err = p.swapLogsLocked(cur, fut)
		p.mu.Unlock()
		if err == nil {
			p.mgr.forgetHWCheckpoint(filepath.Dir(cur.Dir()), p.Topic, p.Index)
		}
		return true, err
	}
	gen := p.mu.truncations
	p.mu.Unlock()
	if err != nil {
		return false, err
	}

	b, err := cur.Read(from, moveChunkBytes, end)
	if err != nil || len(b) == 0 {
		return false, err
	}
	aborted, err := cur.CollectAbortedTxns(from, end)
	if err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.future != fut || p.mu.truncations != gen || p.Log() != cur || fut.LogEndOffset() != from {
		return false, nil // read again
	}
	if _, _, err := fut.AppendAsFollower(b); err != nil {
		return false, err
	}
	next := fut.LogEndOffset()
	for _, t := range aborted {
		if t.LastOffset >= from && t.LastOffset < next {
			if err := fut.AppendAbortedTxn(t); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// swapLogsLocked makes the caught-up future log the partition's log. The
// epochs the current log knows past its last batch (a leader epoch with no
// record yet) and the producer state go with it.
func (p *Partition) swapLogsLocked(cur, fut *storage.Log) error {
	for _, e := range cur.LeaderEpochs() {
		if e.Epoch > fut.LatestEpoch() {
			if err := fut.AssignLeaderEpoch(e.Epoch, e.StartOffset); err != nil {
				return err
			}
		}
	}
	leo := fut.LogEndOffset()
	if err := fut.WriteProducerSnapshot(leo, fut.ProducerSnapshotGeneration(), p.mu.producers.snapshot()); err != nil {
		return err
	}
	l, err := p.mgr.cfg.Logs.ReplaceCurrentWithFuture(p.Topic, p.Index)
	p.mu.future = nil
	if err != nil {
		return err
	}
	l.SetHighWatermark(p.mu.highWatermark)
	l.SetCloseHook(p.writeFinalSnapshot)
	p.log.Store(l)
	p.mu.activeBase = l.ActiveSegmentBaseOffset()
	p.wakeLocked()
	p.logger.Info("moved replica to another log directory", "dir", filepath.Dir(l.Dir()), "log_end_offset", leo)
	return nil
}

// truncateFutureLocked follows a truncation of the current log: the future
// log must not keep what the current log dropped.
func (p *Partition) truncateFutureLocked(full bool) error {
	p.mu.truncations++
	fut := p.mu.future
	if fut == nil {
		return nil
	}
	cur := p.Log()
	if full {
		return fut.TruncateFullyAndStartAt(cur.LogStartOffset())
	}
	if fut.LogEndOffset() > cur.LogEndOffset() {
		return fut.TruncateTo(cur.LogEndOffset())
	}
	return nil
}

// readLog reads the current log (ReadLog).
func (p *Partition) readLog(offset int64, maxBytes int, maxOffset int64) (b []byte, err error) {
	err = p.onLog(func(l *storage.Log) error {
		b, err = l.Read(offset, maxBytes, maxOffset)
		return err
	})
	return b, err
}

// ReadLog is Log().Read, up to maxOffset (which may pass the high
// watermark), safe across a move to another log directory.
func (p *Partition) ReadLog(offset int64, maxBytes int, maxOffset int64) ([]byte, error) {
	return p.readLog(offset, maxBytes, maxOffset)
}

// OffsetForTimestamp is Log().OffsetForTimestamp, safe across a move to
// another log directory.
func (p *Partition) OffsetForTimestamp(ts int64) (offset, timestamp int64, found bool, err error) {
	err = p.onLog(func(l *storage.Log) error {
		offset, timestamp, found, err = l.OffsetForTimestamp(ts)
		return err
	})
	return offset, timestamp, found, err
}

// onLog runs fn on the current log without the partition lock, and once
// more on the new log when a move to another log directory closed the
// one fn had (fn failed with storage.ErrClosed and the log changed).
func (p *Partition) onLog(fn func(l *storage.Log) error) error {
	for {
		l := p.Log()
		err := fn(l)
		if !errors.Is(err, storage.ErrClosed) {
			return err
		}
		p.mu.Lock() // a swap in progress holds it
		next := p.Log()
		p.mu.Unlock()
		if next == l {
			return err
		}
	}
}

// forgetHWCheckpoint drops a partition from the cached high watermark
// checkpoint of a log directory it left.
func (m *Manager) forgetHWCheckpoint(dir, topic string, partition int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mu.hwCheckpoints[dir], storage.TopicPartition{Topic: topic, Partition: partition})
}
