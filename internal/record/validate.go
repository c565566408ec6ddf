package record

import (
	"encoding/binary"
	"fmt"
)

// Summary is what validation learns from walking a batch's records. The
// broker needs it to do what Kafka's LogValidator does after the checks:
// correct a wrong MaxTimestamp in the header (SetMaxTimestamp), enforce
// message.timestamp.before/after.max.ms (MinTimestamp, MaxTimestamp) and
// refuse keyless records on compacted topics (NullKeys).
type Summary struct {
	// MinTimestamp and MaxTimestamp are the smallest and largest record
	// timestamps, absolute. For LogAppendTime batches both are the
	// header's MaxTimestamp. -1 when the batch has no records.
	MinTimestamp, MaxTimestamp int64
	// OffsetOfMaxTimestamp is the absolute offset (header BaseOffset plus
	// delta) of the first record whose timestamp is MaxTimestamp.
	OffsetOfMaxTimestamp int64
	// NullKeys counts records with a null key.
	NullKeys int
	// UncompressedSize is the size of the records section after
	// decompression (equal to its wire size for CodecNone).
	UncompressedSize int
}

// Validate checks that b holds exactly one well-formed v2 record batch as a
// producer must send it, and returns its header. It checks, in Kafka's
// order: the header and magic (ErrUnsupportedMagic for v0/v1), that the
// length field matches len(b) and the CRC-32C matches (ErrCorrupt, Kafka's
// CORRUPT_MESSAGE), then that the batch has at least one record, that
// LastOffsetDelta == NumRecords-1, that the (decompressed) records section
// holds exactly NumRecords well-framed records with offset deltas 0..n-1
// (ErrInvalid, Kafka's INVALID_RECORD). A records section that does not
// decompress is ErrCorrupt.
//
// Validate does not apply the rules Kafka keeps for appends from clients
// (base offset 0, no control batches, sequence set when a producer id is):
// see CheckProduce. For CodecNone it allocates nothing.
func Validate(b []byte) (Header, error) {
	h, _, err := ValidateSummary(b)
	return h, err
}

// ValidateSummary is Validate that also returns what it learned about the
// records.
func ValidateSummary(b []byte) (Header, Summary, error) {
	return validate(b, walkProduce, nil)
}

// ValidateSummaryBudget is ValidateSummary with the memory that
// decompressing b needs in proportion to its size (a zstd window, a snappy
// block) charged to budget, waiting while the budget is spent. The broker
// validates produced batches this way; a nil budget is unbounded.
func ValidateSummaryBudget(b []byte, budget *Budget) (Header, Summary, error) {
	return validate(b, walkProduce, budget)
}

// ValidateStored is Validate for batches that have already been through a
// log: read back from disk or fetched from a leader. Compaction leaves such
// batches with gaps between offset deltas and possibly no records at all,
// so it requires only that deltas increase and stay within LastOffsetDelta.
func ValidateStored(b []byte) (Header, Summary, error) {
	return validate(b, walkStored, nil)
}

// ValidateParsed is ValidateSummaryBudget for a batch whose header the
// caller has parsed already: h is what ParseHeader(b) returned, without
// error. The produce path parses a batch's header once, in the broker, and
// hands it down to the append.
func ValidateParsed(b []byte, h Header, budget *Budget) (Summary, error) {
	return validateParsed(b, h, walkProduce, budget)
}

func validate(b []byte, mode walkMode, budget *Budget) (Header, Summary, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, Summary{}, err
	}
	s, err := validateParsed(b, h, mode, budget)
	return h, s, err
}

func validateParsed(b []byte, h Header, mode walkMode, budget *Budget) (Summary, error) {
	var s Summary
	if h.Size() != len(b) {
		return s, fmt.Errorf("%w: batch length field says %d bytes, have %d", ErrCorrupt, h.Size(), len(b))
	}
	if crc := ComputeCRC(b); crc != h.CRC {
		return s, fmt.Errorf("%w: stored crc %d, computed crc %d", ErrCorrupt, h.CRC, crc)
	}
	if err := checkCounts(&h, mode); err != nil {
		return s, err
	}
	data := b[HeaderSize:]
	switch c := h.Codec(); c {
	case CodecNone:
		return s, walk(data, &h, mode, &s)
	case CodecGzip, CodecSnappy, CodecLZ4, CodecZstd:
		d := getDecompressor(budget)
		defer d.close()
		r, err := d.open(c, data, MaxDecompressedSize)
		if err != nil {
			return s, corruptErr(c, err)
		}
		d.stream.reset(r, MaxDecompressedSize)
		return s, walkStream(&d.stream, &h, mode, &s)
	default:
		return s, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, int8(c))
	}
}

// checkCounts applies Kafka's LogValidator.validateBatch offset/count rules.
func checkCounts(h *Header, mode walkMode) error {
	if mode == walkStored {
		if h.NumRecords < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1 {
			return fmt.Errorf("%w: %d records do not fit offset range [%d, %d]",
				ErrInvalid, h.NumRecords, h.BaseOffset, h.LastOffset())
		}
		return nil
	}
	if int64(h.LastOffsetDelta)+1 <= 0 {
		return fmt.Errorf("%w: batch has an invalid offset range [%d, %d]", ErrInvalid, h.BaseOffset, h.LastOffset())
	}
	if h.NumRecords <= 0 {
		return fmt.Errorf("%w: invalid reported count for record batch: %d", ErrInvalid, h.NumRecords)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return fmt.Errorf("%w: inconsistent batch offset range [%d, %d] and count of records %d",
			ErrInvalid, h.BaseOffset, h.LastOffset(), h.NumRecords)
	}
	return nil
}

// CheckProduce applies the rules Kafka enforces only on batches appended by
// clients (UnifiedLog.analyzeAndValidateRecords and
// LogValidator.validateBatch with origin CLIENT), all reported as
// INVALID_RECORD: the base offset must be 0, clients may not write control
// batches, and an idempotent batch must carry a base sequence.
func CheckProduce(h Header) error {
	if h.BaseOffset != 0 {
		return fmt.Errorf("%w: the base offset of the record batch in a produce request should be 0, but it is %d", ErrInvalid, h.BaseOffset)
	}
	if h.Control() {
		return fmt.Errorf("%w: clients are not allowed to write control records", ErrInvalid)
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return fmt.Errorf("%w: invalid sequence number %d in record batch with producerId %d", ErrInvalid, h.BaseSequence, h.ProducerID)
	}
	return nil
}

// SetMaxTimestamp rewrites the max timestamp of the batch at the start of b
// and recomputes the CRC. Kafka's broker does this for CreateTime batches
// whose header disagrees with their records' largest timestamp.
func SetMaxTimestamp(b []byte, ts int64) {
	binary.BigEndian.PutUint64(b[maxTimestampOffset:], uint64(ts))
	binary.BigEndian.PutUint32(b[crcOffset:], ComputeCRC(b))
}
