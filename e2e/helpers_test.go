package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"strconv"
	"testing"
	"time"
)

// Every test gets testTimeout to finish its own work through contexts and
// client timeouts. If a client ignores them (a hung broker can wedge a
// blocking call), the watchdog kills the binary a little later with every
// goroutine's stack, so the suite still ends by itself well before go test's
// 10-minute default.
const (
	testTimeout     = 45 * time.Second
	watchdogTimeout = 75 * time.Second
)

// idxHeader is the first header of every generated record. Its value is the
// record's index in the produced slice, which lets the checker pair each
// consumed record with the one that was produced regardless of the order in
// which partitions are drained.
const idxHeader = "e2e-idx"

// codecs lists the compression codecs every client must round-trip, by the
// names Kafka uses for compression.type.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// hdr is a record header as the user sees it.
type hdr struct {
	Key   string
	Value []byte
}

// rec is a record as the user sees it, independent of the client library.
// Partition and Offset are what the produce result reported (or, for
// consumed records, where the record was read); -1 means unknown, e.g. an
// offset after an acks=0 produce.
type rec struct {
	Key       []byte
	Value     []byte
	Headers   []hdr
	Timestamp time.Time
	Partition int32
	Offset    int64
}

func (r rec) String() string {
	return fmt.Sprintf("p%d@%d key=%q len(value)=%d ts=%d headers=%d",
		r.Partition, r.Offset, trunc(r.Key), len(r.Value), r.Timestamp.UnixMilli(), len(r.Headers))
}

func trunc(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}

// testContext bounds one test: the context expires after testTimeout and a
// watchdog aborts the process if the test is still running well after that.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	name := t.Name()
	dog := time.AfterFunc(watchdogTimeout, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("e2e watchdog: %s still running after %v; the broker or a client is hung", name, watchdogTimeout))
	})
	t.Cleanup(func() {
		dog.Stop()
		cancel()
	})
	return ctx
}

// genRecords returns n deterministic records for seed. The mix covers what
// clients and brokers get wrong: nil keys (every 17th record), empty values
// (every 13th), values from a few bytes up to 16 KiB so that batches span
// several sizes, binary data, and two headers per record, the second with
// random (sometimes empty) bytes. Timestamps are explicit, millisecond
// aligned and strictly increasing by 10 ms from an hour ago; recent enough
// that a real broker's default retention (7 days) never touches them.
func genRecords(seed uint64, n int) []rec {
	rng := rand.New(rand.NewPCG(seed, seed^0x5a5a5a5a))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	out := make([]rec, n)
	for i := range out {
		r := rec{Partition: -1, Offset: -1}
		if i%17 != 5 {
			r.Key = fmt.Appendf(nil, "key-%d-%x", rng.Uint32(), randBytes(rng, rng.IntN(16)))
		}
		switch {
		case i%13 == 7:
			r.Value = []byte{}
		case i%50 == 0:
			r.Value = randBytes(rng, 8<<10+rng.IntN(8<<10))
		default:
			// Half text, half raw bytes: text compresses, random does not.
			if rng.IntN(2) == 0 {
				r.Value = bytes.Repeat([]byte("samsa "), 1+rng.IntN(100))
			} else {
				r.Value = randBytes(rng, 1+rng.IntN(600))
			}
		}
		r.Headers = []hdr{
			{Key: idxHeader, Value: []byte(strconv.Itoa(i))},
			{Key: "blob", Value: randBytes(rng, rng.IntN(3)*8)},
		}
		r.Timestamp = base.Add(time.Duration(i) * 10 * time.Millisecond)
		out[i] = r
	}
	return out
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// reporter is the part of *testing.T the checker uses; the checker's own
// test substitutes a recorder to prove that it catches mismatches.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// checkOpts adjusts checkConsumed for what a particular client can express.
type checkOpts struct {
	// nilKeyAsEmpty accepts an empty key where a nil (null) key was
	// produced, for clients whose API cannot tell the two apart.
	nilKeyAsEmpty bool
}

// checkConsumed compares what a consumer read from a fresh topic of
// numPartitions partitions with what was produced, the way a user would:
//   - exactly the produced records came back, each once;
//   - each record is in the partition the produce result named, at the offset
//     it named (when known);
//   - offsets in every partition are contiguous from 0, and records in a
//     partition come back in the order they were produced;
//   - keys, values, headers (in order) and timestamps are equal;
//   - keyed records spread over every partition;
//   - ends, if not nil, are the partitions' end offsets (high watermarks) and
//     match the number of records produced to each partition, so no extra
//     record sits after the ones read.
//
// consumed must hold each partition's records in the order they were read.
func checkConsumed(t reporter, numPartitions int32, produced, consumed []rec, ends map[int32]int64, opts checkOpts) {
	t.Helper()
	errs := 0
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
		if errs++; errs >= 10 {
			t.Fatalf("too many mismatches, stopping")
		}
	}

	if len(consumed) != len(produced) {
		fail("consumed %d records, produced %d", len(consumed), len(produced))
	}
	perPart := map[int32]int64{} // produced records per partition
	for i, p := range produced {
		if p.Partition < 0 || p.Partition >= numPartitions {
			fail("produced record %d: produce result partition %d, want 0..%d", i, p.Partition, numPartitions-1)
		}
		perPart[p.Partition]++
	}
	for p := range numPartitions {
		if perPart[p] == 0 {
			fail("no record was produced to partition %d: keys did not spread over partitions", p)
		}
	}

	seen := make([]bool, len(produced))
	next := map[int32]int64{}  // next expected offset per partition
	lastIdx := map[int32]int{} // index of the previous record per partition
	for _, c := range consumed {
		if len(c.Headers) == 0 || c.Headers[0].Key != idxHeader {
			fail("consumed %v: first header is not %q: %v", c, idxHeader, c.Headers)
			continue
		}
		i, err := strconv.Atoi(string(c.Headers[0].Value))
		if err != nil || i < 0 || i >= len(produced) {
			fail("consumed %v: bad %s header %q", c, idxHeader, c.Headers[0].Value)
			continue
		}
		if seen[i] {
			fail("consumed %v: record %d consumed twice", c, i)
			continue
		}
		seen[i] = true
		want := produced[i]

		if c.Offset != next[c.Partition] {
			fail("partition %d: offset %d follows %d, want contiguous offsets from 0", c.Partition, c.Offset, next[c.Partition]-1)
		}
		next[c.Partition] = c.Offset + 1
		if last, ok := lastIdx[c.Partition]; ok && i < last {
			fail("partition %d: record %d read after record %d, produce order lost", c.Partition, i, last)
		}
		lastIdx[c.Partition] = i

		if c.Partition != want.Partition {
			fail("record %d: consumed from partition %d, produce result said %d", i, c.Partition, want.Partition)
		}
		if want.Offset >= 0 && c.Offset != want.Offset {
			fail("record %d: consumed at offset %d, produce result said %d", i, c.Offset, want.Offset)
		}
		switch {
		case want.Key == nil && c.Key != nil && !(opts.nilKeyAsEmpty && len(c.Key) == 0):
			fail("record %d: key %q, want null", i, trunc(c.Key))
		case want.Key != nil && !bytes.Equal(c.Key, want.Key):
			fail("record %d: key %q, want %q", i, trunc(c.Key), trunc(want.Key))
		}
		if !bytes.Equal(c.Value, want.Value) {
			fail("record %d: value differs (len %d, want len %d)", i, len(c.Value), len(want.Value))
		}
		if !equalHeaders(c.Headers, want.Headers) {
			fail("record %d: headers %v, want %v", i, c.Headers, want.Headers)
		}
		if got, w := c.Timestamp.UnixMilli(), want.Timestamp.UnixMilli(); got != w {
			fail("record %d: timestamp %d, want %d (diff %d ms)", i, got, w, got-w)
		}
	}
	for i, ok := range seen {
		if !ok && len(consumed) > 0 {
			fail("record %d (%v) was never consumed", i, produced[i])
		}
	}
	if ends != nil {
		for p := range numPartitions {
			if ends[p] != perPart[p] {
				fail("partition %d: end offset %d, want %d (records produced to it)", p, ends[p], perPart[p])
			}
		}
	}
}

func equalHeaders(a, b []hdr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

// checkProducedOffsets checks that, per partition, the offsets the produce
// results reported are exactly 0..n-1 in produce order: what a user of a
// single (idempotent) producer on a fresh topic expects.
func checkProducedOffsets(t *testing.T, produced []rec) {
	t.Helper()
	byPart := map[int32][]int64{}
	for _, r := range produced {
		byPart[r.Partition] = append(byPart[r.Partition], r.Offset)
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		for i, off := range byPart[p] {
			if off != int64(i) {
				t.Errorf("partition %d: record #%d produced there got offset %d, want %d", p, i, off, i)
				break
			}
		}
	}
}

// topicName returns a topic name unique to the client and case, so that
// tests never share state even when pointed at one long-lived broker.
func topicName(client, kind string) string {
	return fmt.Sprintf("e2e-%s-%s-%d", client, kind, time.Now().UnixNano()%1e9)
}
