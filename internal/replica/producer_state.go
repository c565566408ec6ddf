package replica

import (
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
}

func newProducerState() producerState {
	return producerState{producers: make(map[int64]*producerEntry)}
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
	e := s.producers[h.ProducerID]
	if e == nil {
		e = &producerEntry{epoch: h.ProducerEpoch, coordinatorEpoch: -1}
		s.producers[h.ProducerID] = e
	} else if h.ProducerEpoch > e.epoch {
		*e = producerEntry{epoch: h.ProducerEpoch, coordinatorEpoch: -1}
	}
	e.lastTimestamp = timestamp
	e.push(batchMeta{
		firstSeq:    h.BaseSequence,
		lastSeq:     h.LastSequence(),
		firstOffset: firstOffset,
		lastOffset:  firstOffset + int64(h.LastOffsetDelta),
		timestamp:   timestamp,
	})
}

// replay applies a batch read back from the log.
func (s *producerState) replay(h record.Header) {
	if !h.Idempotent() || h.Control() {
		// Control batches (transaction markers) carry no sequences.
		return
	}
	s.update(h, h.BaseOffset, h.MaxTimestamp)
}

// removeExpired drops producers whose last batch is older than
// expirationMs at nowMs (Kafka's removeExpiredProducers).
func (s *producerState) removeExpired(nowMs, expirationMs int64) {
	for id, e := range s.producers {
		if nowMs-e.lastTimestamp >= expirationMs {
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
			CurrentTxnFirstOffset: -1,
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
	for _, se := range entries {
		if nowMs-se.Timestamp >= expirationMs {
			continue
		}
		e := &producerEntry{epoch: se.Epoch, lastTimestamp: se.Timestamp, coordinatorEpoch: se.CoordinatorEpoch}
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
