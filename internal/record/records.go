package record

import "fmt"

// RecordHeader is one header of a record. (Header is the batch header.)
type RecordHeader struct {
	Key   string
	Value []byte // nil for a null value, distinct from empty
}

// Record is one decoded record with its offset and timestamp made absolute.
type Record struct {
	Offset     int64
	Timestamp  int64
	Key, Value []byte // nil for null (length -1), distinct from empty
	Headers    []RecordHeader
	Attributes int8 // unused by Kafka today; kept so re-encoding is exact
}

// Records decodes every record of the batch at the start of b. It does not
// check the CRC (use Validate on untrusted input) but does check framing
// and the record count, so it never returns half a batch. It accepts the
// gaps compaction leaves in offsets.
//
// For CodecNone, Key and Value alias b; otherwise they alias one freshly
// decompressed buffer. Timestamps of a LogAppendTime batch are all its
// MaxTimestamp, as Kafka's readers report them.
func Records(b []byte) ([]Record, error) {
	h, data, err := recordsSection(b)
	if err != nil {
		return nil, err
	}
	if h.NumRecords < 0 || int(h.NumRecords) > len(data)/7 { // a record is at least 7 bytes
		return nil, fmt.Errorf("%w: batch declares %d records in %d bytes", ErrInvalid, h.NumRecords, len(data))
	}
	recs := make([]Record, 0, h.NumRecords)
	var hdrs []RecordHeader // shared backing array for all records' headers
	r := recordReader{b: data}
	for i := int32(0); i < h.NumRecords; i++ {
		raw, err := r.next()
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: %w", ErrInvalid, i, err)
		}
		rec := Record{
			Offset:     h.BaseOffset + int64(raw.offsetDelta),
			Timestamp:  h.BaseTimestamp + raw.timestampDelta,
			Key:        raw.key,
			Value:      raw.value,
			Attributes: raw.attributes,
		}
		if h.LogAppendTime() {
			rec.Timestamp = h.MaxTimestamp
		}
		if raw.numHeaders > 0 {
			start := len(hdrs)
			hdrs = decodeHeaders(hdrs, raw.headers, raw.numHeaders)
			rec.Headers = hdrs[start:len(hdrs):len(hdrs)]
		}
		recs = append(recs, rec)
	}
	if r.pos != len(data) {
		return nil, fmt.Errorf("%w: %d bytes remain after the declared %d records", ErrInvalid, len(data)-r.pos, h.NumRecords)
	}
	return recs, nil
}

// recordsSection parses the header of the batch at the start of b and
// returns its records section, decompressed.
func recordsSection(b []byte) (Header, []byte, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.Size() > len(b) {
		return h, nil, fmt.Errorf("%w: truncated batch: length says %d bytes, have %d", ErrCorrupt, h.Size(), len(b))
	}
	data := b[HeaderSize:h.Size()]
	if c := h.Codec(); c != CodecNone {
		if data, err = decompress(nil, c, data, MaxDecompressedSize); err != nil {
			return h, nil, err
		}
	}
	return h, data, nil
}
