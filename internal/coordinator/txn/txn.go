package txn

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fenceCode maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for request
// versions from before KIP-588, whose clients do not know the new code.
func fenceCode(code int16, old bool) int16 {
	if code == kerr.ProducerFenced.Code && old {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// AddPartitionsToTxn serves AddPartitionsToTxn v0-v5.
//
// Behavior: v0-v3 (clients) add the partitions to the transaction, which
// starts it if none is ongoing; every partition gets the same code. v4+ is
// the broker-to-broker batched form of KIP-890, sent by partition leaders:
// an entry without VerifyOnly adds the partitions as the client form does,
// for a transaction version 2 client (Produce v12+, TxnOffsetCommit v5+,
// part 2); a VerifyOnly entry checks, without writing, that the partitions
// are in the transaction (part 1): TRANSACTION_ABORTABLE for a partition
// that is not, which the leader turns into the code its client knows.
// Authorization and unknown topics are the broker's to check first.
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	r := kmsg.NewPtrAddPartitionsToTxnResponse()
	if req.Version < 4 {
		var parts []TopicPartition
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, TopicPartition{t.Topic, p})
			}
		}
		code := fenceCode(c.addPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, false, 0), req.Version < 2)
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	for _, tx := range req.Transactions {
		var parts []TopicPartition
		for _, t := range tx.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, TopicPartition{t.Topic, p})
			}
		}
		var codes map[TopicPartition]int16
		code := c.addPartitions(ctx, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, parts, tx.VerifyOnly, 2)
		if tx.VerifyOnly && code == 0 {
			codes = c.verifyPartitions(tx.TransactionalID, parts)
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for _, t := range tx.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				if codes != nil {
					rp.ErrorCode = codes[TopicPartition{t.Topic, p}]
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		r.Transactions = append(r.Transactions, rtx)
	}
	return r
}

// AddOffsetsToTxn serves AddOffsetsToTxn v0-v4: it adds the group's
// __consumer_offsets partition to the transaction, so that TxnOffsetCommit
// can follow and the markers reach the group coordinator.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	r := kmsg.NewPtrAddOffsetsToTxnResponse()
	if req.Group == "" {
		r.ErrorCode = kerr.InvalidGroupID.Code
		return r
	}
	topic, p := c.cfg.GroupPartition(req.Group)
	code := c.addPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TopicPartition{{topic, p}}, false, 0)
	r.ErrorCode = fenceCode(code, req.Version < 2)
	return r
}

// checkProducerLocked is the check every request of a transaction's
// producer passes: the id must exist and map to producerID at epoch.
func (s *shard) checkProducerLocked(id string, producerID int64, epoch int16) (*txnMeta, int16) {
	t := s.mu.txns[id]
	switch {
	case t == nil || t.producerID != producerID:
		return nil, kerr.InvalidProducerIDMapping.Code
	case t.epoch != epoch:
		return nil, kerr.ProducerFenced.Code
	case s.mu.completing[id] || t.state == StatePrepareCommit || t.state == StatePrepareAbort:
		return nil, kerr.ConcurrentTransactions.Code
	}
	return t, 0
}

// addPartitions is Kafka's handleAddPartitionsToTransaction; with verify
// it only checks the producer. clientTV is the transaction version of the
// client (0, or 2 for a broker's implicit add), kept with the transaction.
func (c *Coordinator) addPartitions(ctx context.Context, id string, producerID int64, epoch int16, parts []TopicPartition, verify bool, clientTV int16) int16 {
	s, code := c.shardFor(id)
	if code != 0 {
		return code
	}
	return s.persist(ctx, func() (*txnMeta, int16) {
		t, code := s.checkProducerLocked(id, producerID, epoch)
		if code != 0 || verify {
			return nil, code
		}
		nt := t.clone()
		if t.state != StateOngoing {
			nt.startMs, nt.partitions = s.c.cfg.Now().UnixMilli(), map[TopicPartition]struct{}{}
		}
		added := false
		for _, p := range parts {
			if _, ok := nt.partitions[p]; !ok {
				nt.partitions[p], added = struct{}{}, true
			}
		}
		if t.state == StateOngoing && !added {
			return nil, 0 // nothing new to record
		}
		nt.state, nt.updateMs, nt.clientTV = StateOngoing, s.c.cfg.Now().UnixMilli(), clientTV
		return nt, 0
	}, nil)
}

// verifyPartitions answers a VerifyOnly entry whose producer checked out.
func (c *Coordinator) verifyPartitions(id string, parts []TopicPartition) map[TopicPartition]int16 {
	codes := map[TopicPartition]int16{}
	s, code := c.shardFor(id)
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	var t *txnMeta
	if code == 0 && !s.unloadedLocked() {
		t = s.mu.txns[id]
	}
	for _, p := range parts {
		codes[p] = kerr.TransactionAbortable.Code
		if code != 0 {
			codes[p] = code
		} else if t != nil && t.state == StateOngoing {
			if _, ok := t.partitions[p]; ok {
				codes[p] = 0
			}
		}
	}
	return codes
}

// EndTxn serves EndTxn v0-v5 (Kafka's handleEndTransaction).
//
// Behavior: the transaction moves to PrepareCommit or PrepareAbort, the
// client is answered once that is written, and markers are written to
// every partition in the background; the transaction then becomes
// CompleteCommit or CompleteAbort, and until then its producer gets
// CONCURRENT_TRANSACTIONS.
//
// v0-v4 (transaction version 1): repeating a completed EndTxn succeeds;
// asking for the other outcome, or ending with no transaction, is
// INVALID_TXN_STATE.
//
// v5 (transaction version 2, KIP-890 part 2): every EndTxn bumps the
// producer epoch; the markers carry the bumped epoch, so a late write of
// the ended transaction is fenced on every partition, and the answer
// holds the producer id and epoch for the next transaction. At an
// exhausted epoch a new producer id is allocated (NextProducerId in the
// log) and the answer gives it at epoch 0. A retry of an EndTxn whose
// answer was lost (the epoch one below the current) succeeds with the
// current id and epoch; an abort with no transaction (the client cannot
// know whether its produce requests added a partition) is an empty abort
// that bumps the epoch too.
func (c *Coordinator) EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	r := kmsg.NewPtrEndTxnResponse()
	r.ProducerID, r.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	s, code := c.shardFor(req.TransactionalID)
	if code == 0 && req.Version >= 5 {
		r.ProducerID, r.ProducerEpoch = -1, -1
		code = c.endTxnV2(ctx, s, req, r)
	} else if code == 0 {
		code = s.persist(ctx, func() (*txnMeta, int16) {
			return s.decideEndLocked(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		}, s.startCompletionLocked)
	}
	r.ErrorCode = fenceCode(code, req.Version < 2)
	return r
}

// endTxnV2 is EndTxn for transaction version 2; it fills in r's producer
// id and epoch on success.
func (c *Coordinator) endTxnV2(ctx context.Context, s *shard, req *kmsg.EndTxnRequest, r *kmsg.EndTxnResponse) int16 {
	id := req.TransactionalID
	// An exhausted epoch needs a new producer id, allocated outside the
	// shard's lock (it may wait for the controller), as InitProducerId does.
	newPID := int64(-1)
	for range 3 {
		s.mu.Lock()
		t := s.mu.txns[id]
		need := !s.unloadedLocked() && t != nil && epochExhausted(t.epoch)
		s.mu.Unlock()
		if need && newPID < 0 {
			pid, err := c.cfg.ProducerIDs(ctx)
			if err != nil {
				return producerIDErrorCode(err)
			}
			newPID = pid
		}
		var retry bool
		code := s.persist(ctx, func() (*txnMeta, int16) {
			t := s.mu.txns[id]
			if t != nil && epochExhausted(t.epoch) && newPID < 0 {
				retry = true
				return nil, 0
			}
			nt, code, done := s.decideEndV2Locked(id, req.ProducerID, req.ProducerEpoch, req.Commit, newPID)
			if done {
				r.ProducerID, r.ProducerEpoch = t.producerID, t.epoch
			}
			return nt, code
		}, func(t *txnMeta) {
			r.ProducerID, r.ProducerEpoch = t.producerID, t.epoch
			if t.nextProducerID >= 0 {
				r.ProducerID, r.ProducerEpoch = t.nextProducerID, 0
			}
			s.startCompletionLocked(t)
		})
		if retry {
			continue
		}
		if code != 0 {
			r.ProducerID, r.ProducerEpoch = -1, -1
		}
		return code
	}
	return kerr.ConcurrentTransactions.Code
}

// decideEndV2Locked is Kafka's endTransaction for transaction version 2:
// the Prepare state at the bumped epoch, or a code; done means a retry of
// an EndTxn already completed (answered with the current id and epoch).
func (s *shard) decideEndV2Locked(id string, producerID int64, epoch int16, commit bool, newPID int64) (nt *txnMeta, code int16, done bool) {
	t := s.mu.txns[id]
	if t == nil {
		return nil, kerr.InvalidProducerIDMapping.Code, false
	}
	// A retry of an EndTxn that bumped the epoch (or rotated the producer
	// id) the client never heard of.
	v2 := t.clientTV >= 2
	retryOnBump := v2 && t.producerID == producerID && t.epoch == epoch+1
	retryOnOverflow := v2 && t.prevProducerID == producerID && epoch == math.MaxInt16-1 && t.epoch == 0
	if t.producerID != producerID && !retryOnOverflow {
		return nil, kerr.InvalidProducerIDMapping.Code, false
	}
	switch t.state {
	case StatePrepareCommit, StatePrepareAbort:
		if !retryOnBump && epoch != t.epoch {
			return nil, kerr.ProducerFenced.Code, false
		}
		return nil, okIf(commit == (t.state == StatePrepareCommit), kerr.ConcurrentTransactions.Code), false
	case StateCompleteCommit, StateCompleteAbort:
		if retryOnBump || retryOnOverflow {
			return nil, okIf(commit == (t.state == StateCompleteCommit), 0), true
		}
	}
	switch {
	case epoch != t.epoch:
		return nil, kerr.ProducerFenced.Code, false
	case s.mu.completing[id]:
		return nil, kerr.ConcurrentTransactions.Code, false
	case t.state != StateOngoing && commit:
		return nil, kerr.InvalidTxnState.Code, false // nothing to commit
	}
	now := s.c.cfg.Now().UnixMilli()
	nt = t.clone()
	nt.state, nt.updateMs, nt.clientTV = StatePrepareAbort, now, 2
	if commit {
		nt.state = StatePrepareCommit
	}
	if t.state != StateOngoing {
		// An empty abort: no partitions, and it starts now.
		nt.partitions, nt.startMs = map[TopicPartition]struct{}{}, now
	}
	nt.epoch, nt.lastEpoch, nt.nextProducerID = t.epoch+1, t.epoch, -1
	if epochExhausted(t.epoch) {
		nt.nextProducerID = newPID
	}
	return nt, 0, false
}

func (s *shard) decideEndLocked(id string, producerID int64, epoch int16, commit bool) (*txnMeta, int16) {
	t := s.mu.txns[id]
	switch {
	case t == nil || t.producerID != producerID:
		return nil, kerr.InvalidProducerIDMapping.Code
	case t.epoch != epoch:
		return nil, kerr.ProducerFenced.Code
	}
	switch t.state {
	case StateOngoing:
		if s.mu.completing[id] {
			return nil, kerr.ConcurrentTransactions.Code
		}
		nt := t.clone()
		nt.state, nt.updateMs = StatePrepareAbort, s.c.cfg.Now().UnixMilli()
		if commit {
			nt.state = StatePrepareCommit
		}
		return nt, 0
	case StateCompleteCommit:
		return nil, okIf(commit, 0)
	case StateCompleteAbort:
		return nil, okIf(!commit, 0)
	case StatePrepareCommit:
		return nil, okIf(commit, kerr.ConcurrentTransactions.Code)
	case StatePrepareAbort:
		return nil, okIf(!commit, kerr.ConcurrentTransactions.Code)
	}
	return nil, kerr.InvalidTxnState.Code // Empty: nothing to end
}

// okIf is code when the request asks for the outcome already chosen, and
// INVALID_TXN_STATE when it asks for the other.
func okIf(same bool, code int16) int16 {
	if same {
		return code
	}
	return kerr.InvalidTxnState.Code
}
