package record

import (
	"bytes"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// bombRecords are records that compress to almost nothing: n records of
// size bytes of one repeated pattern, with headers so the whole record
// format is walked.
func bombRecords(n, size int) []Record {
	recs := make([]Record, n)
	v := bytes.Repeat([]byte("samsa-"), size/6+1)[:size]
	for i := range recs {
		recs[i] = Record{Timestamp: 1_700_000_000_000 + int64(i), Key: []byte{byte(i)}, Value: v,
			Headers: []RecordHeader{{Key: "h", Value: v[:100]}}}
	}
	return recs
}

// zstdStreamBatch builds a batch whose zstd frame is not single-segment
// and has a window of window bytes, as Kafka's Java client writes them
// (zstd-jni streams, 2 MiB windows at the default level).
func zstdStreamBatch(t testing.TB, recs []Record, window int) []byte {
	t.Helper()
	plain := Build(BuildOptions{}, recs)
	enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(window), zstd.WithSingleSegment(false), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	h, _ := ParseHeader(plain)
	h.Attributes |= int16(CodecZstd)
	return rawBatch(h, enc.EncodeAll(plain[HeaderSize:], nil))
}

// TestConcurrentBombsMemory is the regression test for decompression
// without a memory bound: 16 concurrent batches of a few kilobytes, each
// decompressing to 16 MiB, must be validated without the heap growing in
// proportion to what they decompress to. Bytes allocated (TotalAlloc) bound
// the heap's peak growth from above and do not depend on GC timing.
func TestConcurrentBombsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("decompresses 1 GiB")
	}
	const (
		batches   = 16
		perBatch  = 16 << 20
		recordLen = 1 << 20
	)
	recs := bombRecords(perBatch/recordLen, recordLen-200)
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		t.Run(c.String(), func(t *testing.T) {
			batch := Build(BuildOptions{Codec: c}, recs)
			if c == CodecZstd {
				batch = zstdStreamBatch(t, recs, 2<<20)
			}
			_, s, err := ValidateSummary(batch)
			if err != nil {
				t.Fatal(err)
			}
			if s.UncompressedSize < perBatch-len(recs)*200 {
				t.Fatalf("batch decompresses to %d bytes, want about %d", s.UncompressedSize, perBatch)
			}
			// Each batch's budget: its codec's fixed state (a 2 MiB zstd
			// window, 64 KiB lz4 blocks, 32 KiB snappy blocks, gzip's
			// window) and the 32 KiB stream window; far below 16 MiB.
			const limit = batches * 4 << 20
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var wg sync.WaitGroup
			errs := make([]error, batches)
			for i := range batches {
				wg.Go(func() { _, _, errs[i] = ValidateSummary(batch) })
			}
			wg.Wait()
			runtime.ReadMemStats(&after)
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %d batches of %d compressed bytes, %d decompressed each: %.1f MiB allocated",
				c, batches, len(batch), s.UncompressedSize, float64(alloc)/(1<<20))
			if alloc > limit {
				t.Fatalf("validating %d concurrent %s batches of %d MiB allocated %.1f MiB, want at most %d MiB: memory grows with the decompressed size",
					batches, c, perBatch>>20, float64(alloc)/(1<<20), limit>>20)
			}
		})
	}
}
