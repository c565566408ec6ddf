package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Byte offsets of the fields of a v2 record batch header. The CRC covers
// everything from attributesOffset to the end of the batch, so baseOffset and
// partitionLeaderEpoch can be rewritten without recomputing it.
const (
	baseOffsetOffset    = 0  // int64
	lengthOffset        = 8  // int32: bytes after this field
	leaderEpochOffset   = 12 // int32
	magicOffset         = 16 // int8
	crcOffset           = 17 // uint32, CRC-32C
	attributesOffset    = 21 // int16
	lastOffsetDeltaOff  = 23 // int32
	baseTimestampOffset = 27 // int64
	maxTimestampOffset  = 35 // int64
	producerIDOffset    = 43 // int64
	producerEpochOffset = 51 // int16
	baseSequenceOffset  = 53 // int32
	recordCountOffset   = 57 // int32
	HeaderSize          = 61 // bytes before the first record
	LogOverhead         = 12 // baseOffset + length: bytes not counted by length
	CurrentMagic        = 2
)

// Attribute bits.
const (
	compressionMask  = 0x07
	timestampTypeBit = 0x08
	transactionalBit = 0x10
	controlBit       = 0x20
	deleteHorizonBit = 0x40
)

// Codec is a record batch compression codec, numbered as on the wire.
type Codec int8

// The codecs Kafka defines.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Errors returned by parsing and validation. Callers map them to Kafka error
// codes: ErrCorrupt → CORRUPT_MESSAGE, ErrUnsupportedMagic →
// UNSUPPORTED_VERSION (Kafka 4 refuses v0/v1 produce), ErrInvalid →
// INVALID_RECORD.
var (
	ErrCorrupt          = errors.New("corrupt record batch")
	ErrUnsupportedMagic = errors.New("unsupported record batch magic")
	ErrInvalid          = errors.New("invalid record batch")
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Header is the decoded fixed part of a v2 record batch.
type Header struct {
	BaseOffset           int64
	Length               int32 // bytes after the Length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// ParseHeader decodes the header at the start of b. It checks only that the
// header is present and its magic is 2; it does not check the CRC or that
// the whole batch is in b (see Validate and BatchSize).
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		if len(b) > magicOffset && b[magicOffset] != CurrentMagic {
			return Header{}, fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, int8(b[magicOffset]))
		}
		return Header{}, fmt.Errorf("%w: %d bytes is shorter than a batch header", ErrCorrupt, len(b))
	}
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[baseOffsetOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[lengthOffset:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[leaderEpochOffset:])),
		Magic:                int8(b[magicOffset]),
		CRC:                  binary.BigEndian.Uint32(b[crcOffset:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[attributesOffset:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[lastOffsetDeltaOff:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[baseTimestampOffset:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[maxTimestampOffset:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[producerIDOffset:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[producerEpochOffset:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[baseSequenceOffset:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[recordCountOffset:])),
	}
	if h.Magic != CurrentMagic {
		return h, fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, h.Magic)
	}
	if h.Length < HeaderSize-LogOverhead {
		return h, fmt.Errorf("%w: batch length %d is shorter than a header", ErrCorrupt, h.Length)
	}
	return h, nil
}

// Size is the batch's total size in bytes, header included.
func (h Header) Size() int { return int(h.Length) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch's last record.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the batch's compression codec.
func (h Header) Codec() Codec { return Codec(h.Attributes & compressionMask) }

// LogAppendTime reports whether the batch's timestamps are broker-assigned.
func (h Header) LogAppendTime() bool { return h.Attributes&timestampTypeBit != 0 }

// Transactional reports whether the batch is part of a transaction.
func (h Header) Transactional() bool { return h.Attributes&transactionalBit != 0 }

// Control reports whether the batch holds control records (transaction markers).
func (h Header) Control() bool { return h.Attributes&controlBit != 0 }

// Idempotent reports whether the batch carries a producer id.
func (h Header) Idempotent() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record, wrapping at
// MaxInt32 as Kafka does.
func (h Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 0x7fffffff {
		s -= 0x80000000
	}
	return int32(s)
}

// SetBaseOffset rewrites the base offset of the batch at the start of b.
// The CRC does not cover it.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[baseOffsetOffset:], uint64(offset))
}

// SetPartitionLeaderEpoch rewrites the leader epoch of the batch at the start
// of b. The CRC does not cover it.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[leaderEpochOffset:], uint32(epoch))
}

// SetLogAppendTime marks the batch at the start of b as carrying
// broker-assigned timestamps, sets its max timestamp to ts and recomputes the
// CRC. Records are not touched: readers take every record's timestamp from
// the max timestamp of a LogAppendTime batch.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[attributesOffset:]) | timestampTypeBit
	binary.BigEndian.PutUint16(b[attributesOffset:], attrs)
	binary.BigEndian.PutUint64(b[maxTimestampOffset:], uint64(ts))
	binary.BigEndian.PutUint32(b[crcOffset:], ComputeCRC(b))
}

// SetPartitionLeaderEpoch is the function SetPartitionLeaderEpoch on b,
// the batch h was parsed from, that keeps h what ParseHeader(b) would now
// return.
func (h *Header) SetPartitionLeaderEpoch(b []byte, epoch int32) {
	SetPartitionLeaderEpoch(b, epoch)
	h.PartitionLeaderEpoch = epoch
}

// SetLogAppendTime is the function SetLogAppendTime on b, the batch h was
// parsed from, that keeps h what ParseHeader(b) would now return.
func (h *Header) SetLogAppendTime(b []byte, ts int64) {
	SetLogAppendTime(b, ts)
	h.Attributes |= timestampTypeBit
	h.MaxTimestamp = ts
	h.CRC = binary.BigEndian.Uint32(b[crcOffset:])
}

// SetMaxTimestamp is the function SetMaxTimestamp on b, the batch h was
// parsed from, that keeps h what ParseHeader(b) would now return.
func (h *Header) SetMaxTimestamp(b []byte, ts int64) {
	SetMaxTimestamp(b, ts)
	h.MaxTimestamp = ts
	h.CRC = binary.BigEndian.Uint32(b[crcOffset:])
}

// ComputeCRC returns the CRC-32C of the batch at the start of b, computed over
// the bytes from the attributes field to the end of the batch. If the length
// field points outside b, the CRC covers only the bytes b holds (so it will
// not match the stored one) rather than panicking on untrusted input.
func ComputeCRC(b []byte) uint32 {
	if len(b) < attributesOffset {
		return 0
	}
	n := int(int32(binary.BigEndian.Uint32(b[lengthOffset:]))) + LogOverhead
	n = max(attributesOffset, min(n, len(b)))
	return crc32.Checksum(b[attributesOffset:n], crc32c)
}
