package txn

import (
	"context"
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID serves InitProducerId v0-v5 (Kafka's handleInitProducerId).
//
// Behavior: a null transactional id gets a fresh producer id at epoch 0
// (idempotent producers). A transactional id gets its producer id at a
// bumped epoch, which fences older instances; a new id, or one whose epoch
// is exhausted, gets a new producer id. An ongoing transaction is first
// fenced and aborted and the caller gets CONCURRENT_TRANSACTIONS, to retry
// once the abort completes. v3+ (KIP-360) may name the producer id and
// epoch the client last had: a retry of a bump it never saw the answer to
// gets the same epoch again, anything else stale is PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v4).
func (c *Coordinator) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	r := kmsg.NewPtrInitProducerIDResponse()
	r.ProducerID, r.ProducerEpoch = -1, -1
	if req.TransactionalID == nil {
		pid, err := c.cfg.ProducerIDs(ctx)
		if err != nil {
			r.ErrorCode = producerIDErrorCode(err)
			return r
		}
		r.ProducerID, r.ProducerEpoch = pid, 0
		return r
	}
	r.ErrorCode = c.initTxn(ctx, req, r)
	if r.ErrorCode == kerr.ProducerFenced.Code && req.Version < 4 {
		r.ErrorCode = kerr.InvalidProducerEpoch.Code
	}
	return r
}

type producerIDAndEpoch struct {
	id    int64
	epoch int16
}

func (c *Coordinator) initTxn(ctx context.Context, req *kmsg.InitProducerIDRequest, r *kmsg.InitProducerIDResponse) int16 {
	id := *req.TransactionalID
	if id == "" {
		return kerr.InvalidRequest.Code
	}
	if req.TransactionTimeoutMillis <= 0 || int64(req.TransactionTimeoutMillis) > c.cfg.MaxTimeout.Milliseconds() {
		return kerr.InvalidTransactionTimeout.Code
	}
	var expected *producerIDAndEpoch
	if req.Version >= 3 {
		switch {
		case req.ProducerID == -1 && req.ProducerEpoch == -1:
		case req.ProducerID >= 0 && req.ProducerEpoch >= 0:
			expected = &producerIDAndEpoch{req.ProducerID, req.ProducerEpoch}
		default:
			return kerr.InvalidRequest.Code
		}
	}
	s, code := c.shardFor(id)
	if code != 0 {
		return code
	}
	// A producer id is allocated outside the shard's locks (it may wait for
	// the controller); if state changed meanwhile so that one is needed
	// after all, go round once more.
	newPID := int64(-1)
	for range 3 {
		s.mu.Lock()
		need := !s.unloadedLocked() && needsNewProducerID(s.mu.txns[id], expected)
		s.mu.Unlock()
		if need && newPID < 0 {
			pid, err := c.cfg.ProducerIDs(ctx)
			if err != nil {
				return producerIDErrorCode(err)
			}
			newPID = pid
		}
		var retry, fenced bool
		code := s.persist(ctx, func() (*txnMeta, int16) {
			t := s.mu.txns[id]
			if needsNewProducerID(t, expected) && newPID < 0 {
				retry = true
				return nil, 0
			}
			nt, code, fence := s.decideInitLocked(id, t, expected, newPID, req.TransactionTimeoutMillis)
			fenced = fence
			return nt, code
		}, func(t *txnMeta) {
			if fenced {
				s.startCompletionLocked(t)
				return
			}
			r.ProducerID, r.ProducerEpoch = t.producerID, t.epoch
		})
		switch {
		case retry:
			continue
		case code == 0 && fenced:
			return kerr.ConcurrentTransactions.Code
		default:
			return code
		}
	}
	return kerr.ConcurrentTransactions.Code
}

func producerIDErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// epochExhausted is Kafka's isEpochExhausted: the last epoch is kept for
// fencing, so rotation happens one early.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// needsNewProducerID reports whether InitProducerId for t will allocate.
func needsNewProducerID(t *txnMeta, expected *producerIDAndEpoch) bool {
	if t == nil {
		return true
	}
	switch t.state {
	case StateEmpty, StateCompleteCommit, StateCompleteAbort:
		return epochExhausted(t.epoch) && (expected == nil || expected.epoch == t.epoch)
	}
	return false
}

// decideInitLocked is Kafka's prepareInitProducerIdTransit: the new state,
// or a code; fence means an ongoing transaction is being aborted first.
func (s *shard) decideInitLocked(id string, t *txnMeta, expected *producerIDAndEpoch, newPID int64, timeoutMs int32) (nt *txnMeta, code int16, fence bool) {
	now := s.c.cfg.Now().UnixMilli()
	if t == nil {
		// A new id starts at epoch -1 and is bumped to 0 below.
		t = &txnMeta{id: id, producerID: newPID, prevProducerID: -1, nextProducerID: -1, epoch: -1, lastEpoch: -1,
			state: StateEmpty, partitions: map[TopicPartition]struct{}{}, startMs: -1}
	}
	if s.mu.completing[id] {
		return nil, kerr.ConcurrentTransactions.Code, false
	}
	if expected != nil {
		// Kafka's isValidProducerId: a fresh id, the current producer id, or
		// a retry after a rotation the client never heard of.
		valid := t.epoch == -1 || expected.id == t.producerID ||
			(expected.id == t.prevProducerID && epochExhausted(expected.epoch))
		if !valid {
			return nil, kerr.ProducerFenced.Code, false
		}
	}
	switch t.state {
	case StatePrepareCommit, StatePrepareAbort:
		return nil, kerr.ConcurrentTransactions.Code, false
	case StateOngoing:
		return s.fenceLocked(t), 0, true
	}
	nt = t.clone()
	nt.state, nt.partitions, nt.startMs, nt.updateMs, nt.timeoutMs = StateEmpty, map[TopicPartition]struct{}{}, -1, now, timeoutMs
	switch {
	case epochExhausted(t.epoch) && (expected == nil || expected.epoch == t.epoch):
		nt.prevProducerID, nt.producerID, nt.epoch, nt.lastEpoch = t.producerID, newPID, 0, -1
		if expected != nil {
			nt.lastEpoch = t.epoch
		}
	case expected == nil:
		nt.epoch, nt.lastEpoch = t.epoch+1, -1
	case t.epoch == -1 || expected.epoch == t.epoch:
		nt.epoch, nt.lastEpoch = t.epoch+1, t.epoch
	case expected.epoch == t.lastEpoch:
		// A retry of a bump whose answer was lost: same epoch again.
	default:
		return nil, kerr.ProducerFenced.Code, false
	}
	return nt, 0, false
}
