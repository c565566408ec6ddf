package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

func TestBuildValidateRecordsRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			in := sampleRecords()
			b := Build(BuildOptions{BaseOffset: 42, PartitionLeaderEpoch: -1, Codec: c,
				Producer: &ProducerInfo{ID: 7, Epoch: 3, BaseSequence: 100}}, in)
			h, s, err := ValidateSummary(b)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			want := Header{BaseOffset: 42, Length: int32(len(b) - LogOverhead), PartitionLeaderEpoch: -1, Magic: 2,
				CRC: binary.BigEndian.Uint32(b[crcOffset:]), Attributes: int16(c), LastOffsetDelta: 3,
				BaseTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_500,
				ProducerID: 7, ProducerEpoch: 3, BaseSequence: 100, NumRecords: 4}
			if h != want {
				t.Fatalf("header\n got %+v\nwant %+v", h, want)
			}
			if h.Codec() != c || h.LastOffset() != 45 || h.NextOffset() != 46 || h.LastSequence() != 103 {
				t.Fatalf("accessors: codec %v last %d next %d lastSeq %d", h.Codec(), h.LastOffset(), h.NextOffset(), h.LastSequence())
			}
			wantSum := Summary{MinTimestamp: 1_699_999_999_000, MaxTimestamp: 1_700_000_000_500,
				OffsetOfMaxTimestamp: 43, NullKeys: 1, UncompressedSize: s.UncompressedSize}
			if s != wantSum {
				t.Fatalf("summary\n got %+v\nwant %+v", s, wantSum)
			}
			got, err := Records(b)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			for i := range in {
				in[i].Offset = 42 + int64(i)
			}
			if !reflect.DeepEqual(got, in) {
				t.Fatalf("records\n got %#v\nwant %#v", got, in)
			}
			// Null and empty must survive as distinct values.
			if got[1].Key != nil || got[1].Value == nil || got[2].Key == nil || got[2].Value != nil || got[2].Headers[1].Value != nil {
				t.Fatal("null/empty distinction lost")
			}
		})
	}
}

// TestBuildExactBytes pins the encoding of a small batch byte for byte, so
// any change to the writer is deliberate. The records section is worked out
// by hand from the v2 format.
func TestBuildExactBytes(t *testing.T) {
	b := Build(BuildOptions{PartitionLeaderEpoch: -1}, []Record{
		{Timestamp: 10, Key: nil, Value: []byte("a")},
		{Timestamp: 9, Key: []byte("k"), Value: nil, Headers: []RecordHeader{{Key: "h", Value: []byte("v")}}},
	})
	records := []byte{
		// record 0: size 7, attrs 0, tsDelta 0, offDelta 0, key -1, value len 1 "a", 0 headers
		0x0e, 0x00, 0x00, 0x00, 0x01, 0x02, 'a', 0x00,
		// record 1: size 11, attrs 0, tsDelta -1, offDelta 1, key "k", value -1, 1 header "h"="v"
		0x16, 0x00, 0x01, 0x02, 0x02, 'k', 0x01, 0x02, 0x02, 'h', 0x02, 'v',
	}
	if !bytes.Equal(b[HeaderSize:], records) {
		t.Fatalf("records section\n got % x\nwant % x", b[HeaderSize:], records)
	}
	h, err := Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Length != int32(49+len(records)) || h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 ||
		h.BaseTimestamp != 10 || h.MaxTimestamp != 10 || h.LastSequence() != -1 || h.Idempotent() {
		t.Fatalf("header %+v", h)
	}
}

func TestBuildFlags(t *testing.T) {
	b := Build(BuildOptions{Transactional: true, Control: true, LogAppendTime: true, AppendTime: 555,
		Producer: &ProducerInfo{ID: 1, Epoch: 0, BaseSequence: 0}},
		[]Record{{Timestamp: 1, Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}, {Timestamp: 2}})
	h, err := Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Transactional() || !h.Control() || !h.LogAppendTime() || h.MaxTimestamp != 555 || h.Attributes != 0x38 {
		t.Fatalf("flags: %+v", h)
	}
	recs, err := Records(b)
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].Timestamp != 555 || recs[1].Timestamp != 555 {
		t.Fatalf("LogAppendTime batch must report MaxTimestamp for every record, got %d %d", recs[0].Timestamp, recs[1].Timestamp)
	}
}

func TestBuildEmpty(t *testing.T) {
	b := Build(BuildOptions{BaseOffset: 10}, nil)
	if _, err := Validate(b); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate(empty batch) = %v, want ErrInvalid (Kafka: INVALID_RECORD)", err)
	}
	h, s, err := ValidateStored(b)
	if err != nil {
		t.Fatalf("ValidateStored: %v", err)
	}
	if h.NumRecords != 0 || h.LastOffsetDelta != -1 || s.MaxTimestamp != -1 || s.OffsetOfMaxTimestamp != -1 {
		t.Fatalf("header %+v summary %+v", h, s)
	}
	if recs, err := Records(b); err != nil || len(recs) != 0 {
		t.Fatalf("Records = %v, %v", recs, err)
	}
}

// recBytes hand-encodes a record for malformed-batch tests.
func recBytes(offsetDelta int32, key []byte) []byte {
	r := Record{Key: key, Value: []byte("v")}
	return appendRecord(nil, &r, offsetDelta, 0)
}

func TestValidateErrors(t *testing.T) {
	good := Build(BuildOptions{}, sampleRecords())
	mut := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	hdr := func(n, lastDelta int32) Header {
		return Header{NumRecords: n, LastOffsetDelta: lastDelta, ProducerID: -1, BaseSequence: -1, ProducerEpoch: -1}
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	gzipGarbage := rawBatch(Header{NumRecords: 1, Attributes: int16(CodecGzip)}, []byte("not gzip at all"))

	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty input", nil, ErrCorrupt},
		{"short header", good[:HeaderSize-1], ErrCorrupt},
		{"magic 1", mut(func(b []byte) []byte { b[magicOffset] = 1; return b }), ErrUnsupportedMagic},
		{"magic 0 short", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 14, 0, 0, 0, 0, 0}, ErrUnsupportedMagic},
		{"truncated", good[:len(good)-1], ErrCorrupt},
		{"trailing byte", append(append([]byte(nil), good...), 0), ErrCorrupt},
		{"length below header", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[lengthOffset:], 10); return b }), ErrCorrupt},
		{"bad crc", mut(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrCorrupt},
		{"zero records", rawBatch(hdr(0, -1), nil), ErrInvalid},
		{"negative offset range", rawBatch(hdr(1, -2), recBytes(0, nil)), ErrInvalid},
		{"count mismatch", rawBatch(hdr(2, 2), cat(recBytes(0, nil), recBytes(1, nil))), ErrInvalid},
		{"fewer records than count", rawBatch(hdr(3, 2), cat(recBytes(0, nil), recBytes(1, nil))), ErrInvalid},
		{"bytes after last record", rawBatch(hdr(1, 0), cat(recBytes(0, nil), []byte{0})), ErrInvalid},
		{"offset delta gap", rawBatch(hdr(2, 1), cat(recBytes(0, nil), recBytes(2, nil))), ErrInvalid},
		{"record size too large", rawBatch(hdr(1, 0), []byte{0x7e, 0, 0, 0, 1, 1, 0}), ErrInvalid},
		{"record size too small", rawBatch(hdr(1, 0), []byte{0x0a, 0, 0, 0, 1, 1, 0, 0}), ErrInvalid},
		{"zero record size", rawBatch(hdr(1, 0), []byte{0x00}), ErrInvalid},
		{"key length -2", rawBatch(hdr(1, 0), []byte{0x0c, 0, 0, 0, 0x03, 1, 0}), ErrInvalid},
		{"negative header count", rawBatch(hdr(1, 0), []byte{0x0c, 0, 0, 0, 1, 1, 1}), ErrInvalid},
		{"null header key", rawBatch(hdr(1, 0), []byte{0x10, 0, 0, 0, 1, 1, 2, 1, 1}), ErrInvalid},
		{"varint overflow", rawBatch(hdr(1, 0), []byte{0xff, 0xff, 0xff, 0xff, 0x7f}), ErrInvalid},
		{"undecompressable gzip", gzipGarbage, ErrCorrupt},
		{"unknown codec 5", rawBatch(Header{NumRecords: 1, Attributes: 5}, recBytes(0, nil)), ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(tc.b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
			for _, other := range []error{ErrCorrupt, ErrInvalid, ErrUnsupportedMagic} {
				if other != tc.want && errors.Is(err, other) {
					t.Fatalf("error %v also matches %v", err, other)
				}
			}
		})
	}
}

func TestValidateStoredAcceptsCompactedGaps(t *testing.T) {
	// Offsets 100 and 103 survive compaction of a four-record batch.
	b := rawBatch(Header{BaseOffset: 100, NumRecords: 2, LastOffsetDelta: 3, BaseTimestamp: 50, MaxTimestamp: 50,
		ProducerID: -1, BaseSequence: -1}, append(recBytes(0, []byte("a")), recBytes(3, []byte("b"))...))
	if _, err := Validate(b); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate(compacted) = %v, want ErrInvalid", err)
	}
	if _, _, err := ValidateStored(b); err != nil {
		t.Fatalf("ValidateStored: %v", err)
	}
	recs, err := Records(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Offset != 100 || recs[1].Offset != 103 || string(recs[1].Key) != "b" {
		t.Fatalf("records %+v", recs)
	}
	// Deltas must still increase and stay in range.
	bad := rawBatch(Header{NumRecords: 2, LastOffsetDelta: 3, ProducerID: -1, BaseSequence: -1},
		append(recBytes(3, nil), recBytes(1, nil)...))
	if _, _, err := ValidateStored(bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ValidateStored(decreasing deltas) = %v", err)
	}
	beyond := rawBatch(Header{NumRecords: 1, LastOffsetDelta: 1, ProducerID: -1, BaseSequence: -1}, recBytes(2, nil))
	if _, _, err := ValidateStored(beyond); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ValidateStored(delta past last) = %v", err)
	}
}

func TestCheckProduce(t *testing.T) {
	ok := Header{BaseOffset: 0, ProducerID: -1, BaseSequence: -1}
	if err := CheckProduce(ok); err != nil {
		t.Fatal(err)
	}
	idem := Header{ProducerID: 5, BaseSequence: 0}
	if err := CheckProduce(idem); err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]Header{
		"base offset": {BaseOffset: 3, ProducerID: -1, BaseSequence: -1},
		"control":     {ProducerID: 5, BaseSequence: 0, Attributes: controlBit},
		"no sequence": {ProducerID: 5, BaseSequence: -1},
	} {
		if err := CheckProduce(h); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: CheckProduce = %v, want ErrInvalid", name, err)
		}
	}
}

func TestBatches(t *testing.T) {
	a := Build(BuildOptions{}, sampleRecords()[:1])
	b := Build(BuildOptions{Codec: CodecZstd}, sampleRecords())
	c := Build(BuildOptions{}, sampleRecords()[:2])
	all := bytes.Join([][]byte{a, b, c}, nil)
	got, err := Batches(all)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) || !bytes.Equal(got[2], c) {
		t.Fatalf("split wrong: %d batches", len(got))
	}
	if &got[1][0] != &all[len(a)] {
		t.Fatal("Batches copied instead of slicing")
	}
	if cap(got[0]) != len(a) {
		t.Fatal("a batch slice must not reach into the next batch via append")
	}
	for _, cut := range []int{1, LogOverhead, HeaderSize, len(c) - 1} {
		_, err := Batches(all[:len(all)-cut])
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("cut %d: err = %v, want ErrCorrupt", cut, err)
		}
	}
	if got, err := Batches(nil); got != nil || err != nil {
		t.Fatalf("Batches(nil) = %v, %v", got, err)
	}
	if n, err := BatchSize(all); n != len(a) || err != nil {
		t.Fatalf("BatchSize = %d, %v", n, err)
	}
}

// TestSummaryOffsetOfMaxTimestamp: the first record with the largest
// timestamp, as ListOffsets -3 (KIP-734) names it; in a LogAppendTime batch
// every record has the append time, so the first record.
func TestSummaryOffsetOfMaxTimestamp(t *testing.T) {
	recs := []Record{{Timestamp: 5}, {Timestamp: 9}, {Timestamp: 3}, {Timestamp: 9}}
	for _, c := range allCodecs {
		b := Build(BuildOptions{BaseOffset: 100, Codec: c}, recs)
		_, s, err := ValidateStored(b)
		if s.OffsetOfMaxTimestamp != 101 || s.MaxTimestamp != 9 || err != nil {
			t.Fatalf("%v: summary %+v, %v; want offset 101, timestamp 9", c, s, err)
		}
	}
	b := Build(BuildOptions{BaseOffset: 100, LogAppendTime: true, AppendTime: 77}, recs)
	if _, s, err := ValidateStored(b); s.OffsetOfMaxTimestamp != 100 || s.MaxTimestamp != 77 || err != nil {
		t.Fatalf("LogAppendTime: summary %+v, %v; want offset 100, timestamp 77", s, err)
	}
}

func TestSetters(t *testing.T) {
	b := Build(BuildOptions{}, sampleRecords())
	SetBaseOffset(b, 1000)
	SetPartitionLeaderEpoch(b, 12)
	SetMaxTimestamp(b, 1_800_000_000_000)
	h, err := Validate(b)
	if err != nil {
		t.Fatalf("after setters: %v", err)
	}
	if h.BaseOffset != 1000 || h.PartitionLeaderEpoch != 12 || h.MaxTimestamp != 1_800_000_000_000 {
		t.Fatalf("header %+v", h)
	}
	SetLogAppendTime(b, 99)
	recs, err := Records(b)
	if _, verr := Validate(b); verr != nil || err != nil || recs[0].Timestamp != 99 || recs[0].Offset != 1000 {
		t.Fatalf("after SetLogAppendTime: %v %v %+v", verr, err, recs[0])
	}
}

func TestComputeCRCDoesNotPanic(t *testing.T) {
	b := Build(BuildOptions{}, sampleRecords())
	binary.BigEndian.PutUint32(b[lengthOffset:], 1<<30)
	_ = ComputeCRC(b)
	binary.BigEndian.PutUint32(b[lengthOffset:], 0xffffffff)
	_ = ComputeCRC(b)
	_ = ComputeCRC(b[:5])
}

func TestValidateUncompressedAllocatesNothing(t *testing.T) {
	b := Build(BuildOptions{}, randomRecords(100, 1024, 1))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Validate(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Validate allocated %.1f times per run", allocs)
	}
}

// The Header setters keep a parsed header equal to a fresh parse of the
// rewritten batch, so the produce path can hand it down instead of parsing
// again; ValidateParsed agrees with ValidateSummary.
func TestHeaderSettersKeepHeaderCurrent(t *testing.T) {
	b := Build(BuildOptions{Producer: &ProducerInfo{ID: 7, Epoch: 1, BaseSequence: 3}},
		[]Record{{Timestamp: 1000, Value: []byte("a")}, {Timestamp: 900, Value: []byte("b")}})
	h, sum, err := ValidateSummary(b)
	if err != nil {
		t.Fatal(err)
	}
	ph, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if psum, err := ValidateParsed(b, ph, nil); err != nil || psum != sum || ph != h {
		t.Fatalf("ValidateParsed = %+v, %v; want %+v (header %+v, want %+v)", psum, err, sum, ph, h)
	}
	check := func(what string) {
		t.Helper()
		want, err := ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if h != want {
			t.Fatalf("after %s: header %+v, parse gives %+v", what, h, want)
		}
		if _, err := Validate(b); err != nil {
			t.Fatalf("after %s: %v", what, err)
		}
	}
	h.SetPartitionLeaderEpoch(b, 5)
	check("SetPartitionLeaderEpoch")
	h.SetMaxTimestamp(b, 2000)
	check("SetMaxTimestamp")
	h.SetLogAppendTime(b, 3000)
	check("SetLogAppendTime")
}
