package record

import (
	"encoding/binary"
	"math/rand/v2"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// sampleRecords covers the cases encoders get wrong: null versus empty key
// and value, headers with null values, timestamps below the base.
func sampleRecords() []Record {
	return []Record{
		{Timestamp: 1_700_000_000_000, Key: []byte("k0"), Value: []byte("v0")},
		{Timestamp: 1_700_000_000_500, Key: nil, Value: []byte{}},
		{Timestamp: 1_699_999_999_000, Key: []byte{}, Value: nil,
			Headers: []RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "", Value: nil}, {Key: "h3", Value: []byte{}}}},
		{Timestamp: 1_700_000_000_500, Key: []byte("k3"), Value: make([]byte, 300), Attributes: 0},
	}
}

// randomRecords makes n records with size-byte random values, seeded so
// benchmarks and tests are repeatable.
func randomRecords(n, size int, seed uint64) []Record {
	r := rand.New(rand.NewPCG(seed, seed))
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		recs[i] = Record{Timestamp: 1_700_000_000_000 + int64(i), Key: []byte{byte(i)}, Value: v}
	}
	return recs
}

// rawBatch assembles a batch from hand-encoded records, for shapes Build
// refuses to make (gaps, wrong deltas). The CRC is correct.
func rawBatch(h Header, records []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	binary.BigEndian.PutUint64(b[baseOffsetOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[leaderEpochOffset:], uint32(h.PartitionLeaderEpoch))
	b[magicOffset] = CurrentMagic
	binary.BigEndian.PutUint16(b[attributesOffset:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(b[lastOffsetDeltaOff:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[baseTimestampOffset:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[maxTimestampOffset:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[producerIDOffset:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[producerEpochOffset:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[baseSequenceOffset:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[recordCountOffset:], uint32(h.NumRecords))
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[lengthOffset:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[crcOffset:], ComputeCRC(b))
	return b
}

// fixCRC recomputes the CRC after a test mutates a batch.
func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[crcOffset:], ComputeCRC(b))
	return b
}
