package txn

import (
	"context"

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
// the broker-to-broker batched form of KIP-890: each transaction is handled
// as the client form, and VerifyOnly entries check, without writing, that
// the partitions are in the ongoing transaction (INVALID_TXN_STATE if not).
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
		code := fenceCode(c.addPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, false), req.Version < 2)
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
		code := c.addPartitions(ctx, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, parts, tx.VerifyOnly)
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
	code := c.addPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TopicPartition{{topic, p}}, false)
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

// addPartitions is Kafka's handleAddPartitionsToTransaction (v1 semantics);
// with verify it only checks the producer.
func (c *Coordinator) addPartitions(ctx context.Context, id string, producerID int64, epoch int16, parts []TopicPartition, verify bool) int16 {
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
		nt.state, nt.updateMs = StateOngoing, s.c.cfg.Now().UnixMilli()
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
		codes[p] = kerr.InvalidTxnState.Code
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

// EndTxn serves EndTxn v0-v4 (Kafka's handleEndTransaction, transaction
// version 1).
//
// Behavior: the transaction moves to PrepareCommit or PrepareAbort, the
// client is answered once that is written, and markers are written to
// every partition in the background; the transaction then becomes
// CompleteCommit or CompleteAbort, and until then its producer gets
// CONCURRENT_TRANSACTIONS. Repeating a completed EndTxn succeeds; asking for
// the other outcome, or ending with no transaction, is INVALID_TXN_STATE.
func (c *Coordinator) EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	r := kmsg.NewPtrEndTxnResponse()
	r.ProducerID, r.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	s, code := c.shardFor(req.TransactionalID)
	if code == 0 {
		code = s.persist(ctx, func() (*txnMeta, int16) {
			return s.decideEndLocked(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		}, s.startCompletionLocked)
	}
	r.ErrorCode = fenceCode(code, req.Version < 2)
	return r
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
