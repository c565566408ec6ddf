package record

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests check our encoding against franz-go's independent one: kmsg
// for the batch and record structs, kgo's compressor and decompressor for
// the codecs (kgo writes xerial snappy like the Java client).

var kgoCodecs = map[Codec]kgo.CompressionCodec{
	CodecNone: kgo.NoCompression(), CodecGzip: kgo.GzipCompression(), CodecSnappy: kgo.SnappyCompression(),
	CodecLZ4: kgo.Lz4Compression(), CodecZstd: kgo.ZstdCompression(),
}

// kmsgBatch encodes recs the way franz-go's producer does.
func kmsgBatch(t *testing.T, c Codec, baseOffset int64, recs []Record) []byte {
	t.Helper()
	var section []byte
	for i, r := range recs {
		kr := kmsg.Record{Attributes: r.Attributes, TimestampDelta64: r.Timestamp - recs[0].Timestamp,
			OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil)[1:] // Length 0 encodes as one byte; drop it
		kr.Length = int32(len(body))
		section = kr.AppendTo(section)
	}
	if c != CodecNone {
		comp, err := kgo.DefaultCompressor(kgoCodecs[c])
		if err != nil {
			t.Fatal(err)
		}
		z, used := comp.Compress(new(bytes.Buffer), section)
		if used != kgo.CompressionCodecType(c) {
			t.Fatalf("kgo used codec %d, want %d", used, c)
		}
		section = append([]byte(nil), z...)
	}
	maxTS := recs[0].Timestamp
	for _, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
	}
	kb := kmsg.RecordBatch{FirstOffset: baseOffset, PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(c),
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: recs[0].Timestamp, MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)), Records: section}
	kb.Length = int32(HeaderSize - LogOverhead + len(section))
	b := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestFranzBatchesValidateAndDecode(t *testing.T) {
	recs := sampleRecords()
	for _, c := range allCodecs {
		b := kmsgBatch(t, c, 7, recs)
		h, err := Validate(b)
		if err != nil {
			t.Fatalf("%v: franz-go batch rejected: %v", c, err)
		}
		if h.NumRecords != 4 || h.Codec() != c || h.BaseOffset != 7 {
			t.Fatalf("%v: header %+v", c, h)
		}
		got, err := Records(b)
		if err != nil {
			t.Fatal(err)
		}
		want := sampleRecords()
		for i := range want {
			want[i].Offset = 7 + int64(i)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: decoded\n got %#v\nwant %#v", c, got, want)
		}
		if c == CodecNone {
			if ours := Build(BuildOptions{BaseOffset: 7, PartitionLeaderEpoch: -1}, recs); !bytes.Equal(ours, b) {
				t.Fatalf("uncompressed batch differs from franz-go's:\n ours % x\nfranz % x", ours, b)
			}
		}
	}
}

func TestOurBatchesDecodeWithFranz(t *testing.T) {
	recs := append(sampleRecords(), randomRecords(50, 2000, 3)...)
	for i := range recs {
		recs[i].Timestamp = 1_700_000_000_000 + int64(i%7)
	}
	dec := kgo.DefaultDecompressor()
	for _, c := range allCodecs {
		b := Build(BuildOptions{BaseOffset: 1, Codec: c}, recs)
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil {
			t.Fatalf("%v: kmsg ReadFrom: %v", c, err)
		}
		if uint32(kb.CRC) != crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) {
			t.Fatalf("%v: CRC does not match an independent CRC-32C", c)
		}
		section, err := dec.Decompress(kb.Records, kgo.CompressionCodecType(c))
		if err != nil {
			t.Fatalf("%v: franz-go cannot decompress our batch: %v", c, err)
		}
		for i := range recs {
			var kr kmsg.Record
			if err := kr.ReadFrom(section); err != nil {
				t.Fatalf("%v: record %d: %v", c, i, err)
			}
			section = section[sizeVarint(kr.Length)+int(kr.Length):]
			r := recs[i]
			if kr.OffsetDelta != int32(i) || kb.FirstTimestamp+kr.TimestampDelta64 != r.Timestamp ||
				!bytes.Equal(kr.Key, r.Key) || (kr.Key == nil) != (r.Key == nil) ||
				!bytes.Equal(kr.Value, r.Value) || (kr.Value == nil) != (r.Value == nil) || len(kr.Headers) != len(r.Headers) {
				t.Fatalf("%v: record %d differs: %+v", c, i, kr)
			}
		}
		if len(section) != 0 {
			t.Fatalf("%v: %d bytes left over", c, len(section))
		}
	}
}
