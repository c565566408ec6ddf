package replica

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// maxCachedBatches is how many recent batches per producer are remembered for
// duplicate detection; it matches the most in-flight requests an idempotent
// producer may have (max.in.flight.requests.per.connection <= 5).
const maxCachedBatches = 5

// batchMeta is what duplicate detection remembers of an appended batch.
type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64
}

// producerEntry is the state of one producer id on one partition.
type producerEntry struct {
	epoch int16
	// lastTimestamp is the max timestamp of the producer's last batch;
	// producer.id.expiration.ms counts from it, as in Kafka.
	lastTimestamp    int64
	coordinatorEpoch int32
	// txnFirstOffset is the first offset of the producer's ongoing
	// transaction, -1 when there is none (Kafka's currentTxnFirstOffset).
	txnFirstOffset int64
	// batches holds the last n batches, oldest first. A fixed array keeps
	// the per-batch update free of allocations.
	batches [maxCachedBatches]batchMeta
	n       int
}

func (e *producerEntry) lastSeq() int32 {
	if e.n == 0 {
		return -1
	}
	return e.batches[e.n-1].lastSeq
}

func (e *producerEntry) push(m batchMeta) {
	if e.n == maxCachedBatches {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = m
	e.n++
}

// producerState tracks producers of one partition. The partition's lock
// guards it.
type producerState struct {
	producers map[int64]*producerEntry
	// ongoing maps the producers with an open transaction to its first
	// offset: the last stable offset is the smallest. Transactions open
	// at once are few, so a scan of it is cheap.
	ongoing map[int64]int64
	// verifying holds, per producer, the guard of the transaction
	// verification in flight (see Partition.StartTxnVerification).
	verifying map[int64]verification
	lastGuard VerificationGuard
}

func newProducerState() producerState {
	return producerState{producers: make(map[int64]*producerEntry), ongoing: make(map[int64]int64),
		verifying: make(map[int64]verification)}
}

// verification is a transaction verification in flight: its guard, and
// the producer epoch of the write it is for.
type verification struct {
	guard VerificationGuard
	epoch int16
}

// voidVerification drops a verification that a marker of the producer at
// epoch, for a client of transactionVersion, overtook: the write it was
// for belongs to the transaction the marker ended. At transaction version
// 2 the marker carries the bumped epoch, which the next transaction's
// writes use, and their verification (which the coordinator answers only
// once the markers are written) stays valid.
func (s *producerState) voidVerification(id int64, epoch, transactionVersion int16) {
	v, ok := s.verifying[id]
	if ok && (v.epoch < epoch || (v.epoch == epoch && transactionVersion < 2)) {
		delete(s.verifying, id)
	}
}

// hasOngoingTxn reports whether the producer has a transaction open on
// the partition at epoch (Kafka's hasOngoingTransaction).
func (s *producerState) hasOngoingTxn(id int64, epoch int16) bool {
	e := s.producers[id]
	return e != nil && e.txnFirstOffset >= 0 && e.epoch == epoch
}

// check decides whether an idempotent batch may be appended. It returns the
// batch it duplicates, if any; otherwise an error code or nil to append.
func (s *producerState) check(h record.Header) (*batchMeta, error) {
	e := s.producers[h.ProducerID]
	if e == nil {
		// Unknown producer: any sequence is accepted, as Kafka does after a
		// producer's state expired or was removed with its segments.
		return nil, nil
	}
	if h.ProducerEpoch < e.epoch {
		return nil, kerr.InvalidProducerEpoch
	}
	if e.txnFirstOffset >= 0 && !h.Transactional() {
		// Kafka: "Expected transactional write from producer".
		return nil, kerr.InvalidTxnState
	}
	if h.ProducerEpoch > e.epoch {
		if h.BaseSequence != 0 {
			return nil, kerr.OutOfOrderSequenceNumber
		}
		return nil, nil
	}
	for i := range e.batches[:e.n] {
		b := &e.batches[i]
		if b.firstSeq == h.BaseSequence && b.lastSeq == h.LastSequence() {
			return b, nil
		}
	}
	if !inSequence(e.lastSeq(), h.BaseSequence) {
		return nil, kerr.OutOfOrderSequenceNumber
	}
	return nil, nil
}

// update records a batch appended at firstOffset whose max timestamp (after
// LogAppendTime, if any) is timestamp. Replay from the log uses it too, so
// a restarted partition rebuilds exactly what appends built.
func (s *producerState) update(h record.Header, firstOffset, timestamp int64) {
	e := s.entryForEpoch(h.ProducerID, h.ProducerEpoch)
	e.lastTimestamp = timestamp
	if h.Transactional() && e.txnFirstOffset < 0 {
		e.txnFirstOffset = firstOffset
		s.ongoing[h.ProducerID] = firstOffset
	}
	if h.BaseSequence < 0 {
		// Written by a coordinator for the producer: no sequence.
		return
	}
	e.push(batchMeta{
		firstSeq:    h.BaseSequence,
		lastSeq:     h.LastSequence(),
		firstOffset: firstOffset,
		lastOffset:  firstOffset + int64(h.LastOffsetDelta),
		timestamp:   timestamp,
	})
}

// entryForEpoch returns the producer's entry, creating it, and starting
// afresh (no cached batches) when epoch is newer than the entry's. An open
// transaction and the coordinator epoch survive the bump, as in Kafka: only
// a marker ends a transaction.
func (s *producerState) entryForEpoch(id int64, epoch int16) *producerEntry {
	e := s.producers[id]
	if e == nil {
		e = &producerEntry{epoch: epoch, coordinatorEpoch: -1, txnFirstOffset: -1}
		s.producers[id] = e
	} else if epoch > e.epoch {
		*e = producerEntry{epoch: epoch, coordinatorEpoch: e.coordinatorEpoch, txnFirstOffset: e.txnFirstOffset}
	}
	return e
}

// replay applies a batch read back from the log; control holds the whole
// batch when it is a transaction marker. An abort marker returns the
// .txnindex entry it implies, for the caller to restore if it is missing.
func (s *producerState) replay(h record.Header, control []byte) (*storage.AbortedTxn, error) {
	if !h.Idempotent() {
		return nil, nil
	}
	if !h.Control() {
		s.update(h, h.BaseOffset, h.MaxTimestamp)
		return nil, nil
	}
	commit, coordinatorEpoch, err := parseMarker(control)
	if err != nil {
		return nil, fmt.Errorf("transaction marker at offset %d: %w", h.BaseOffset, err)
	}
	t := s.endTxn(h.ProducerID, h.ProducerEpoch, coordinatorEpoch, h.BaseOffset, h.MaxTimestamp)
	if commit {
		return nil, nil
	}
	return &t, nil
}

// checkMarker is Kafka's check of a transaction marker against the
// producer's state: an older producer epoch is INVALID_PRODUCER_EPOCH and
// an older coordinator epoch means a zombie coordinator wrote it. At
// transaction version 2 the marker carries the epoch EndTxn bumped to, so
// one at the producer's current epoch while a transaction is open would end
// the next transaction, not the one it was written for: refused too.
// (Kafka refuses any such marker; one at the current epoch with no open
// transaction is a coordinator's retry of a marker already written, which
// is written again harmlessly, so that a retried marker on
// __consumer_offsets still completes the group's pending offsets.)
func (s *producerState) checkMarker(id int64, epoch int16, coordinatorEpoch int32, transactionVersion int16) error {
	e := s.producers[id]
	if e == nil {
		return nil
	}
	if epoch < e.epoch || (transactionVersion >= 2 && epoch == e.epoch && e.txnFirstOffset >= 0) {
		return fmt.Errorf("%w: marker epoch %d is older than producer %d's epoch %d", kerr.InvalidProducerEpoch, epoch, id, e.epoch)
	}
	if coordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: coordinator epoch %d is older than %d for producer %d", kerr.TransactionCoordinatorFenced, coordinatorEpoch, e.coordinatorEpoch, id)
	}
	return nil
}

// endTxn applies a marker at offset: the producer's transaction ends. The
// result is the transaction as the .txnindex records it should it have
// aborted. As in Kafka, a marker without an open transaction yields a
// transaction of the marker alone.
func (s *producerState) endTxn(id int64, epoch int16, coordinatorEpoch int32, offset, timestamp int64) storage.AbortedTxn {
	e := s.entryForEpoch(id, epoch)
	first := e.txnFirstOffset
	if first < 0 {
		first = offset
	}
	t := storage.AbortedTxn{ProducerID: id, FirstOffset: first, LastOffset: offset, LastStableOffset: offset + 1}
	for pid, f := range s.ongoing {
		if pid != id && f < t.LastStableOffset {
			t.LastStableOffset = f
		}
	}
	delete(s.ongoing, id)
	e.txnFirstOffset = -1
	e.coordinatorEpoch = coordinatorEpoch
	e.lastTimestamp = timestamp
	return t
}

// firstUnstableOffset is the first offset of the oldest open transaction,
// -1 when none is open.
func (s *producerState) firstUnstableOffset() int64 {
	first := int64(-1)
	for _, f := range s.ongoing {
		if first < 0 || f < first {
			first = f
		}
	}
	return first
}

// removeExpired drops producers whose last batch is older than
// expirationMs at nowMs (Kafka's removeExpiredProducers).
func (s *producerState) removeExpired(nowMs, expirationMs int64) {
	for id, e := range s.producers {
		// A producer in a transaction stays until a marker ends it
		// (Kafka's isProducerExpired).
		if e.txnFirstOffset < 0 && nowMs-e.lastTimestamp >= expirationMs {
			delete(s.producers, id)
		}
	}
}

// snapshot returns the state as snapshot entries, ordered by producer id.
// Like Kafka's, a snapshot keeps only each producer's last batch.
func (s *producerState) snapshot() []storage.ProducerSnapshotEntry {
	out := make([]storage.ProducerSnapshotEntry, 0, len(s.producers))
	for id, e := range s.producers {
		se := storage.ProducerSnapshotEntry{
			ProducerID:            id,
			Epoch:                 e.epoch,
			LastSequence:          -1,
			LastOffset:            -1,
			Timestamp:             e.lastTimestamp,
			CoordinatorEpoch:      e.coordinatorEpoch,
			CurrentTxnFirstOffset: e.txnFirstOffset,
		}
		if e.n > 0 {
			b := e.batches[e.n-1]
			se.LastSequence, se.LastOffset = b.lastSeq, b.lastOffset
			se.OffsetDelta = int32(b.lastOffset - b.firstOffset)
		}
		out = append(out, se)
	}
	slices.SortFunc(out, func(a, b storage.ProducerSnapshotEntry) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return out
}

// load replaces the state with a snapshot's, leaving out producers already
// expired at nowMs (Kafka's loadFromSnapshot).
func (s *producerState) load(entries []storage.ProducerSnapshotEntry, nowMs, expirationMs int64) {
	s.producers = make(map[int64]*producerEntry, len(entries))
	s.ongoing = make(map[int64]int64)
	for _, se := range entries {
		if se.CurrentTxnFirstOffset < 0 && nowMs-se.Timestamp >= expirationMs {
			continue
		}
		e := &producerEntry{epoch: se.Epoch, lastTimestamp: se.Timestamp, coordinatorEpoch: se.CoordinatorEpoch,
			txnFirstOffset: max(se.CurrentTxnFirstOffset, -1)}
		if e.txnFirstOffset >= 0 {
			s.ongoing[se.ProducerID] = e.txnFirstOffset
		}
		if se.LastOffset >= 0 {
			e.push(batchMeta{
				firstSeq:    decrementSequence(se.LastSequence, se.OffsetDelta),
				lastSeq:     se.LastSequence,
				firstOffset: se.LastOffset - int64(se.OffsetDelta),
				lastOffset:  se.LastOffset,
				timestamp:   se.Timestamp,
			})
		}
		s.producers[se.ProducerID] = e
	}
}

// ProducerInfo describes one active producer of a partition, as
// DescribeProducers reports it.
type ProducerInfo struct {
	ProducerID            int64
	Epoch                 int16
	LastSequence          int32
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64 // -1: no open transaction
}

func (s *producerState) describe() []ProducerInfo {
	out := make([]ProducerInfo, 0, len(s.producers))
	for _, se := range s.snapshot() {
		out = append(out, ProducerInfo{
			ProducerID:            se.ProducerID,
			Epoch:                 se.Epoch,
			LastSequence:          se.LastSequence,
			LastTimestamp:         se.Timestamp,
			CoordinatorEpoch:      se.CoordinatorEpoch,
			CurrentTxnStartOffset: se.CurrentTxnFirstOffset,
		})
	}
	return out
}

// inSequence reports whether next directly follows last, sequences wrapping
// from MaxInt32 to 0.
func inSequence(last, next int32) bool {
	if last == 0x7fffffff {
		return next == 0
	}
	return next == last+1
}

// decrementSequence is seq - n with sequences wrapping at MaxInt32.
func decrementSequence(seq, n int32) int32 {
	if seq < n {
		return 0x7fffffff - (n - seq) + 1
	}
	return seq - n
}
