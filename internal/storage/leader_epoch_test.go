package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/samsa-io/samsa/internal/record"
)

func epochBatch(epoch int32, n int) []byte {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: 1, Value: []byte("v")}
	}
	return record.Build(record.BuildOptions{PartitionLeaderEpoch: epoch}, recs)
}

func TestLeaderEpochCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orders-0")
	l, err := Open(dir, LogConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{epochBatch(1, 2), epochBatch(1, 1), epochBatch(3, 2), epochBatch(5, 1)} {
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AssignLeaderEpoch(6, 6); err != nil {
		t.Fatal(err)
	}
	want := []EpochEntry{{1, 0}, {3, 3}, {5, 5}, {6, 6}}
	if got := l.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for _, c := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{6, 6, 6},   // latest: the log end offset
		{5, 5, 6},   // ended where 6 began
		{4, 3, 5},   // unknown: the largest epoch below, ended where 5 began
		{1, 1, 3},   //
		{0, 0, 0},   // below every entry: itself and the first start
		{7, -1, -1}, // above every entry
		{-1, -1, -1},
	} {
		e, off := l.EndOffsetForEpoch(c.epoch)
		if e != c.wantEpoch || off != c.wantEnd {
			t.Errorf("EndOffsetForEpoch(%d) = %d, %d; want %d, %d", c.epoch, e, off, c.wantEpoch, c.wantEnd)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The file holds what the appends wrote: the entry a leader assigns
	// at the log end offset waits for the next append (epochCache).
	b, err := os.ReadFile(filepath.Join(dir, LeaderEpochCheckpointFile))
	if err != nil || string(b) != "0\n3\n1 0\n3 3\n5 5\n" {
		t.Fatalf("checkpoint %q, %v", b, err)
	}

	// Reopen: the file is read back, less the entry at the log end
	// offset, which no batch backs (Kafka trims from the end on load too).
	l, err = Open(dir, LogConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.LeaderEpochs(), want[:3]; !slices.Equal(got, want) {
		t.Fatalf("after reopen %v, want %v", got, want)
	}
	if err := l.TruncateTo(4); err != nil { // the epoch 3 batch 3-4 goes whole
		t.Fatal(err)
	}
	if got, want := l.LeaderEpochs(), []EpochEntry{{1, 0}}; !slices.Equal(got, want) {
		t.Fatalf("after truncation to 3: %v, want %v", got, want)
	}
	if e, off := l.EndOffsetForEpoch(1); e != 1 || off != 3 {
		t.Fatalf("end of epoch 1 after truncation: %d, %d", e, off)
	}
	// A newer batch after an assigned but unused epoch replaces nothing
	// older; a lower epoch than the latest drops the conflicting entries.
	if err := l.AssignLeaderEpoch(2, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(epochBatch(2, 1)); err != nil {
		t.Fatal(err)
	}
	if err := l.IncrementLogStartOffset(2); err != nil {
		t.Fatal(err)
	}
	if got, want := l.LeaderEpochs(), []EpochEntry{{1, 2}, {2, 3}}; !slices.Equal(got, want) {
		t.Fatalf("after moving the log start to 2: %v, want %v", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A missing file is rebuilt from the batches. (Open without a
	// LogManager knows no log start offset checkpoint: the log starts at 0.)
	if err := os.Remove(filepath.Join(dir, LeaderEpochCheckpointFile)); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, LogConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got, want := l.LeaderEpochs(), []EpochEntry{{1, 0}, {2, 3}}; !slices.Equal(got, want) {
		t.Fatalf("rebuilt %v, want %v", got, want)
	}
	if err := l.TruncateFullyAndStartAt(10); err != nil {
		t.Fatal(err)
	}
	if got := l.LeaderEpochs(); len(got) != 0 || l.LogEndOffset() != 10 || l.LogStartOffset() != 10 {
		t.Fatalf("after full truncation: %v, log %d..%d", got, l.LogStartOffset(), l.LogEndOffset())
	}
}

// Loading an empty log whose leader epoch began at its end (a file an
// older version wrote at the assign) drops the entry in memory without
// rewriting the file; the next assign and append write the file, and a
// reload in between drops the entry the same way. An assign alone
// writes nothing.
func TestEmptyLogEpochEntryDroppedWithoutWrite(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, LogConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AssignLeaderEpoch(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "leader-epoch-checkpoint")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("leader-epoch-checkpoint written by an assign without append (%v)", err)
	}
	if err := os.WriteFile(path, []byte("0\n1\n0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		l, err = Open(dir, LogConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.LeaderEpochs(); len(got) != 0 {
			t.Fatalf("epochs %v of an empty log after load, want none", got)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if after, err := os.Stat(path); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("leader-epoch-checkpoint rewritten by loading an empty log (%v)", err)
	}
	l, err = Open(dir, LogConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AssignLeaderEpoch(3, 0); err != nil {
		t.Fatal(err)
	}
	b := makeBatch(t, 2, 1, 10)
	record.SetPartitionLeaderEpoch(b, 3)
	mustAppend(t, l, b)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, LogConfig{})
	if got := l.LeaderEpochs(); len(got) != 1 || got[0] != (EpochEntry{3, 0}) {
		t.Fatalf("epochs %v after an assign, an append and a reload, want [{3 0}]", got)
	}
}
