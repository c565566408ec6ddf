package storage

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/powerloss"
	"github.com/samsa-io/samsa/internal/record"
)

// TestPowerLossByFlushPolicy appends batches to one log, cuts the power
// (internal/powerloss: every later write and fsync fails; the files keep
// what was fsynced, torn tails for some seeds) and reopens it on what the
// disk kept. What is left must be a prefix of what was appended, readable
// and appendable; how long a prefix depends on the flush policy:
//
//   - Kafka's default (flush.messages and flush.ms unset): only segments
//     that rolled (fsynced in the background) survive; the active
//     segment's appends are lost, torn tails may keep part of them.
//   - flush.messages=1: every append is fsynced before Append returns,
//     so nothing appended is lost.
func TestPowerLossByFlushPolicy(t *testing.T) {
	const batches = 60
	for _, tc := range []struct {
		name    string
		cfg     LogConfig
		minKept int64 // offsets that must survive
		maxKept int64
	}{
		{"default one segment", LogConfig{}, 0, batches * 2},
		{"default small segments", LogConfig{SegmentBytes: 20_000}, 1, batches*2 - 1},
		{"flush.messages=1", LogConfig{FlushMessages: 1}, batches * 2, batches * 2},
		{"flush.messages=1 small segments", LogConfig{FlushMessages: 1, SegmentBytes: 20_000}, batches * 2, batches * 2},
	} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s seed %d", tc.name, seed), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "orders-0")
				disk := powerloss.New(seed > 0, seed)
				cfg := tc.cfg
				cfg.Fault = disk.Fault
				l, err := Open(dir, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				var all []byte
				for range batches {
					b := makeBatch(t, 2, 1000, 1000)
					mustAppend(t, l, b)
					all = append(all, b...)
				}
				if tc.cfg.SegmentBytes != 0 {
					l.flushes.Wait() // the flushes after rolls
				}
				disk.PowerOff()
				image := filepath.Join(t.TempDir(), "orders-0")
				if _, err := disk.Image(dir, image); err != nil {
					t.Fatal(err)
				}
				l.Close()

				l = openLog(t, image, LogConfig{SegmentBytes: tc.cfg.SegmentBytes})
				leo := l.LogEndOffset()
				t.Logf("%d of %d offsets kept", leo, batches*2)
				if leo < tc.minKept || leo > tc.maxKept || leo%2 != 0 {
					t.Fatalf("log end offset %d after power loss, want %d..%d and whole batches", leo, tc.minKept, tc.maxKept)
				}
				// A read stops at a segment's end; every batch here is
				// the same size and holds two offsets.
				size := len(all) / batches
				var got []byte
				for off := int64(0); off < leo; {
					b, err := l.Read(off, 1<<30, leo)
					if err != nil || len(b) == 0 || len(b)%size != 0 {
						t.Fatalf("read at %d after power loss: %d bytes, %v", off, len(b), err)
					}
					got = append(got, b...)
					off += int64(len(b) / size * 2)
				}
				if !bytes.Equal(got, all[:len(got)]) || int64(len(got)) != leo/2*int64(size) {
					t.Fatalf("after power loss read %d bytes; want the first %d batches appended", len(got), leo/2)
				}
				if off := mustAppend(t, l, makeBatch(t, 1, 1000, 10)); off != leo {
					t.Fatalf("append after power loss at %d, want %d", off, leo)
				}
			})
		}
	}
}

// TestPowerLossGroupCommit: with flush.messages=1, writers append to one
// log concurrently, so their fsyncs are shared (SyncTo), until the power
// is cut. Every append that returned without error must be on the disk
// that comes back, at its offset, byte for byte.
func TestPowerLossGroupCommit(t *testing.T) {
	const writers, perWriter = 4, 400
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "orders-0")
			disk := powerloss.New(seed > 0, seed)
			l, err := Open(dir, LogConfig{FlushMessages: 1, SegmentBytes: 64_000, Fault: disk.Fault}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu    sync.Mutex
				acked = map[int64][]byte{} // base offset → the batch as written
				wg    sync.WaitGroup
			)
			for w := range writers {
				batches := make([][]byte, perWriter)
				for i := range batches {
					batches[i] = makeBatch(t, 2, int64(w*perWriter+i+1), 300) // timestamps tell them apart
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, b := range batches {
						off, err := l.Append(b)
						if err != nil {
							return // the power is off
						}
						mu.Lock()
						acked[off] = b
						mu.Unlock()
					}
				}()
			}
			for {
				mu.Lock()
				n := len(acked)
				mu.Unlock()
				if n >= writers*perWriter/2 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			disk.PowerOff()
			wg.Wait()
			image := filepath.Join(t.TempDir(), "orders-0")
			if _, err := disk.Image(dir, image); err != nil {
				t.Fatal(err)
			}
			l.Close()

			l = openLog(t, image, LogConfig{SegmentBytes: 64_000})
			leo := l.LogEndOffset()
			t.Logf("%d batches acknowledged, log end offset %d after power loss", len(acked), leo)
			for off, want := range acked {
				got, err := l.Read(off, 1, leo)
				if err != nil || len(got) < len(want) || !bytes.Equal(got[:len(want)], want) {
					t.Fatalf("acknowledged batch at offset %d lost or changed after power loss (log end %d): %d bytes read, %v", off, leo, len(got), err)
				}
			}
		})
	}
}

// TestPowerLossLeaderEpochs: partition.metadata and the entry a new leader
// assigns in leader-epoch-checkpoint are written without fsync and made
// durable by the next append (epochCache). Power is cut in every phase of
// a leader's life: with the files replaced but not synced (the image
// holds their prior version, none, or torn ones), after appends in the
// new epoch, and after an epoch assigned with no record. What comes back
// must open, hold every appended record (flush.messages=1), and hold an
// epoch entry with the right start offset for every epoch it has records
// of: the entries a scan of the batch headers gives.
func TestPowerLossLeaderEpochs(t *testing.T) {
	id := [16]byte{1, 2, 3}
	for cut := range 6 { // after how many steps the power goes
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("cut %d seed %d", cut, seed), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "orders-0")
				disk := powerloss.New(seed > 0, seed)
				l, err := Open(dir, LogConfig{FlushMessages: 1, Fault: disk.Fault}, nil)
				if err != nil {
					t.Fatal(err)
				}
				var appended int64
				steps := []func(){
					func() {
						if err := l.SetTopicID(id); err != nil {
							t.Fatal(err)
						}
					},
					func() {
						if err := l.AssignLeaderEpoch(1, l.LogEndOffset()); err != nil {
							t.Fatal(err)
						}
					},
					func() { appended += 3; mustAppend(t, l, epochBatch(1, 3)) },
					func() {
						if err := l.AssignLeaderEpoch(4, l.LogEndOffset()); err != nil {
							t.Fatal(err)
						}
					},
					func() { appended += 2; mustAppend(t, l, epochBatch(4, 2)) },
					func() {
						if err := l.AssignLeaderEpoch(7, l.LogEndOffset()); err != nil {
							t.Fatal(err)
						}
					},
				}
				for _, step := range steps[:cut+1] {
					step()
				}
				disk.PowerOff()
				image := filepath.Join(t.TempDir(), "orders-0")
				if _, err := disk.Image(dir, image); err != nil {
					t.Fatal(err)
				}
				l.Close()

				l = openLog(t, image, LogConfig{})
				if got := l.LogEndOffset(); got != appended {
					t.Fatalf("log end offset %d after power loss, want %d", got, appended)
				}
				if got, ok := l.TopicID(); appended > 0 && (!ok || got != id) {
					t.Fatalf("topic id %v %v after power loss of a log with records, want %v", got, ok, id)
				}
				var want []EpochEntry
				if err := l.ScanBatchHeaders(0, func(h record.Header) error {
					if n := len(want); n == 0 || want[n-1].Epoch != h.PartitionLeaderEpoch {
						want = append(want, EpochEntry{h.PartitionLeaderEpoch, h.BaseOffset})
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				var got []EpochEntry // the entries of epochs with records
				entries := l.LeaderEpochs()
				for i, e := range entries {
					if i+1 < len(entries) && entries[i+1].StartOffset == e.StartOffset || e.StartOffset >= l.LogEndOffset() {
						continue // an epoch without records
					}
					got = append(got, e)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("leader epochs after power loss %v (with records: %v), want %v", entries, got, want)
				}
				if off := mustAppend(t, l, epochBatch(9, 1)); off != appended {
					t.Fatalf("append after power loss at %d, want %d", off, appended)
				}
			})
		}
	}
}
