package replica

import (
	"fmt"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// Producer state survives restarts as Kafka's does (ProducerStateManager):
//
//   - A snapshot file "<offset>.snapshot" in the partition directory holds
//     the state after every batch below offset. One is taken when the log
//     rolls (named by the new segment's base offset) and one on a clean
//     shutdown (named by the log end offset). Storage deletes them with the
//     segments below them and on truncation above the new end.
//   - Opening a partition loads the newest usable snapshot and replays the
//     headers of the batches after it to the log end. A snapshot keeps
//     only each producer's last batch, so after a clean restart only that
//     batch is recognised as a duplicate; batches replayed from the log
//     refill the cache of five.
//   - Producers whose last batch is older than producer.id.expiration.ms
//     are dropped when a snapshot is loaded and by a check at most every
//     producer.id.expiration.check.interval.ms, run on the append path
//     and by DescribeProducers, so no goroutine per partition is needed.

// loadProducerStateLocked rebuilds the producer state from the newest
// usable snapshot and the log after it.
func (p *Partition) loadProducerStateLocked() error {
	now := p.now().UnixMilli()
	p.mu.producers = newProducerState()
	p.mu.lastExpiryCheck = now
	p.mu.activeBase = p.Log().ActiveSegmentBaseOffset()
	offsets, err := p.Log().ProducerSnapshotOffsets()
	if err != nil {
		return err
	}
	leo := p.Log().LogEndOffset()
	segs := p.Log().Segments()
	firstBase := segs[0].BaseOffset
	from := int64(-1)
	for i := len(offsets) - 1; i >= 0 && from < 0; i-- {
		off := offsets[i]
		if off > leo || off < firstBase {
			// Above the end: the log lost its tail (recovery cut a torn
			// write). Below the first segment: the batches between it
			// and the log are gone, so its state would be stale.
			p.logger.Info("deleting unusable producer snapshot", "offset", off, "log_end_offset", leo, "first_segment", firstBase)
			if err := p.Log().DeleteProducerSnapshot(off); err != nil {
				return err
			}
			continue
		}
		entries, err := p.Log().ReadProducerSnapshot(off)
		if err != nil {
			p.logger.Warn("deleting unreadable producer snapshot", "offset", off, "err", err)
			if err := p.Log().DeleteProducerSnapshot(off); err != nil {
				return err
			}
			continue
		}
		p.mu.producers.load(entries, now, p.producerExpirationMs)
		from = off
	}
	if from < 0 {
		from = firstBase
	}
	if from == leo {
		return nil
	}
	replayed := 0
	var aborts []storage.AbortedTxn
	err = p.Log().ScanBatchHeadersAndControl(from, func(h record.Header, control []byte) error {
		t, err := p.mu.producers.replay(h, control)
		if t != nil {
			aborts = append(aborts, *t)
		}
		replayed++
		return err
	})
	if err != nil {
		return fmt.Errorf("replay batches from offset %d: %w", from, err)
	}
	// After the scan, which holds the log's read lock: adding an entry
	// takes its writer lock.
	for _, t := range aborts {
		if err := p.Log().AppendAbortedTxn(t); err != nil {
			return fmt.Errorf("restore .txnindex entry of the abort at offset %d: %w", t.LastOffset, err)
		}
	}
	p.mu.producers.removeExpired(now, p.producerExpirationMs)
	p.logger.Info("rebuilt producer state", "snapshot", from, "replayed_batches", replayed,
		"producers", len(p.mu.producers.producers))
	return nil
}

// afterAppendLocked takes a producer snapshot when the append that just
// wrote base rolled the log (or a retention roll happened since the last
// append): the state before this batch's update is the state at base.
// The file is written in the background; only the copy happens here.
func (p *Partition) afterAppendLocked(base int64) {
	active := p.Log().ActiveSegmentBaseOffset()
	if active == p.mu.activeBase {
		return
	}
	p.mu.activeBase = active
	if active != base {
		return
	}
	p.Log().WriteProducerSnapshotAsync(base, p.Log().ProducerSnapshotGeneration(), p.mu.producers.snapshot())
}

// maybeExpireProducersLocked runs the producer.id.expiration.ms check when
// producer.id.expiration.check.interval.ms has passed since the last one.
func (p *Partition) maybeExpireProducersLocked(nowMs int64) {
	if nowMs-p.mu.lastExpiryCheck < p.producerCheckIntervalMs {
		return
	}
	p.mu.lastExpiryCheck = nowMs
	p.mu.producers.removeExpired(nowMs, p.producerExpirationMs)
}

// writeFinalSnapshot is the log's close hook: on a clean shutdown the
// state at the log end offset is written, so the next start replays
// nothing.
func (p *Partition) writeFinalSnapshot() {
	p.mu.Lock()
	entries := p.mu.producers.snapshot()
	gen := p.Log().ProducerSnapshotGeneration()
	leo := p.Log().LogEndOffset()
	p.mu.Unlock()
	if err := p.Log().WriteProducerSnapshot(leo, gen, entries); err != nil {
		p.logger.Error("producer snapshot on shutdown", "offset", leo, "err", err)
	}
}

// ActiveProducers returns the idempotent producers this partition tracks,
// ordered by producer id (DescribeProducers).
func (p *Partition) ActiveProducers() []ProducerInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maybeExpireProducersLocked(p.now().UnixMilli())
	return p.mu.producers.describe()
}

// TruncateTo cuts the log back so it ends at or before offset (see
// storage.Log.TruncateTo) and rebuilds the producer state for the shorter
// log from the snapshots that remain and the log.
func (p *Partition) TruncateTo(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.truncateLocked(offset)
}

// truncateLocked is TruncateTo with the lock held. The high watermark
// follows the log end offset down; waiting fetches wake.
func (p *Partition) truncateLocked(offset int64) error {
	if err := p.Log().TruncateTo(offset); err != nil {
		return fmt.Errorf("truncate %s-%d to %d: %w", p.Topic, p.Index, offset, err)
	}
	if err := p.truncateFutureLocked(false); err != nil {
		return fmt.Errorf("truncate future log of %s-%d: %w", p.Topic, p.Index, err)
	}
	p.setHighWatermarkLocked(min(p.mu.highWatermark, p.Log().LogEndOffset()))
	p.wakeLocked()
	return p.loadProducerStateLocked()
}
