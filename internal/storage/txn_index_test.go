package storage

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func txn(pid, first, last, lso int64) AbortedTxn {
	return AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last, LastStableOffset: lso}
}

func mustAddTxn(tb testing.TB, l *Log, e AbortedTxn) {
	tb.Helper()
	if err := l.AppendAbortedTxn(e); err != nil {
		tb.Fatal(err)
	}
}

func collect(tb testing.TB, l *Log, from, upper int64) []AbortedTxn {
	tb.Helper()
	got, err := l.CollectAbortedTxns(from, upper)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// TestTxnIndex checks Kafka's byte layout, the search of Kafka's
// collectAbortedTransactions, reopening and truncation. Five segments hold
// offsets 0..4, one each.
func TestTxnIndex(t *testing.T) {
	l := fiveSegments(t, LogConfig{}, time.Now())
	a, b := txn(1, 0, 1, 2), txn(2, 2, 3, 5)
	mustAddTxn(t, l, a)
	mustAddTxn(t, l, a) // a replayed marker adds nothing
	mustAddTxn(t, l, b)
	mustAddTxn(t, l, txn(3, 5, 9, 10)) // no such offset yet: ignored
	raw, err := os.ReadFile(filepath.Join(l.Dir(), "00000000000000000001.txnindex"))
	if err != nil {
		t.Fatal(err)
	}
	want := "0000" + "0000000000000001" + "0000000000000000" + "0000000000000001" + "0000000000000002"
	if hex.EncodeToString(raw) != want {
		t.Fatalf("entry bytes %x, want %s", raw, want)
	}
	if got := filesWithSuffix(t, l.Dir(), txnIndexSuffix); len(got) != 2 {
		t.Fatalf(".txnindex files %v: only segments with aborts have one", got)
	}
	for _, c := range []struct {
		from, upper int64
		want        []AbortedTxn
	}{
		{0, 1, []AbortedTxn{a}},    // a's LSO 2 >= 1 ends the search at segment 1
		{0, 5, []AbortedTxn{a, b}}, // both overlap
		{2, 5, []AbortedTxn{b}},    // from segment 2: a is behind
		{1, 2, []AbortedTxn{a}},    // a's marker is at 1
		{4, 5, nil},                // b's marker is before 4
	} {
		if got := collect(t, l, c.from, c.upper); !slices.Equal(got, c.want) {
			t.Errorf("collect [%d, %d) = %+v, want %+v", c.from, c.upper, got, c.want)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A torn entry is cut on open.
	f, err := os.OpenFile(filepath.Join(l.Dir(), "00000000000000000003.txnindex"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0, 0, 9})
	f.Close()
	l = openLog(t, l.Dir(), LogConfig{SegmentBytes: l.Config().SegmentBytes})
	if got := l.AbortedTxns(); !slices.Equal(got, []AbortedTxn{a, b}) {
		t.Fatalf("after reopen %+v", got)
	}
	if n := fileSize(t, filepath.Join(l.Dir(), "00000000000000000003.txnindex")); n != txnIndexEntrySize {
		t.Fatalf("torn .txnindex is %d bytes, want %d", n, txnIndexEntrySize)
	}
	// Truncation drops the entries of markers it removes.
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if got := l.AbortedTxns(); !slices.Equal(got, []AbortedTxn{a}) {
		t.Fatalf("after TruncateTo(3) %+v", got)
	}
	if n := fileSize(t, filepath.Join(l.Dir(), "00000000000000000003.txnindex")); n != 0 {
		t.Fatalf(".txnindex of the truncated segment is %d bytes", n)
	}
}

// TestTxnIndexOutOfOrder: an entry replayed after its file lost it goes
// back in marker order.
func TestTxnIndexOutOfOrder(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "orders-0"), LogConfig{})
	for i := 0; i < 5; i++ {
		mustAppend(t, l, makeBatch(t, 1, 1000, 10))
	}
	mustAddTxn(t, l, txn(1, 0, 3, 4))
	mustAddTxn(t, l, txn(2, 0, 1, 2))
	if got := l.AbortedTxns(); !slices.Equal(got, []AbortedTxn{txn(2, 0, 1, 2), txn(1, 0, 3, 4)}) {
		t.Fatalf("entries %+v", got)
	}
	l.Close()
	l = openLog(t, l.Dir(), LogConfig{})
	if got := l.AbortedTxns(); !slices.Equal(got, []AbortedTxn{txn(2, 0, 1, 2), txn(1, 0, 3, 4)}) {
		t.Fatalf("entries after reopen %+v", got)
	}
}

// TestRetentionDeletesTxnIndex: a .txnindex goes with its segment.
func TestRetentionDeletesTxnIndex(t *testing.T) {
	l := fiveSegments(t, LogConfig{FileDeleteDelayMs: 1}, time.Now())
	mustAddTxn(t, l, txn(1, 0, 1, 2))
	mustAddTxn(t, l, txn(2, 3, 3, 4))
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if n, err := l.DeleteOldSegments(); err != nil || n != 3 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 3", n, err)
	}
	l.deletes.Wait()
	if got := filesWithSuffix(t, l.Dir(), txnIndexSuffix); !slices.Equal(got, []string{"00000000000000000003.txnindex"}) {
		t.Fatalf(".txnindex files after retention: %v", got)
	}
	if got := filesWithSuffix(t, l.Dir(), deletedSuffix); len(got) != 0 {
		t.Fatalf("files left: %v", got)
	}
	if got := l.AbortedTxns(); !slices.Equal(got, []AbortedTxn{txn(2, 3, 3, 4)}) {
		t.Fatalf("entries %+v", got)
	}
}

// TestCompactionKeepsTxnIndex: the cleaned segment answers for the
// aborted transactions of the segments it replaces, across a reopen.
func TestCompactionKeepsTxnIndex(t *testing.T) {
	clock := &fakeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := compactedLog(t, filepath.Join(t.TempDir(), "c-0"), clock)
	ts := clock.Now().UnixMilli()
	for i := 0; i < 4; i++ {
		mustAppend(t, l, keyedBatch(ts, "k", "v"))
		if i == 1 {
			mustAddTxn(t, l, txn(5, 0, 1, 2))
		}
		forceRoll(t, l)
	}
	mustAddTxn(t, l, txn(6, 2, 3, 4))
	if _, err := newCleaner(1<<20, nil).clean(l, -1); err != nil {
		t.Fatal(err)
	}
	want := []AbortedTxn{txn(5, 0, 1, 2), txn(6, 2, 3, 4)}
	if got := l.AbortedTxns(); !slices.Equal(got, want) {
		t.Fatalf("entries after cleaning %+v, want %+v", got, want)
	}
	if got := collect(t, l, 3, 4); !slices.Equal(got, want[1:]) {
		t.Fatalf("collect [3, 4) after cleaning %+v", got)
	}
	l.Close()
	l = compactedLog(t, l.Dir(), clock)
	if got := l.AbortedTxns(); !slices.Equal(got, want) {
		t.Fatalf("entries after reopen %+v, want %+v", got, want)
	}
}
