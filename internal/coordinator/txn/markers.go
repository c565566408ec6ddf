package txn

import (
	"maps"
	"math"
	"slices"
	"time"
)

// startCompletionLocked writes t's markers in the background and then
// moves it to CompleteCommit or CompleteAbort (Kafka's
// TransactionMarkerChannelManager). t must be in a Prepare state.
func (s *shard) startCompletionLocked(t *txnMeta) {
	if s.mu.completing[t.id] {
		return
	}
	s.mu.completing[t.id] = true
	m := Marker{ProducerID: t.producerID, Epoch: t.epoch, CoordinatorEpoch: s.p.Epoch,
		Commit: t.state == StatePrepareCommit, TransactionVersion: t.clientTV}
	id, parts := t.id, t.sortedPartitions()
	s.c.rt.Go(func() { s.complete(id, m, parts) })
}

// complete retries the markers until they are written, then persists the
// Complete state, retrying that too; it gives up only when the partition is
// unloaded (the next owner completes the transaction on its Load).
func (s *shard) complete(id string, m Marker, parts []TopicPartition) {
	pid, epoch, commit := m.ProducerID, m.Epoch, m.Commit
	defer func() {
		s.mu.Lock()
		if !s.unloadedLocked() {
			delete(s.mu.completing, id)
		}
		s.mu.Unlock()
	}()
	for attempt := 0; ; attempt++ {
		if attempt > 0 && !s.sleep(s.c.cfg.MarkerRetryBackoff) {
			return
		}
		if len(parts) == 0 {
			break
		}
		err := s.c.cfg.Markers.WriteMarkers(s.p.Context(), m, parts)
		if err == nil {
			break
		}
		if s.p.Context().Err() != nil {
			return
		}
		s.c.cfg.Logger.Warn("writing transaction markers failed; retrying", "transactional.id", id,
			"producer.id", pid, "epoch", epoch, "commit", commit, "err", err)
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 && !s.sleep(s.c.cfg.MarkerRetryBackoff) {
			return
		}
		var stale bool
		code := s.persist(s.p.Context(), func() (*txnMeta, int16) {
			t := s.mu.txns[id]
			want := StatePrepareAbort
			if commit {
				want = StatePrepareCommit
			}
			if t == nil || t.producerID != pid || t.epoch != epoch || t.state != want {
				stale = true // cannot happen while completing; never complete another txn
				return nil, 0
			}
			nt := t.clone()
			nt.state = StateCompleteAbort
			if commit {
				nt.state = StateCompleteCommit
			}
			nt.partitions = map[TopicPartition]struct{}{}
			nt.updateMs = s.c.cfg.Now().UnixMilli()
			if t.nextProducerID >= 0 {
				// Transaction version 2 at an exhausted epoch: the next
				// transaction runs under the new producer id (Kafka's
				// prepareComplete). lastEpoch stays the epoch the client
				// last had, for a retry of the EndTxn.
				nt.prevProducerID, nt.producerID, nt.epoch, nt.nextProducerID = t.producerID, t.nextProducerID, 0, -1
			}
			return nt, 0
		}, nil)
		if stale || code == 0 {
			return
		}
		s.c.cfg.Logger.Warn("writing transaction completion failed; retrying", "transactional.id", id, "code", code)
	}
}

// sleep waits d; false if the shard was unloaded meanwhile.
func (s *shard) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.p.Context().Done():
		return false
	}
}

// fenceLocked is Kafka's prepareFenceProducerEpoch followed by an abort:
// the ongoing transaction t is aborted at epoch+1, so its producer's
// further requests are fenced. It is written as PrepareAbort directly
// (PrepareEpochFence is never logged). The epoch stays when it cannot grow.
func (s *shard) fenceLocked(t *txnMeta) *txnMeta {
	nt := t.clone()
	if nt.epoch < math.MaxInt16 {
		nt.epoch++
	}
	nt.lastEpoch, nt.nextProducerID = -1, -1
	// The abort is the coordinator's, not an EndTxn of the client: a
	// fenced client's later EndTxn must not pass as the retry of one.
	nt.clientTV = 0
	nt.state = StatePrepareAbort
	nt.updateMs = s.c.cfg.Now().UnixMilli()
	return nt
}

// abortTimedOut fences and aborts every ongoing transaction that has run
// longer than its timeout (Kafka's abortTimedOutTransactions).
func (s *shard) abortTimedOut() {
	now := s.c.cfg.Now().UnixMilli()
	s.mu.Lock()
	var ids []string
	for id, t := range s.mu.txns {
		if t.state == StateOngoing && !s.mu.completing[id] && now > t.startMs+int64(t.timeoutMs) {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		code := s.persist(s.p.Context(), func() (*txnMeta, int16) {
			t := s.mu.txns[id]
			if t == nil || t.state != StateOngoing || now <= t.startMs+int64(t.timeoutMs) {
				return nil, 0 // changed since we looked
			}
			s.c.cfg.Logger.Info("aborting timed-out transaction", "transactional.id", id,
				"producer.id", t.producerID, "epoch", t.epoch, "timeout_ms", t.timeoutMs)
			return s.fenceLocked(t), 0
		}, s.startCompletionLocked)
		if code != 0 {
			s.c.cfg.Logger.Warn("aborting timed-out transaction failed", "transactional.id", id, "code", code)
		}
	}
}

// removeExpired writes tombstones for transactional ids without a
// transaction for IDExpiration (Kafka's removeExpiredTransactionalIds).
func (s *shard) removeExpired() {
	s.p.Write(s.p.Context(), func() ([]KV, func(error)) {
		now := s.c.cfg.Now().UnixMilli()
		var kvs []KV
		// Sorted, so the log reads the same on every run.
		for _, id := range slices.Sorted(maps.Keys(s.mu.txns)) {
			t := s.mu.txns[id]
			switch t.state {
			case StateEmpty, StateCompleteCommit, StateCompleteAbort:
				if !s.mu.completing[id] && now-t.updateMs >= s.c.cfg.IDExpiration.Milliseconds() {
					kvs = append(kvs, KV{Key: txnKey(id)})
				}
			}
		}
		if len(kvs) == 0 {
			return nil, nil
		}
		return kvs, func(err error) {
			if err != nil {
				s.c.cfg.Logger.Warn("writing transactional id tombstones failed", "partition", s.p.ID, "err", err)
				return
			}
			for _, kv := range kvs {
				_ = s.replayLocked(kv)
			}
			s.c.cfg.Logger.Info("expired transactional ids", "partition", s.p.ID, "count", len(kvs))
		}
	})
}
