package replica

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
)

func batch(pid int64, epoch int16, seq, n int32) record.Header {
	return record.Header{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1, NumRecords: n}
}

func TestProducerStateSequences(t *testing.T) {
	s := newProducerState()
	steps := []struct {
		name    string
		h       record.Header
		offset  int64 // where an accepted batch is appended
		wantErr error
		wantDup int64 // first offset of the duplicated batch, or -1
	}{
		{"new producer, any sequence", batch(7, 0, 5, 3), 0, nil, -1},
		{"next in sequence", batch(7, 0, 8, 2), 3, nil, -1},
		{"duplicate of the first batch", batch(7, 0, 5, 3), 0, nil, 0},
		{"duplicate of the last batch", batch(7, 0, 8, 2), 0, nil, 3},
		{"gap", batch(7, 0, 11, 1), 0, kerr.OutOfOrderSequenceNumber, -1},
		{"older epoch", batch(7, -1, 10, 1), 0, kerr.InvalidProducerEpoch, -1},
		{"new epoch must start at 0", batch(7, 1, 10, 1), 0, kerr.OutOfOrderSequenceNumber, -1},
		{"new epoch from 0", batch(7, 1, 0, 1), 5, nil, -1},
		{"old epoch now fenced", batch(7, 0, 10, 1), 0, kerr.InvalidProducerEpoch, -1},
		{"another producer is independent", batch(8, 0, 0, 1), 6, nil, -1},
	}
	for _, st := range steps {
		dup, err := s.check(st.h)
		if !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: err %v, want %v", st.name, err, st.wantErr)
		}
		switch {
		case st.wantDup >= 0 && (dup == nil || dup.firstOffset != st.wantDup):
			t.Fatalf("%s: duplicate %+v, want first offset %d", st.name, dup, st.wantDup)
		case st.wantDup < 0 && dup != nil:
			t.Fatalf("%s: unexpected duplicate %+v", st.name, dup)
		}
		if err == nil && dup == nil {
			s.update(st.h, st.offset, 0)
		}
	}
}

func TestProducerStateKeepsFiveBatches(t *testing.T) {
	s := newProducerState()
	for i := int32(0); i < 7; i++ {
		h := batch(1, 0, i, 1)
		if dup, err := s.check(h); err != nil || dup != nil {
			t.Fatalf("batch %d: %v %v", i, dup, err)
		}
		s.update(h, int64(i), 0)
	}
	// The two oldest fell out of the cache: resending one is out of order,
	// as in Kafka.
	if _, err := s.check(batch(1, 0, 1, 1)); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("evicted batch: %v", err)
	}
	if dup, err := s.check(batch(1, 0, 2, 1)); err != nil || dup == nil || dup.firstOffset != 2 {
		t.Fatalf("cached batch: %+v %v", dup, err)
	}
}

func TestSequenceWraps(t *testing.T) {
	if !inSequence(0x7fffffff, 0) || inSequence(0x7fffffff, 1) {
		t.Fatal("MaxInt32 must be followed by 0 and only 0")
	}
	if inSequence(5, 7) || !inSequence(5, 6) || !inSequence(-1, 0) {
		t.Fatal("plain sequences")
	}
	h := batch(1, 0, 0x7ffffffe, 3) // 0x7ffffffe, 0x7fffffff, 0
	if h.LastSequence() != 0 {
		t.Fatalf("last sequence %d, want 0", h.LastSequence())
	}
}
