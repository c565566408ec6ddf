package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var rewriteCorpus = flag.Bool("rewrite", false, "rewrite testdata/fuzz seed corpora")

// seedBatches covers every codec, control and transactional batches,
// LogAppendTime, null keys and values, headers and a compacted batch.
func seedBatches() [][]byte {
	var seeds [][]byte
	for _, c := range allCodecs {
		seeds = append(seeds, Build(BuildOptions{Codec: c, PartitionLeaderEpoch: -1}, sampleRecords()))
	}
	pid := &ProducerInfo{ID: 1000, Epoch: 2, BaseSequence: 5}
	seeds = append(seeds,
		Build(BuildOptions{Producer: pid, Transactional: true, Codec: CodecLZ4}, randomRecords(3, 40, 9)),
		// An end-transaction marker: key version 0 type 1 (commit), value version 0 coordinator epoch 7.
		Build(BuildOptions{Producer: pid, Transactional: true, Control: true},
			[]Record{{Timestamp: 1, Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 7}}}),
		Build(BuildOptions{LogAppendTime: true, AppendTime: 1234, Codec: CodecGzip}, sampleRecords()),
		Build(BuildOptions{}, []Record{{Timestamp: -1}}),
		Build(BuildOptions{BaseOffset: 5}, nil),
		rawBatch(Header{BaseOffset: 100, NumRecords: 2, LastOffsetDelta: 3, ProducerID: -1, BaseSequence: -1},
			append(recBytes(0, []byte("a")), recBytes(3, []byte("b"))...)),
	)
	return seeds
}

func TestWriteFuzzCorpus(t *testing.T) {
	if !*rewriteCorpus {
		t.Skip("run with -rewrite to regenerate testdata/fuzz")
	}
	seeds := seedBatches()
	corpora := map[string][][]byte{
		"FuzzValidate": seeds,
		"FuzzBatches":  {bytes.Join(seeds, nil), bytes.Join(seeds[:3], nil), seeds[0][:len(seeds[0])-3]},
	}
	for name, inputs := range corpora {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, in := range inputs {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", in)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// FuzzValidate: Validate must never panic, must fail only with one of the
// package's sentinel errors, and whatever it accepts must decode, agree
// with its Summary, and survive a rebuild unchanged in meaning.
//
// The CRC would stop almost every mutation at the door, so each input is
// also tried with its length and CRC repaired, which lets the fuzzer reach
// the record walker and the decompressors.
func FuzzValidate(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		checkValidate(t, b)
		if len(b) >= HeaderSize {
			fixed := append([]byte(nil), b...)
			binary.BigEndian.PutUint32(fixed[lengthOffset:], uint32(len(fixed)-LogOverhead))
			checkValidate(t, fixCRC(fixed))
		}
	})
}

func checkValidate(t *testing.T, b []byte) {
	stored, _, serr := ValidateStored(b)
	h, s, err := ValidateSummary(b)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnsupportedMagic) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		if serr == nil {
			if _, err := Records(b); err != nil {
				t.Fatalf("ValidateStored accepted but Records failed: %v", err)
			}
		}
		return
	}
	if serr != nil || stored != h {
		t.Fatalf("Validate accepted what ValidateStored rejected: %v", serr)
	}
	recs, err := Records(b)
	if err != nil {
		t.Fatalf("Validate accepted but Records failed: %v", err)
	}
	if len(recs) != int(h.NumRecords) {
		t.Fatalf("%d records, header says %d", len(recs), h.NumRecords)
	}
	// ListOffsets -3 (KIP-734) answers the first record holding the
	// largest timestamp, as Records reports timestamps (LogAppendTime
	// included); the summary Validate computes must agree.
	maxTS, maxOff := recs[0].Timestamp, recs[0].Offset
	for i, r := range recs {
		if r.Offset != h.BaseOffset+int64(i) {
			t.Fatalf("record %d offset %d", i, r.Offset)
		}
		if r.Timestamp > maxTS {
			maxTS, maxOff = r.Timestamp, r.Offset
		}
	}
	if maxTS != s.MaxTimestamp || maxOff != s.OffsetOfMaxTimestamp {
		t.Fatalf("summary max timestamp %d at offset %d, records say %d at %d", s.MaxTimestamp, s.OffsetOfMaxTimestamp, maxTS, maxOff)
	}
	opts := BuildOptions{BaseOffset: h.BaseOffset, PartitionLeaderEpoch: h.PartitionLeaderEpoch, Codec: h.Codec(),
		Producer:      &ProducerInfo{ID: h.ProducerID, Epoch: h.ProducerEpoch, BaseSequence: h.BaseSequence},
		Transactional: h.Transactional(), Control: h.Control(), LogAppendTime: h.LogAppendTime(), AppendTime: h.MaxTimestamp}
	again, err := Records(Build(opts, recs))
	if err != nil {
		t.Fatalf("rebuilt batch does not decode: %v", err)
	}
	if !reflect.DeepEqual(again, recs) {
		t.Fatalf("rebuild changed records\n got %#v\nwant %#v", again, recs)
	}
}

// FuzzBatches: splitting never panics, and a successful split partitions
// the input exactly.
func FuzzBatches(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		batches, err := Batches(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedMagic) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if !bytes.Equal(bytes.Join(batches, nil), b) {
			t.Fatal("batches do not reassemble the input")
		}
		for i, batch := range batches {
			if n, err := BatchSize(batch); err != nil || n != len(batch) {
				t.Fatalf("batch %d: BatchSize %d, %v; len %d", i, n, err, len(batch))
			}
		}
	})
}
