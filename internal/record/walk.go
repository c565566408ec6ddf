package record

import (
	"errors"
	"fmt"
)

// rawRecord is one record as framed on the wire, with slices aliasing the
// records section it was read from. It is a value type so that walking a
// batch allocates nothing.
type rawRecord struct {
	attributes     int8
	timestampDelta int64
	offsetDelta    int32
	key, value     []byte // nil when the length is -1
	numHeaders     int32
	headers        []byte // the encoded headers, already checked
}

// Reasons a record is malformed. They are wrapped with ErrInvalid: Kafka
// reads record framing only after the batch CRC has matched, and reports
// what it then finds wrong as InvalidRecordException (INVALID_RECORD).
var (
	errTruncated = errors.New("record extends past the end of the batch")
	errOverflow  = errors.New("varint overflows its type")
	errNegative  = errors.New("negative length")
	errSizeMatch = errors.New("record length does not match its fields")
)

// recordReader walks the records section of a batch.
type recordReader struct {
	b   []byte
	pos int
}

// varint reads a varint int32 at r.pos, not past end.
func (r *recordReader) varint(end int) (int32, error) {
	v, n := readVarint(r.b[r.pos:end])
	if n <= 0 {
		if n == 0 {
			return 0, errTruncated
		}
		return 0, errOverflow
	}
	r.pos += n
	return v, nil
}

// bytesField reads a varint length and that many bytes; length -1 is nil.
// nullable says whether -1 is allowed (header keys may not be null).
func (r *recordReader) bytesField(end int, nullable bool) ([]byte, error) {
	l, err := r.varint(end)
	if err != nil {
		return nil, err
	}
	if l < 0 {
		if l == -1 && nullable {
			return nil, nil
		}
		return nil, errNegative
	}
	if int(l) > end-r.pos {
		return nil, errTruncated
	}
	p := r.b[r.pos : r.pos+int(l) : r.pos+int(l)]
	r.pos += int(l)
	return p, nil
}

// next decodes the record at r.pos and advances past it.
func (r *recordReader) next() (rawRecord, error) {
	var rec rawRecord
	size, err := r.varint(len(r.b))
	if err != nil {
		return rec, err
	}
	if size < 0 {
		return rec, errNegative
	}
	if int(size) > len(r.b)-r.pos {
		return rec, errTruncated
	}
	end := r.pos + int(size)
	if r.pos >= end {
		return rec, errSizeMatch
	}
	rec.attributes = int8(r.b[r.pos])
	r.pos++
	ts, n := readVarlong(r.b[r.pos:end])
	if n <= 0 {
		return rec, varintErr(n)
	}
	r.pos += n
	rec.timestampDelta = ts
	if rec.offsetDelta, err = r.varint(end); err != nil {
		return rec, err
	}
	if rec.key, err = r.bytesField(end, true); err != nil {
		return rec, err
	}
	if rec.value, err = r.bytesField(end, true); err != nil {
		return rec, err
	}
	if rec.numHeaders, err = r.varint(end); err != nil {
		return rec, err
	}
	if rec.numHeaders < 0 {
		return rec, errNegative
	}
	// Each header takes at least two bytes; checking first keeps a huge
	// count from driving a long loop (and Records from allocating for it).
	if int(rec.numHeaders) > (end-r.pos)/2 {
		return rec, errTruncated
	}
	hstart := r.pos
	for i := int32(0); i < rec.numHeaders; i++ {
		if _, err = r.bytesField(end, false); err != nil {
			return rec, err
		}
		if _, err = r.bytesField(end, true); err != nil {
			return rec, err
		}
	}
	rec.headers = r.b[hstart:r.pos:r.pos]
	if r.pos != end {
		return rec, errSizeMatch
	}
	return rec, nil
}

// skip checks the framing of the record at r.pos exactly as next does and
// advances past it, returning only what validation keeps (walk): it
// builds no rawRecord, which is most of the cost of a small record. It
// is the produce path's per-record loop, so it keeps its position in a
// local and decodes the one- and two-byte varints of small records
// inline (varintAt); the errors are next's.
func (r *recordReader) skip() (offsetDelta int32, timestampDelta int64, nullKey bool, err error) {
	b := r.b
	size, pos := varintAt(b, r.pos, len(b))
	if pos <= 0 {
		return 0, 0, false, varintErr(pos)
	}
	if size < 0 {
		return 0, 0, false, errNegative
	}
	if int(size) > len(b)-pos {
		return 0, 0, false, errTruncated
	}
	end := pos + int(size)
	if pos >= end {
		return 0, 0, false, errSizeMatch
	}
	pos++ // attributes
	ts, n := readVarlong(b[pos:end])
	if n <= 0 {
		return 0, 0, false, varintErr(n)
	}
	pos += n
	if offsetDelta, pos = varintAt(b, pos, end); pos <= 0 {
		return 0, 0, false, varintErr(pos)
	}
	var l int32
	if l, pos = varintAt(b, pos, end); pos <= 0 { // key
		return 0, 0, false, varintErr(pos)
	}
	switch {
	case l == -1:
		nullKey = true
	case l < 0:
		return 0, 0, false, errNegative
	case int(l) > end-pos:
		return 0, 0, false, errTruncated
	default:
		pos += int(l)
	}
	if l, pos = varintAt(b, pos, end); pos <= 0 { // value
		return 0, 0, false, varintErr(pos)
	}
	switch {
	case l == -1:
	case l < 0:
		return 0, 0, false, errNegative
	case int(l) > end-pos:
		return 0, 0, false, errTruncated
	default:
		pos += int(l)
	}
	numHeaders, pos := varintAt(b, pos, end)
	if pos <= 0 {
		return 0, 0, false, varintErr(pos)
	}
	if numHeaders < 0 {
		return 0, 0, false, errNegative
	}
	if int(numHeaders) > (end-pos)/2 {
		return 0, 0, false, errTruncated
	}
	r.pos = pos
	for i := int32(0); i < numHeaders; i++ {
		if _, err = r.skipBytes(end, false); err != nil {
			return 0, 0, false, err
		}
		if _, err = r.skipBytes(end, true); err != nil {
			return 0, 0, false, err
		}
	}
	if r.pos != end {
		return 0, 0, false, errSizeMatch
	}
	return offsetDelta, ts, nullKey, nil
}

// varintAt decodes the zigzag varint int32 at b[pos:end] and returns it
// and the position after it; that position is 0 when the bytes end
// early and -1 when the encoding overflows (readVarint's n). It decodes
// one- and two-byte encodings (every length and delta of a record under
// 8 KiB) itself, without slicing b.
func varintAt(b []byte, pos, end int) (int32, int) {
	if pos >= 0 && pos+1 < end && end <= len(b) {
		c0, c1 := b[pos], b[pos+1]
		if c0 < 0x80 {
			return int32(c0>>1) ^ -int32(c0&1), pos + 1
		}
		if c1 < 0x80 {
			x := uint32(c0&0x7f) | uint32(c1)<<7
			return int32(x>>1) ^ -int32(x&1), pos + 2
		}
	}
	return varintAtSlow(b, pos, end)
}

// varintAtSlow is varintAt for the rest: longer encodings and a varint
// in the last byte of a record.
func varintAtSlow(b []byte, pos, end int) (int32, int) {
	if pos < 0 || pos > end || end > len(b) {
		return 0, 0
	}
	v, n := readVarint(b[pos:end])
	if n <= 0 {
		return 0, n
	}
	return v, pos + n
}

// skipBytes is bytesField without the slice; null reports length -1.
func (r *recordReader) skipBytes(end int, nullable bool) (null bool, err error) {
	l, err := r.varint(end)
	if err != nil {
		return false, err
	}
	if l < 0 {
		if l == -1 && nullable {
			return true, nil
		}
		return false, errNegative
	}
	if int(l) > end-r.pos {
		return false, errTruncated
	}
	r.pos += int(l)
	return false, nil
}

func varintErr(n int) error {
	if n == 0 {
		return errTruncated
	}
	return errOverflow
}

// decodeHeaders decodes headers that next has already checked.
func decodeHeaders(dst []RecordHeader, raw []byte, n int32) []RecordHeader {
	r := recordReader{b: raw}
	for i := int32(0); i < n; i++ {
		k, _ := r.bytesField(len(raw), false)
		v, _ := r.bytesField(len(raw), true)
		dst = append(dst, RecordHeader{Key: string(k), Value: v})
	}
	return dst
}

// walkMode says which offset deltas a walk accepts.
type walkMode int

const (
	// walkProduce requires offset deltas 0, 1, ..., n-1, as a producer
	// must write them.
	walkProduce walkMode = iota
	// walkStored allows gaps (compaction removes records) but requires
	// strictly increasing deltas within the batch's offset range.
	walkStored
)

// walk checks every record of data, the (decompressed) records section of
// the batch with header h, and fills s with what it learns.
func walk(data []byte, h *Header, mode walkMode, s *Summary) error {
	r := recordReader{b: data}
	s.start()
	prev := int32(-1)
	for i := int32(0); i < h.NumRecords; i++ {
		if r.pos >= len(data) {
			return fmt.Errorf("%w: batch declares %d records but holds %d", ErrInvalid, h.NumRecords, i)
		}
		offsetDelta, timestampDelta, nullKey, err := r.skip()
		if err != nil {
			return fmt.Errorf("%w: record %d: %w", ErrInvalid, i, err)
		}
		if err := s.add(h, mode, i, &prev, offsetDelta, timestampDelta, nullKey); err != nil {
			return err
		}
	}
	if r.pos != len(data) {
		return fmt.Errorf("%w: %d bytes remain after the declared %d records", ErrInvalid, len(data)-r.pos, h.NumRecords)
	}
	s.UncompressedSize = len(data)
	return nil
}

// start prepares s for a walk.
func (s *Summary) start() {
	s.MaxTimestamp = -1
	s.MinTimestamp = -1
	s.OffsetOfMaxTimestamp = -1
}

// add checks record i's offset delta against mode and the previous
// record's, *prev (-1 before the first), and counts the record.
func (s *Summary) add(h *Header, mode walkMode, i int32, prev *int32, offsetDelta int32, timestampDelta int64, nullKey bool) error {
	switch mode {
	case walkProduce:
		if offsetDelta != i {
			return fmt.Errorf("%w: record %d has offset delta %d, want %d", ErrInvalid, i, offsetDelta, i)
		}
	case walkStored:
		if offsetDelta <= *prev || offsetDelta > h.LastOffsetDelta {
			return fmt.Errorf("%w: record %d has offset delta %d after %d (last offset delta %d)",
				ErrInvalid, i, offsetDelta, *prev, h.LastOffsetDelta)
		}
	}
	*prev = offsetDelta
	ts := h.BaseTimestamp + timestampDelta
	if h.LogAppendTime() {
		ts = h.MaxTimestamp
	}
	if i == 0 || ts > s.MaxTimestamp {
		s.MaxTimestamp = ts
		s.OffsetOfMaxTimestamp = h.BaseOffset + int64(offsetDelta)
	}
	if i == 0 || ts < s.MinTimestamp {
		s.MinTimestamp = ts
	}
	if nullKey {
		s.NullKeys++
	}
	return nil
}
