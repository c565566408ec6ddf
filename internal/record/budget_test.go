package record

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/klauspost/compress/snappy"
)

// bareSnappyBatch is a batch whose records section is one raw snappy
// block, as librdkafka writes it: decoding it needs the whole section.
func bareSnappyBatch(recs []Record) []byte {
	plain := Build(BuildOptions{}, recs)
	h, _ := ParseHeader(plain)
	h.Attributes |= int16(CodecSnappy)
	return rawBatch(h, snappy.Encode(nil, plain[HeaderSize:]))
}

// TestBudgetWaits: while the budget is spent, a decompression that needs
// it waits (not fails), and runs as soon as the budget is returned.
func TestBudgetWaits(t *testing.T) {
	recs := bombRecords(4, 256<<10)
	for name, batch := range map[string][]byte{
		"zstd":        zstdStreamBatch(t, recs, 1<<20),
		"bare snappy": bareSnappyBatch(recs),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := NewBudget(8 << 20)
				held := b.acquire(8 << 20)
				done := make(chan error, 1)
				go func() {
					_, _, err := ValidateSummaryBudget(batch, b)
					done <- err
				}()
				synctest.Wait()
				select {
				case err := <-done:
					t.Fatalf("validation finished (err %v) while the budget was spent", err)
				default:
				}
				if b.Waiting() != 1 {
					t.Fatalf("%d waiting, want 1", b.Waiting())
				}
				b.release(held)
				synctest.Wait()
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				default:
					t.Fatal("validation still waits after the budget was returned")
				}
				if b.InUse() != 0 {
					t.Fatalf("%d bytes still charged", b.InUse())
				}
			})
		})
	}
}

// TestBudgetOversized: a decompression that needs more than the whole
// budget is charged the whole budget and runs alone instead of never.
func TestBudgetOversized(t *testing.T) {
	b := NewBudget(64 << 10)
	batch := bareSnappyBatch(bombRecords(4, 256<<10)) // a 1 MiB block
	if _, _, err := ValidateSummaryBudget(batch, b); err != nil {
		t.Fatal(err)
	}
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Fatalf("in use %d, waiting %d after validation", b.InUse(), b.Waiting())
	}
}

// TestBudgetFIFO: waiters are admitted in order, so a large one is not
// starved by a stream of small ones.
func TestBudgetFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(10)
		first := b.acquire(6)
		order := make(chan int64, 2)
		go func() { order <- b.acquire(8) }()
		synctest.Wait()
		go func() { order <- b.acquire(4) }() // would fit now, but is second in line
		synctest.Wait()
		if b.Waiting() != 2 {
			t.Fatalf("%d waiting, want 2", b.Waiting())
		}
		b.release(first)
		synctest.Wait()
		if got := <-order; got != 8 {
			t.Fatalf("admitted the %d-byte waiter first, want the 8-byte one", got)
		}
		b.release(8)
		synctest.Wait()
		if got := <-order; got != 4 {
			t.Fatalf("second admitted %d, want 4", got)
		}
		b.release(4)
		if b.InUse() != 0 {
			t.Fatalf("%d in use", b.InUse())
		}
	})
}

// TestLargeDecompressorNotPooled: state sized for a large zstd window is
// dropped after use, so it does not stay resident.
func TestLargeDecompressorNotPooled(t *testing.T) {
	batch := zstdStreamBatch(t, bombRecords(8, 1<<20), 8<<20)
	d := getDecompressor(nil)
	r, err := d.open(CodecZstd, batch[HeaderSize:], MaxDecompressedSize)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAllLimit(nil, r, MaxDecompressedSize); err != nil {
		t.Fatal(err)
	}
	zd := d.zd
	d.close()
	if d.zd != nil || zd == nil {
		t.Fatal("a decompressor with an 8 MiB zstd window went back to the pool whole")
	}
}

// TestZstdWindowLimit: a frame declaring a window beyond zstd's default
// decoder limit is corrupt, refused before anything is allocated for it.
func TestZstdWindowLimit(t *testing.T) {
	// Frame header: magic, descriptor with single-segment and an 8-byte
	// content size of 1 GiB, then a raw empty last block.
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0x40, 0, 0, 0, 0, 1, 0, 0}
	batch := rawBatch(Header{NumRecords: 1, Attributes: int16(CodecZstd), ProducerID: -1, BaseSequence: -1}, frame)
	if _, err := Validate(batch); err == nil || !errorIsCorrupt(err) {
		t.Fatalf("Validate = %v, want ErrCorrupt", err)
	}
}

func errorIsCorrupt(err error) bool { return err != nil && errors.Is(err, ErrCorrupt) }
