package replica

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
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
	epoch   int16
	batches []batchMeta // oldest first, at most maxCachedBatches
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastSeq
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
	for i := range e.batches {
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

// update records an appended batch.
func (s *producerState) update(h record.Header, firstOffset int64) {
	e := s.producers[h.ProducerID]
	if e == nil || h.ProducerEpoch > e.epoch {
		e = &producerEntry{epoch: h.ProducerEpoch}
		s.producers[h.ProducerID] = e
	}
	m := batchMeta{
		firstSeq:    h.BaseSequence,
		lastSeq:     h.LastSequence(),
		firstOffset: firstOffset,
		lastOffset:  firstOffset + int64(h.LastOffsetDelta),
		timestamp:   h.MaxTimestamp,
	}
	if len(e.batches) == maxCachedBatches {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:maxCachedBatches-1]
	}
	e.batches = append(e.batches, m)
}

// inSequence reports whether next directly follows last, sequences wrapping
// from MaxInt32 to 0.
func inSequence(last, next int32) bool {
	if last == 0x7fffffff {
		return next == 0
	}
	return next == last+1
}
