package sharepartition

import (
	"fmt"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
)

// window returns a loaded partition at start with n available records.
func window(start int64, n int) *partition {
	p := &partition{}
	p.mu.loaded, p.mu.start = true, start
	p.mu.recs = make([]inflight, n)
	return p
}

func TestAcquireAckAdvance(t *testing.T) {
	now := time.Unix(1000, 0)
	p := window(10, 6)
	got := p.acquireLocked("a", 4, now.Add(time.Second))
	if fmt.Sprint(got) != "[{10 13 1}]" {
		t.Fatalf("acquired %v, want 10-13 at delivery 1", got)
	}
	if got := p.acquireLocked("b", 10, now.Add(time.Hour)); fmt.Sprint(got) != "[{14 15 1}]" {
		t.Fatalf("b acquired %v, want the rest", got)
	}
	// b cannot acknowledge a's records, and a failed batch changes nothing.
	if p.ackLocked("b", 12, 14, []int8{AckAccept}, 5, time.Second, now) {
		t.Fatal("b acknowledged a record a holds")
	}
	// a accepts 10, releases 11, rejects 12; 13 stays acquired.
	if !p.ackLocked("a", 10, 12, []int8{AckAccept, AckRelease, AckReject}, 5, time.Second, now) {
		t.Fatal("a's acknowledgement refused")
	}
	if p.mu.start != 11 {
		t.Fatalf("start offset %d, want 11 (10 accepted)", p.mu.start)
	}
	// 11 comes back with delivery count 2.
	if got := p.acquireLocked("b", 10, now.Add(time.Second)); fmt.Sprint(got) != "[{11 11 2}]" {
		t.Fatalf("redelivery %v, want 11 at delivery 2", got)
	}
	if !p.ackLocked("b", 11, 11, []int8{AckAccept}, 5, time.Second, now) {
		t.Fatal("b's accept refused")
	}
	if p.mu.start != 13 {
		t.Fatalf("start offset %d, want 13 (12 rejected is archived)", p.mu.start)
	}
	// 13's lock expires: available again; b accepts 14-15 meanwhile.
	p.expireLocked(now.Add(2*time.Second), 5)
	if !p.ackLocked("b", 14, 15, []int8{AckAccept}, 5, time.Second, now) {
		t.Fatal("b's accept of 14-15 refused")
	}
	if got := p.acquireLocked("b", 10, now.Add(3*time.Second)); fmt.Sprint(got) != "[{13 13 2}]" {
		t.Fatalf("after expiry %v, want 13 at delivery 2", got)
	}
	if !p.ackLocked("b", 13, 13, []int8{AckAccept}, 5, time.Second, now) || p.mu.start != 16 || len(p.mu.recs) != 0 {
		t.Fatalf("start %d with %d records in flight, want 16 and none", p.mu.start, len(p.mu.recs))
	}
}

func TestDeliveryCountLimitArchives(t *testing.T) {
	now := time.Unix(1000, 0)
	p := window(0, 1)
	for i := 1; i <= 3; i++ {
		got := p.acquireLocked("a", 1, now.Add(time.Second))
		if fmt.Sprint(got) != fmt.Sprintf("[{0 0 %d}]", i) {
			t.Fatalf("delivery %d: acquired %v", i, got)
		}
		p.ackLocked("a", 0, 0, []int8{AckRelease}, 3, time.Second, now)
	}
	if got := p.acquireLocked("a", 1, now.Add(time.Second)); len(got) != 0 || p.mu.start != 1 {
		t.Fatalf("after 3 deliveries with limit 3: acquired %v, start %d; want archived", got, p.mu.start)
	}
}

func TestBatchesPersistAcquiredAsAvailable(t *testing.T) {
	p := window(5, 4)
	p.acquireLocked("a", 2, time.Unix(2000, 0))
	p.ackLocked("a", 6, 6, []int8{AckAccept}, 5, time.Second, time.Unix(1000, 0))
	got := fmt.Sprint(p.batchesLocked())
	if want := "[{5 5 0 1} {6 6 2 1} {7 8 0 0}]"; got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}
}

func TestReleaseMember(t *testing.T) {
	p := window(0, 3)
	p.acquireLocked("a", 2, time.Unix(2000, 0))
	if !p.releaseMemberLocked("a", 5) {
		t.Fatal("nothing released")
	}
	if got := p.acquireLocked("b", 3, time.Unix(2000, 0)); fmt.Sprint(got) != "[{0 1 2} {2 2 1}]" {
		t.Fatalf("b acquired %v", got)
	}
}

// The window takes whole batches; a gap between batches, control records
// and (read_committed) an aborted transaction's records are archived, so
// only the others are ever acquired.
func TestExtendArchivesGapsControlAndAborted(t *testing.T) {
	batch := func(base int64, n int, pid int64, txn, control bool) []byte {
		var rs []record.Record
		for i := range n {
			rs = append(rs, record.Record{Value: []byte{byte(i)}})
		}
		opts := record.BuildOptions{BaseOffset: base, Transactional: txn, Control: control}
		if pid >= 0 {
			opts.Producer = &record.ProducerInfo{ID: pid}
		}
		return record.Build(opts, rs)
	}
	var log []byte
	log = append(log, batch(0, 2, -1, false, false)...) // 0-1
	log = append(log, batch(3, 2, 7, true, false)...)   // 2 is a gap; 3-4 aborted below
	log = append(log, batch(5, 1, 7, true, true)...)    // 5: the abort marker
	log = append(log, batch(6, 2, 8, true, false)...)   // 6-7 committed
	log = append(log, batch(8, 1, 8, true, true)...)    // 8: the commit marker
	p := window(0, 0)
	p.extendLocked(log, []replica.AbortedTxn{{ProducerID: 7, FirstOffset: 3}}, 100)
	if p.endLocked() != 9 {
		t.Fatalf("window ends at %d, want 9", p.endLocked())
	}
	got := p.acquireLocked("a", 100, time.Unix(2000, 0))
	if fmt.Sprint(got) != "[{0 1 1} {6 7 1}]" {
		t.Fatalf("acquired %v, want 0-1 and 6-7", got)
	}
	// The room limit stops the window.
	q := window(0, 0)
	q.extendLocked(log, nil, 3)
	if q.endLocked() != 3 {
		t.Fatalf("window with room 3 ends at %d", q.endLocked())
	}
}
