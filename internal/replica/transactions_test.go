package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// txnBatch is a transactional batch of n records from producer pid.
func txnBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: ts, Value: []byte("txn-value")}
	}
	return record.Build(record.BuildOptions{Producer: &record.ProducerInfo{ID: pid, Epoch: epoch, BaseSequence: seq}, Transactional: true}, recs)
}

func plainBatch(n int, ts int64) []byte {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: ts, Value: []byte("plain")}
	}
	return record.Build(record.BuildOptions{}, recs)
}

func mustMarker(t *testing.T, p *Partition, pid int64, epoch int16, coordinatorEpoch int32, commit bool) int64 {
	t.Helper()
	off, err := p.WriteTxnMarker(pid, epoch, coordinatorEpoch, commit, 0)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func wantOffsets(t *testing.T, p *Partition, hw, lso int64) {
	t.Helper()
	s := p.Offsets()
	if s.HighWatermark != hw || s.LastStableOffset != lso {
		t.Fatalf("high watermark %d, last stable offset %d; want %d, %d", s.HighWatermark, s.LastStableOffset, hw, lso)
	}
}

// batchOffsets lists the base offsets of the batches in b.
func batchOffsets(t *testing.T, b []byte) []int64 {
	t.Helper()
	bs, err := record.Batches(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, x := range bs {
		h, _ := record.ParseHeader(x)
		out = append(out, h.BaseOffset)
	}
	return out
}

func newTxnPartition(t *testing.T) (*Partition, int64) {
	now := time.Now()
	n := openNode(t, t.TempDir(), func() time.Time { return now })
	return n.p, now.UnixMilli()
}

// TestTransactionLastStableOffset follows the LSO through two producers'
// transactions, a commit and an abort, and checks the markers' bytes and
// the .txnindex entry.
func TestTransactionLastStableOffset(t *testing.T) {
	p, ts := newTxnPartition(t)
	if r := mustAppend(t, p, txnBatch(1, 0, 0, 3, ts)); r.BaseOffset != 0 {
		t.Fatalf("first txn batch at %d", r.BaseOffset)
	}
	wantOffsets(t, p, 3, 0)
	mustAppend(t, p, plainBatch(1, ts))        // 3
	mustAppend(t, p, txnBatch(2, 4, 0, 1, ts)) // 4
	mustAppend(t, p, txnBatch(1, 0, 3, 2, ts)) // 5-6: extends, does not move the start
	wantOffsets(t, p, 7, 0)
	if ap := p.ActiveProducers(); len(ap) != 2 || ap[0].CurrentTxnStartOffset != 0 || ap[1].CurrentTxnStartOffset != 4 || ap[0].LastSequence != 4 {
		t.Fatalf("active producers %+v", ap)
	}
	if off := mustMarker(t, p, 1, 0, 5, true); off != 7 {
		t.Fatalf("commit marker at %d, want 7", off)
	}
	wantOffsets(t, p, 8, 4)
	if off := mustMarker(t, p, 2, 4, 5, false); off != 8 {
		t.Fatalf("abort marker at %d, want 8", off)
	}
	wantOffsets(t, p, 9, 9)
	ap := p.ActiveProducers()
	if len(ap) != 2 || ap[0].CurrentTxnStartOffset != -1 || ap[0].CoordinatorEpoch != 5 || ap[1].CurrentTxnStartOffset != -1 || ap[1].Epoch != 4 {
		t.Fatalf("active producers after markers %+v", ap)
	}
	want := []storage.AbortedTxn{{ProducerID: 2, FirstOffset: 4, LastOffset: 8, LastStableOffset: 9}}
	if got := p.Log().AbortedTxns(); !slices.Equal(got, want) {
		t.Fatalf(".txnindex %+v, want %+v", got, want)
	}
	// The marker is a control batch of one record in Kafka's layout.
	b, _, err := p.Read(8, 1000, true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Control() || !h.Transactional() || h.ProducerID != 2 || h.ProducerEpoch != 4 || h.BaseSequence != -1 || h.NumRecords != 1 {
		t.Fatalf("marker header %+v", h)
	}
	recs, _ := record.Records(b)
	if string(recs[0].Key) != "\x00\x00\x00\x00" || string(recs[0].Value) != "\x00\x00\x00\x00\x00\x05" {
		t.Fatalf("abort marker key %x value %x", recs[0].Key, recs[0].Value)
	}
	// A producer in a transaction must keep writing transactionally.
	mustAppend(t, p, txnBatch(1, 0, 5, 1, ts)) // 9
	if _, err := p.Append(idemBatch(1, 0, 6, 1, ts)); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("non-transactional write in a transaction: %v, want INVALID_TXN_STATE", err)
	}
	// A transactional batch needs a producer id.
	if _, err := p.Append(record.Build(record.BuildOptions{Transactional: true}, []record.Record{{Timestamp: ts}})); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("transactional batch without producer: %v, want INVALID_RECORD", err)
	}
}

// TestReadIsolated interleaves two producers: producer 1 aborts while
// producer 2's transaction is still open.
func TestReadIsolated(t *testing.T) {
	p, ts := newTxnPartition(t)
	mustAppend(t, p, txnBatch(1, 0, 0, 1, ts)) // 0
	mustAppend(t, p, txnBatch(2, 0, 0, 1, ts)) // 1
	mustAppend(t, p, txnBatch(1, 0, 1, 1, ts)) // 2
	b, s, aborted, err := p.ReadIsolated(0, 1<<20, true, true)
	if err != nil || len(b) != 0 || aborted != nil || s.LastStableOffset != 0 {
		t.Fatalf("read_committed in a transaction: %d bytes, %+v, %v, %v", len(b), s, aborted, err)
	}
	b, _, aborted, err = p.ReadIsolated(0, 1<<20, true, false)
	if got := batchOffsets(t, b); err != nil || !slices.Equal(got, []int64{0, 1, 2}) || aborted != nil {
		t.Fatalf("read_uncommitted: batches %v, aborted %v, %v", got, aborted, err)
	}
	mustMarker(t, p, 1, 0, 0, false) // 3
	wantOffsets(t, p, 4, 1)
	want := []storage.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 1}}
	if got := p.Log().AbortedTxns(); !slices.Equal(got, want) {
		t.Fatalf(".txnindex %+v, want %+v", got, want)
	}
	b, _, aborted, err = p.ReadIsolated(0, 1<<20, true, true)
	if got := batchOffsets(t, b); err != nil || !slices.Equal(got, []int64{0}) || !slices.Equal(aborted, []AbortedTxn{{1, 0}}) {
		t.Fatalf("read_committed below producer 2: batches %v, aborted %v, %v", got, aborted, err)
	}
	mustMarker(t, p, 2, 0, 0, true)     // 4
	mustAppend(t, p, plainBatch(2, ts)) // 5-6
	wantOffsets(t, p, 7, 7)
	// One read stays in one segment (400 bytes here): 0..4 fit in the
	// first.
	b, _, aborted, err = p.ReadIsolated(0, 1<<20, true, true)
	if got := batchOffsets(t, b); err != nil || !slices.Equal(got, []int64{0, 1, 2, 3, 4}) || !slices.Equal(aborted, []AbortedTxn{{1, 0}}) {
		t.Fatalf("read_committed after commit: batches %v, aborted %v, %v", got, aborted, err)
	}
	// From the abort marker on, the abort still overlaps; after it, not.
	if _, _, aborted, _ = p.ReadIsolated(3, 1<<20, true, true); !slices.Equal(aborted, []AbortedTxn{{1, 0}}) {
		t.Fatalf("read_committed from 3: aborted %v", aborted)
	}
	b, _, aborted, _ = p.ReadIsolated(4, 1<<20, true, true)
	if got := batchOffsets(t, b); !slices.Equal(got, []int64{4}) || aborted != nil {
		t.Fatalf("read_committed from 4: batches %v, aborted %v", got, aborted)
	}
	if _, _, _, err := p.ReadIsolated(8, 1<<20, true, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read past the end: %v", err)
	}
}

func TestWriteTxnMarkerFencing(t *testing.T) {
	p, ts := newTxnPartition(t)
	mustAppend(t, p, txnBatch(1, 3, 0, 1, ts)) // 0
	if _, err := p.WriteTxnMarker(1, 2, 0, true, 0); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("marker with an old epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	mustMarker(t, p, 1, 3, 7, false) // 1
	if _, err := p.WriteTxnMarker(1, 3, 6, true, 0); !errors.Is(err, kerr.TransactionCoordinatorFenced) {
		t.Fatalf("marker from an old coordinator: %v, want TRANSACTION_COORDINATOR_FENCED", err)
	}
	// No open transaction: the marker is still written, and an abort is
	// indexed as a transaction of the marker alone, as in Kafka.
	if off := mustMarker(t, p, 1, 3, 7, false); off != 2 {
		t.Fatalf("second marker at %d", off)
	}
	// An unknown producer too; its epoch bump ends the old transaction.
	if off := mustMarker(t, p, 9, 0, 1, true); off != 3 {
		t.Fatalf("marker of unknown producer at %d", off)
	}
	want := []storage.AbortedTxn{at(1, 0, 1, 2), at(1, 2, 2, 3)}
	if got := p.Log().AbortedTxns(); !slices.Equal(got, want) {
		t.Fatalf(".txnindex %+v, want %+v", got, want)
	}
	wantOffsets(t, p, 4, 4)
}

func TestAppendAsCoordinator(t *testing.T) {
	p, ts := newTxnPartition(t)
	coord := func(epoch int16, txn bool) []byte {
		return record.Build(record.BuildOptions{Producer: &record.ProducerInfo{ID: 5, Epoch: epoch, BaseSequence: -1}, Transactional: txn},
			[]record.Record{{Timestamp: ts, Key: []byte("k"), Value: []byte("offset")}})
	}
	// A client may not send a producer batch without a sequence.
	if _, err := p.Append(coord(3, true)); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("client batch with sequence -1: %v, want INVALID_RECORD", err)
	}
	mustAppend(t, p, plainBatch(1, ts)) // 0
	r, err := p.AppendAsCoordinator(context.Background(), coord(3, true))
	if err != nil || r.BaseOffset != 1 {
		t.Fatalf("coordinator append: %+v, %v", r, err)
	}
	if r, err = p.AppendAsCoordinator(context.Background(), coord(3, true)); err != nil || r.BaseOffset != 2 {
		t.Fatalf("second coordinator append (no sequence, no dedup): %+v, %v", r, err)
	}
	wantOffsets(t, p, 3, 1)
	if _, err := p.AppendAsCoordinator(context.Background(), coord(2, true)); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("older epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if _, err := p.AppendAsCoordinator(context.Background(), coord(3, false)); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("non-transactional in a transaction: %v, want INVALID_TXN_STATE", err)
	}
	ap := p.ActiveProducers()
	if len(ap) != 1 || ap[0].ProducerID != 5 || ap[0].Epoch != 3 || ap[0].CurrentTxnStartOffset != 1 || ap[0].LastSequence != -1 {
		t.Fatalf("active producers %+v", ap)
	}
	mustMarker(t, p, 5, 3, 0, true) // 3
	wantOffsets(t, p, 4, 4)
}

// TestAppendAsCoordinatorVerified: a coordinator's transactional write
// (TxnOffsetCommit) carrying a verification guard opens a transaction only
// under that guard; one voided by a marker that landed after the
// verification is refused with INVALID_TXN_STATE and writes nothing.
func TestAppendAsCoordinatorVerified(t *testing.T) {
	p, ts := newTxnPartition(t)
	coord := func() []byte {
		return record.Build(record.BuildOptions{Producer: &record.ProducerInfo{ID: 5, Epoch: 3, BaseSequence: -1}, Transactional: true},
			[]record.Record{{Timestamp: ts, Key: []byte("k"), Value: []byte("offset")}})
	}
	g, needed := p.StartTxnVerification(5, 3)
	if !needed {
		t.Fatal("no verification needed for a new transaction")
	}
	if _, err := p.AppendAsCoordinator(WithVerificationGuard(context.Background(), g+1), coord()); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("write under another guard: %v, want INVALID_TXN_STATE", err)
	}
	if r, err := p.AppendAsCoordinator(WithVerificationGuard(context.Background(), g), coord()); err != nil || r.BaseOffset != 0 {
		t.Fatalf("verified write: %+v, %v", r, err)
	}
	mustMarker(t, p, 5, 3, 0, true) // 1
	// Verified for the next transaction, then a retried marker lands
	// before the write: the write would open a transaction nobody ends.
	g, _ = p.StartTxnVerification(5, 3)
	mustMarker(t, p, 5, 3, 0, true) // 2
	if _, err := p.AppendAsCoordinator(WithVerificationGuard(context.Background(), g), coord()); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("write verified before the marker: %v, want INVALID_TXN_STATE", err)
	}
	wantOffsets(t, p, 3, 3)
}

// TestTransactionsAfterRestart leaves producer 1's transaction open across
// several segments after producer 2 aborted one, and restarts cleanly and
// from a crash copy whose .txnindex files are lost.
func TestTransactionsAfterRestart(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	ts := now.UnixMilli()
	dir := t.TempDir()
	n := openNode(t, dir, clock)
	mustAppend(t, n.p, plainBatch(1, ts))        // 0
	mustAppend(t, n.p, txnBatch(2, 0, 0, 1, ts)) // 1
	mustAppend(t, n.p, txnBatch(1, 1, 0, 2, ts)) // 2-3
	mustMarker(t, n.p, 2, 0, 4, false)           // 4
	for i := 0; i < 6; i++ {
		mustAppend(t, n.p, txnBatch(1, 1, int32(2+2*i), 2, ts))
	}
	mustAppend(t, n.p, txnBatch(3, 0, 0, 1, ts)) // 17
	mustMarker(t, n.p, 3, 0, 4, false)           // 18
	wantOffsets(t, n.p, 19, 2)
	wantIndex := []storage.AbortedTxn{at(2, 1, 4, 2), at(3, 17, 18, 2)}
	if got := n.p.Log().AbortedTxns(); !slices.Equal(got, wantIndex) {
		t.Fatalf(".txnindex %+v, want %+v", got, wantIndex)
	}
	segs := n.p.Log().Segments()
	if len(segs) < 3 || segs[len(segs)-1].BaseOffset > 17 {
		t.Fatalf("segments %+v: want rolls, the last abort in the active one", segs)
	}
	crashed := t.TempDir()
	n.p.Log().Flush()
	waitSnapshots(t, n.p.Log(), segs[len(segs)-1].BaseOffset)
	copyDir(t, dir, crashed)
	if err := n.logs.Close(); err != nil {
		t.Fatal(err)
	}
	lost, _ := filepath.Glob(filepath.Join(crashed, "orders-0", "*.txnindex"))
	if len(lost) != 2 {
		t.Fatalf(".txnindex files %v, want one per segment with an abort", lost)
	}
	check := func(t *testing.T, n *testNode, wantIndex []storage.AbortedTxn) {
		wantOffsets(t, n.p, 19, 2)
		if got := n.p.Log().AbortedTxns(); !slices.Equal(got, wantIndex) {
			t.Fatalf(".txnindex %+v, want %+v", got, wantIndex)
		}
		ap := n.p.ActiveProducers()
		if len(ap) != 3 || ap[0].CurrentTxnStartOffset != 2 || ap[0].Epoch != 1 || ap[1].CoordinatorEpoch != 4 || ap[1].CurrentTxnStartOffset != -1 {
			t.Fatalf("active producers %+v", ap)
		}
		_, _, aborted, err := n.p.ReadIsolated(0, 1<<20, true, true)
		if err != nil || !slices.Equal(aborted, []AbortedTxn{{2, 1}}) {
			t.Fatalf("read_committed: aborted %v, %v", aborted, err)
		}
		mustMarker(t, n.p, 1, 1, 4, true)
		wantOffsets(t, n.p, 20, 20)
	}
	t.Run("clean", func(t *testing.T) {
		check(t, openNode(t, dir, clock), wantIndex)
	})
	t.Run("crash", func(t *testing.T) {
		// Lose the active segment's index, and cut a torn entry into the
		// other: the replay from the newest snapshot (at the last roll)
		// brings back the entry of the abort after it, as Kafka's
		// recovery rebuilds the index of the segments it recovers.
		slices.Sort(lost)
		if err := os.Remove(lost[1]); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(lost[0], os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{0, 0, 1, 2, 3})
		f.Close()
		check(t, openNode(t, crashed, clock), wantIndex)
		if st, err := os.Stat(lost[0]); err != nil || st.Size() != 34 {
			t.Fatalf("torn .txnindex not cut back to one entry: %v, %v", st.Size(), err)
		}
	})
}

func TestTransactionTruncate(t *testing.T) {
	p, ts := newTxnPartition(t)
	mustAppend(t, p, txnBatch(1, 0, 0, 1, ts)) // 0
	mustMarker(t, p, 1, 0, 0, false)           // 1
	mustAppend(t, p, txnBatch(1, 0, 1, 1, ts)) // 2
	mustMarker(t, p, 1, 0, 0, false)           // 3
	if err := p.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	// The second abort is gone; producer 1's transaction is open again.
	wantOffsets(t, p, 3, 2)
	if got := p.Log().AbortedTxns(); !slices.Equal(got, []storage.AbortedTxn{at(1, 0, 1, 2)}) {
		t.Fatalf(".txnindex after truncation %+v", got)
	}
}

// at is a .txnindex entry.
func at(pid, first, last, lso int64) storage.AbortedTxn {
	return storage.AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last, LastStableOffset: lso}
}

// TestOpenTransactionDoesNotExpire: producer.id.expiration.ms spares a
// producer whose transaction is open, as Kafka's isProducerExpired does.
func TestOpenTransactionDoesNotExpire(t *testing.T) {
	start := time.Now()
	now := start
	n := openNode(t, t.TempDir(), func() time.Time { return now })
	mustAppend(t, n.p, txnBatch(1, 0, 0, 1, start.UnixMilli()))
	mustAppend(t, n.p, idemBatch(2, 0, 0, 1, start.UnixMilli()))
	now = start.Add(2 * time.Hour)
	ap := n.p.ActiveProducers()
	if len(ap) != 1 || ap[0].ProducerID != 1 || ap[0].CurrentTxnStartOffset != 0 {
		t.Fatalf("producers %+v, want only 1 with its transaction", ap)
	}
	wantOffsets(t, n.p, 2, 0)
}

// At transaction version 2 a marker carries the epoch EndTxn bumped to: it
// must be above the epoch of the transaction it ends, and the bumped
// epoch then fences late writes of that transaction.
func TestWriteTxnMarkerV2(t *testing.T) {
	p, ts := newTxnPartition(t)
	mustAppend(t, p, txnBatch(1, 3, 0, 1, ts)) // 0: transaction at epoch 3
	if _, err := p.WriteTxnMarker(1, 3, 0, true, 2); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("v2 marker at the transaction's own epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if _, err := p.WriteTxnMarker(1, 4, 0, true, 2); err != nil { // 1
		t.Fatalf("v2 marker at the bumped epoch: %v", err)
	}
	wantOffsets(t, p, 2, 2)
	// A coordinator's retry of the same marker is written again.
	if _, err := p.WriteTxnMarker(1, 4, 0, true, 2); err != nil { // 2
		t.Fatalf("retried v2 marker: %v", err)
	}
	// A late write of the ended transaction is fenced by the bump.
	if _, err := p.Append(txnBatch(1, 3, 1, 1, ts)); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("late write at the old epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	// The next transaction starts at the bumped epoch from sequence 0.
	mustAppend(t, p, txnBatch(1, 4, 0, 1, ts)) // 3
	wantOffsets(t, p, 4, 3)
}

// KIP-890 part 1: with verification on, a transactional batch that would
// open a transaction needs a current guard, and the marker of the
// transaction voids the guards taken before it.
func TestTxnVerificationGuard(t *testing.T) {
	p, ts := newTxnPartition(t)
	appendVerified := func(b []byte, g VerificationGuard) error {
		h, err := record.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.AppendParsedVerified(b, h, g)
		return err
	}
	if err := appendVerified(txnBatch(1, 0, 0, 1, ts), 0); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("unverified write: %v, want INVALID_TXN_STATE", err)
	}
	g, needed := p.StartTxnVerification(1, 0)
	if !needed {
		t.Fatal("no verification needed for a new transaction")
	}
	if err := appendVerified(txnBatch(1, 0, 0, 1, ts), g); err != nil { // 0
		t.Fatal(err)
	}
	// The transaction is open: further batches need no verification.
	if _, needed := p.StartTxnVerification(1, 0); needed {
		t.Fatal("verification asked for an open transaction")
	}
	if err := appendVerified(txnBatch(1, 0, 1, 1, ts), 0); err != nil { // 1
		t.Fatal(err)
	}
	mustMarker(t, p, 1, 0, 0, true) // 2
	// A late write verified before the marker arrived: its guard is void.
	g, _ = p.StartTxnVerification(1, 0)
	mustMarker(t, p, 1, 0, 0, true) // 3: a coordinator's retry
	if err := appendVerified(txnBatch(1, 0, 2, 1, ts), g); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("write verified before the marker: %v, want INVALID_TXN_STATE", err)
	}
	wantOffsets(t, p, 4, 4)
}

// At transaction version 2 the next transaction's write may be verified
// before the previous transaction's marker lands (the coordinator answers
// once the markers are written): that marker, at the bumped epoch the
// write uses, leaves the guard valid.
func TestTxnVerificationGuardV2(t *testing.T) {
	p, ts := newTxnPartition(t)
	g, _ := p.StartTxnVerification(1, 0)
	b := txnBatch(1, 0, 0, 1, ts)
	h, _ := record.ParseHeader(b)
	if _, err := p.AppendParsedVerified(b, h, g); err != nil { // 0
		t.Fatal(err)
	}
	g, needed := p.StartTxnVerification(1, 1) // the next transaction, at the bumped epoch
	if !needed {
		t.Fatal("no verification for the next transaction")
	}
	if _, err := p.WriteTxnMarker(1, 1, 0, true, 2); err != nil { // 1
		t.Fatal(err)
	}
	b = txnBatch(1, 1, 0, 1, ts)
	h, _ = record.ParseHeader(b)
	if _, err := p.AppendParsedVerified(b, h, g); err != nil { // 2
		t.Fatalf("next transaction's write verified before the marker: %v", err)
	}
	wantOffsets(t, p, 3, 2)
}
