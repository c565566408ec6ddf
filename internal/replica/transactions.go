package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// Transactions in the data path, as Kafka's ProducerStateManager and
// UnifiedLog handle them:
//
//   - The first transactional batch of a producer opens its transaction at
//     that batch's base offset; a control batch (marker) that the
//     transaction coordinator writes closes it. Until then the partition's
//     last stable offset (LSO) stays at the oldest open transaction's first
//     offset, and read_committed consumers read no further.
//   - An abort marker also adds an entry to the .txnindex of the segment
//     it lands in, so a read_committed fetch can tell the consumer which
//     producers' records to drop (Fetch's aborted_transactions).
//   - Open transactions and coordinator epochs live in the producer state
//     and its snapshots; on start-up the replay of batch headers reopens
//     transactions and re-adds abort entries a crash lost.

// AbortedTxn is one aborted transaction of a partition, as a read_committed
// fetch response lists it: the consumer drops the producer's records from
// FirstOffset up to the abort marker.
type AbortedTxn struct{ ProducerID, FirstOffset int64 }

// Control record types (Kafka's ControlRecordType).
const (
	controlAbort  int16 = 0
	controlCommit int16 = 1
)

// VerificationGuard ties a transactional append to the verification
// that allowed it (Kafka's VerificationGuard, KIP-890 part 1). Zero is no
// guard.
type VerificationGuard uint64

// StartTxnVerification is Kafka's maybeStartTransactionVerification: a
// transactional batch of producerID at epoch that would open a transaction
// on this partition (none is open at that epoch) may only be appended once
// the transaction coordinator confirms, or adds, the partition in the
// producer's transaction. It then returns a fresh guard for
// AppendParsedVerified, and needed true; a marker of the producer that
// ends the transaction before the append voids the guard (see
// producerState.voidVerification), so a write that arrives after its
// transaction ended cannot open a hanging one.
func (p *Partition) StartTxnVerification(producerID int64, epoch int16) (guard VerificationGuard, needed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.producers.hasOngoingTxn(producerID, epoch) {
		return 0, false
	}
	p.mu.producers.lastGuard++
	guard = p.mu.producers.lastGuard
	p.mu.producers.verifying[producerID] = verification{guard, epoch}
	return guard, true
}

// EndTxnVerification drops the guard of a verification that failed.
func (p *Partition) EndTxnVerification(producerID int64, guard VerificationGuard) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.producers.verifying[producerID].guard == guard {
		delete(p.mu.producers.verifying, producerID)
	}
}

// AppendParsedVerified is AppendParsed with transaction verification on
// (transaction.partition.verification.enable): a transactional batch that
// would open a transaction is refused with INVALID_TXN_STATE unless guard
// is the producer's current one from StartTxnVerification.
func (p *Partition) AppendParsedVerified(batch []byte, h record.Header, guard VerificationGuard) (AppendResult, error) {
	return p.appendParsed(batch, h, &guard)
}

// AppendAsCoordinator appends a batch that a coordinator writes on a
// producer's behalf (TxnOffsetCommit into __consumer_offsets). Its base
// sequence is -1, so sequences are not checked, but an epoch older than
// the producer's is refused with INVALID_PRODUCER_EPOCH; a transactional
// batch opens or extends the producer's transaction as Append does. When
// ctx carries a verification guard (WithVerificationGuard), a
// transactional batch that would open a transaction is appended only
// under it, as AppendParsedVerified.
func (p *Partition) AppendAsCoordinator(ctx context.Context, batch []byte) (AppendResult, error) {
	h, sum, err := record.ValidateSummary(batch)
	if err == nil {
		err = checkCoordinatorBatch(h)
	}
	if err != nil {
		return AppendResult{}, batchError(err)
	}
	var guard *VerificationGuard
	if g, ok := ctx.Value(verificationKey{}).(VerificationGuard); ok {
		guard = &g
	}
	p.mu.Lock()
	res, syncUpTo, err := p.appendAsCoordinatorLocked(batch, h, sum, guard)
	p.mu.Unlock()
	return p.synced(res, syncUpTo, err)
}

type verificationKey struct{}

// WithVerificationGuard returns ctx carrying guard, from
// StartTxnVerification, for the AppendAsCoordinator of the write it
// verified: a group coordinator's TxnOffsetCommit append, which is made
// several calls below the broker that verified it.
func WithVerificationGuard(ctx context.Context, guard VerificationGuard) context.Context {
	return context.WithValue(ctx, verificationKey{}, guard)
}

func (p *Partition) appendAsCoordinatorLocked(batch []byte, h record.Header, sum record.Summary, guard *VerificationGuard) (AppendResult, int64, error) {
	if !p.leadingLocked() {
		return AppendResult{}, 0, kerr.NotLeaderForPartition
	}
	verified, err := p.checkVerificationLocked(h, guard)
	if err != nil {
		return AppendResult{}, 0, err
	}
	if h.Idempotent() {
		if e := p.mu.producers.producers[h.ProducerID]; e != nil {
			if h.ProducerEpoch < e.epoch {
				return AppendResult{}, 0, fmt.Errorf("%w: epoch %d is older than producer %d's epoch %d", kerr.InvalidProducerEpoch, h.ProducerEpoch, h.ProducerID, e.epoch)
			}
			if e.txnFirstOffset >= 0 && !h.Transactional() {
				return AppendResult{}, 0, kerr.InvalidTxnState
			}
		}
	}
	res, syncUpTo, err := p.appendCheckedLocked(batch, h, sum, false)
	if err == nil && verified {
		delete(p.mu.producers.verifying, h.ProducerID)
	}
	return res, syncUpTo, err
}

// checkVerificationLocked checks a transactional batch that would open a
// transaction against guard (nil: verification off): it may go on only
// under the producer's current verification (verified), else
// INVALID_TXN_STATE.
func (p *Partition) checkVerificationLocked(h record.Header, guard *VerificationGuard) (verified bool, err error) {
	if guard == nil || !h.Transactional() || p.mu.producers.hasOngoingTxn(h.ProducerID, h.ProducerEpoch) {
		return false, nil
	}
	if v, ok := p.mu.producers.verifying[h.ProducerID]; !ok || *guard == 0 || v.guard != *guard || v.epoch != h.ProducerEpoch {
		return false, fmt.Errorf("%w: partition %s-%d was not added to the transaction of producer %d", kerr.InvalidTxnState, p.Topic, p.Index, h.ProducerID)
	}
	return true, nil
}

// checkCoordinatorBatch is record.CheckProduce without the sequence rule.
func checkCoordinatorBatch(h record.Header) error {
	if h.BaseOffset != 0 {
		return fmt.Errorf("%w: base offset %d, want 0", record.ErrInvalid, h.BaseOffset)
	}
	if h.Control() {
		return fmt.Errorf("%w: control batches are written with WriteTxnMarker", record.ErrInvalid)
	}
	if h.Transactional() && !h.Idempotent() {
		return fmt.Errorf("%w: transactional batch without a producer id", record.ErrInvalid)
	}
	return nil
}

// WriteTxnMarker appends a transaction marker for producerID: a control
// batch of one record whose key is version 0 and the type (0 abort, 1
// commit) and whose value is version 0 and coordinatorEpoch. It ends the
// producer's open transaction; an abort is recorded in the segment's
// .txnindex. A marker for a producer without an open transaction is still
// written, as Kafka does. An epoch older than the producer's is
// INVALID_PRODUCER_EPOCH, an older coordinator epoch
// TRANSACTION_COORDINATOR_FENCED; transactionVersion is the client's (see
// producerState.checkMarker). It returns the marker's offset.
func (p *Partition) WriteTxnMarker(producerID int64, epoch int16, coordinatorEpoch int32, commit bool, transactionVersion int16) (offset int64, err error) {
	if producerID < 0 {
		return -1, fmt.Errorf("%w: marker for producer id %d", kerr.InvalidRecord, producerID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leadingLocked() {
		return -1, kerr.NotLeaderForPartition
	}
	if err := p.mu.producers.checkMarker(producerID, epoch, coordinatorEpoch, transactionVersion); err != nil {
		return -1, err
	}
	now := p.now().UnixMilli()
	typ := controlAbort
	if commit {
		typ = controlCommit
	}
	var key [4]byte
	binary.BigEndian.PutUint16(key[2:], uint16(typ))
	var value [6]byte
	binary.BigEndian.PutUint32(value[2:], uint32(coordinatorEpoch))
	batch := record.Build(record.BuildOptions{
		PartitionLeaderEpoch: p.mu.leaderEpoch,
		Producer:             &record.ProducerInfo{ID: producerID, Epoch: epoch, BaseSequence: -1},
		Transactional:        true,
		Control:              true,
	}, []record.Record{{Timestamp: now, Key: key[:], Value: value[:]}})
	base, err := p.Log().Append(batch)
	if err != nil {
		return -1, fmt.Errorf("append transaction marker to %s-%d: %w", p.Topic, p.Index, err)
	}
	p.afterAppendLocked(base)
	t := p.mu.producers.endTxn(producerID, epoch, coordinatorEpoch, base, now)
	p.mu.producers.voidVerification(producerID, epoch, transactionVersion)
	if !commit {
		if err := p.Log().AppendAbortedTxn(t); err != nil {
			// The marker is in the log; the entry comes back on the
			// next start, when the marker is replayed.
			p.logger.Error("recording aborted transaction in .txnindex", "producer.id", producerID, "offset", base, "err", err)
		}
	}
	p.advanceLocked()
	return base, nil
}

// parseMarker reads the type and coordinator epoch of a control batch.
func parseMarker(batch []byte) (commit bool, coordinatorEpoch int32, err error) {
	if batch == nil {
		return false, 0, errors.New("control batch not read")
	}
	recs, err := record.Records(batch)
	if err != nil {
		return false, 0, err
	}
	if len(recs) == 0 || len(recs[0].Key) < 4 {
		return false, 0, fmt.Errorf("%w: control record without a key", record.ErrCorrupt)
	}
	switch typ := int16(binary.BigEndian.Uint16(recs[0].Key[2:])); typ {
	case controlAbort, controlCommit:
		commit = typ == controlCommit
	default:
		return false, 0, fmt.Errorf("%w: control record type %d is not a transaction marker", record.ErrCorrupt, typ)
	}
	coordinatorEpoch = -1
	if v := recs[0].Value; len(v) >= 6 {
		coordinatorEpoch = int32(binary.BigEndian.Uint32(v[2:]))
	}
	return commit, coordinatorEpoch, nil
}

// ReadIsolated is Read for a fetch with an isolation level. read_committed
// reads stop at the last stable offset instead of the high watermark, and
// the aborted transactions overlapping the returned batches are returned
// with them (Kafka's collectAbortedTransactions: those whose marker is at or
// after offset and whose first offset is below the end of the data).
func (p *Partition) ReadIsolated(offset int64, maxBytes int, minOne bool, readCommitted bool) ([]byte, Snapshot, []AbortedTxn, error) {
	if !readCommitted {
		b, s, err := p.Read(offset, maxBytes, minOne)
		return b, s, nil, err
	}
	b, s, err := p.read(offset, maxBytes, minOne, true)
	if err != nil || len(b) == 0 {
		return b, s, nil, err
	}
	upper := offset
	for rest := b; len(rest) >= record.HeaderSize; {
		h, err := record.ParseHeader(rest)
		if err != nil || h.Size() > len(rest) {
			break
		}
		upper = h.NextOffset()
		rest = rest[h.Size():]
	}
	var found []storage.AbortedTxn
	err = p.onLog(func(l *storage.Log) (err error) {
		found, err = l.CollectAbortedTxns(offset, upper)
		return err
	})
	if err != nil {
		return nil, s, nil, err
	}
	var aborted []AbortedTxn
	if len(found) > 0 {
		aborted = make([]AbortedTxn, len(found))
		for i, t := range found {
			aborted[i] = AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset}
		}
	}
	return b, s, aborted, nil
}

// ReadIsolatedSlice is ReadIsolated with the batches left in their
// segment file (storage.Log.ReadSlice), for the network to send with
// sendfile: nil when ReadIsolated would return no bytes. The caller must
// Release a non-nil slice.
func (p *Partition) ReadIsolatedSlice(offset int64, maxBytes int, minOne bool, readCommitted bool) (*storage.FileSlice, Snapshot, []AbortedTxn, error) {
	s := p.Offsets()
	if offset < s.LogStartOffset || offset > s.LogEndOffset {
		return nil, s, nil, kerr.OffsetOutOfRange
	}
	bound := s.HighWatermark
	if readCommitted {
		bound = s.LastStableOffset
	}
	if offset >= bound || (!minOne && maxBytes <= 0) {
		return nil, s, nil, nil
	}
	var slice *storage.FileSlice
	err := p.onLog(func(l *storage.Log) (err error) {
		slice, err = l.ReadSlice(offset, maxBytes, bound)
		return err
	})
	if errors.Is(err, storage.ErrOffsetOutOfRange) {
		return nil, s, nil, kerr.OffsetOutOfRange
	}
	if err != nil || slice == nil {
		return nil, s, nil, err
	}
	if !minOne && slice.Len() > maxBytes {
		slice.Release() // the log returned one batch larger than allowed
		return nil, s, nil, nil
	}
	if !readCommitted {
		return slice, s, nil, nil
	}
	var found []storage.AbortedTxn
	err = p.onLog(func(l *storage.Log) (err error) {
		found, err = l.CollectAbortedTxns(offset, slice.UpperOffset())
		return err
	})
	if err != nil {
		slice.Release()
		return nil, s, nil, err
	}
	var aborted []AbortedTxn
	if len(found) > 0 {
		aborted = make([]AbortedTxn, len(found))
		for i, t := range found {
			aborted[i] = AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset}
		}
	}
	return slice, s, aborted, nil
}

// lastStableOffsetLocked is min(first offset of the open transactions,
// high watermark).
func (p *Partition) lastStableOffsetLocked() int64 {
	hw := p.mu.highWatermark
	if f := p.mu.producers.firstUnstableOffset(); f >= 0 && f < hw {
		return f
	}
	return hw
}
