package record

import (
	"fmt"
	"io"
	"math"
)

// Compressed batches are validated as Kafka's LogValidator does it: by
// streaming the decompressed records through a small window and checking
// each as it passes, never holding the whole records section. Keys, values
// and header values are skipped, not copied, so a record of any size costs
// only the window.

// streamWindow is the buffer a compressed records section streams through.
const streamWindow = 32 << 10

// streamReader reads the decompressed records section from r through buf.
type streamReader struct {
	r      io.Reader
	buf    []byte
	lo, hi int   // unread bytes are buf[lo:hi]
	base   int64 // stream offset of buf[0]
	limit  int64 // the stream may not be longer
	err    error // io.EOF at the end, or why the stream failed; sticky
}

func (s *streamReader) reset(r io.Reader, limit int) {
	if s.buf == nil {
		s.buf = make([]byte, streamWindow)
	}
	s.r, s.lo, s.hi, s.base, s.limit, s.err = r, 0, 0, 0, int64(limit), nil
}

// off is the stream offset of the next unread byte.
func (s *streamReader) off() int64 { return s.base + int64(s.lo) }

// fill buffers at least n unread bytes (n is at most a varint's length)
// and reports whether it could before the stream ended or failed.
func (s *streamReader) fill(n int) bool {
	for s.hi-s.lo < n {
		if s.err != nil {
			return false
		}
		if s.lo > 0 {
			copy(s.buf, s.buf[s.lo:s.hi])
			s.base += int64(s.lo)
			s.hi -= s.lo
			s.lo = 0
		}
		m, err := s.r.Read(s.buf[s.hi:])
		s.hi += m
		switch {
		case s.base+int64(s.hi) > s.limit:
			s.err = fmt.Errorf("%w: %w", ErrCorrupt, errTooLarge)
		case err != nil:
			s.err = err
		}
	}
	return true
}

// drain reads to the end of the stream, so that a decompression error (a
// bad checksum in a trailer, say) is found, and returns how many bytes
// were left unread.
func (s *streamReader) drain() int64 {
	from := s.off()
	for s.err == nil {
		s.lo = s.hi
		s.fill(1)
	}
	return s.base + int64(s.hi) - from
}

// failed is the decompression error that ended the stream, if any.
func (s *streamReader) failed() error {
	if s.err == io.EOF {
		return nil
	}
	return s.err
}

// varint reads a varint int32 lying wholly before stream offset end.
func (s *streamReader) varint(end int64) (int32, error) {
	s.fill(5)
	b := s.buf[s.lo:s.hi]
	if rem := end - s.off(); int64(len(b)) > rem {
		b = b[:max(rem, 0)]
	}
	v, n := readVarint(b)
	if n <= 0 {
		return 0, varintErr(n)
	}
	s.lo += n
	return v, nil
}

func (s *streamReader) varlong(end int64) (int64, error) {
	s.fill(10)
	b := s.buf[s.lo:s.hi]
	if rem := end - s.off(); int64(len(b)) > rem {
		b = b[:max(rem, 0)]
	}
	v, n := readVarlong(b)
	if n <= 0 {
		return 0, varintErr(n)
	}
	s.lo += n
	return v, nil
}

// skip discards n bytes, reporting whether the stream held them.
func (s *streamReader) skip(n int64) bool {
	for {
		if avail := int64(s.hi - s.lo); n <= avail {
			s.lo += int(n)
			return true
		} else {
			n -= avail
		}
		s.lo = s.hi
		if !s.fill(1) {
			return false
		}
	}
}

// bytesField skips a varint length and that many bytes, not past end, and
// reports whether the length was -1 (null). nullable says whether it may be.
func (s *streamReader) bytesField(end int64, nullable bool) (bool, error) {
	l, err := s.varint(end)
	if err != nil {
		return false, err
	}
	if l < 0 {
		if l == -1 && nullable {
			return true, nil
		}
		return false, errNegative
	}
	if int64(l) > end-s.off() || !s.skip(int64(l)) {
		return false, errTruncated
	}
	return false, nil
}

// streamRecord is what validation needs of one record.
type streamRecord struct {
	timestampDelta int64
	offsetDelta    int32
	nullKey        bool
}

// next checks the framing of the next record as recordReader.next does
// and skips past it.
func (s *streamReader) next() (streamRecord, error) {
	var rec streamRecord
	size, err := s.varint(math.MaxInt64)
	if err != nil {
		return rec, err
	}
	if size < 0 {
		return rec, errNegative
	}
	if size == 0 {
		return rec, errSizeMatch
	}
	end := s.off() + int64(size)
	if !s.skip(1) { // attributes, unused
		return rec, errTruncated
	}
	if rec.timestampDelta, err = s.varlong(end); err != nil {
		return rec, err
	}
	if rec.offsetDelta, err = s.varint(end); err != nil {
		return rec, err
	}
	if rec.nullKey, err = s.bytesField(end, true); err != nil {
		return rec, err
	}
	if _, err = s.bytesField(end, true); err != nil {
		return rec, err
	}
	numHeaders, err := s.varint(end)
	if err != nil {
		return rec, err
	}
	if numHeaders < 0 {
		return rec, errNegative
	}
	if int64(numHeaders) > (end-s.off())/2 {
		return rec, errTruncated
	}
	for i := int32(0); i < numHeaders; i++ {
		if _, err = s.bytesField(end, false); err != nil {
			return rec, err
		}
		if _, err = s.bytesField(end, true); err != nil {
			return rec, err
		}
	}
	if s.off() != end {
		return rec, errSizeMatch
	}
	return rec, nil
}

// walkStream is walk for a records section read from s. It accepts and
// refuses exactly what walk does on the whole decompressed section, and a
// decompression failure anywhere in the stream (checked to its end) wins
// over a framing error, as it would if the section were decompressed
// first.
func walkStream(s *streamReader, h *Header, mode walkMode, sum *Summary) error {
	err := walkRecords(s, h, mode, sum)
	if err != nil {
		s.drain()
	}
	if ferr := s.failed(); ferr != nil {
		return corruptErr(h.Codec(), ferr)
	}
	return err
}

func walkRecords(s *streamReader, h *Header, mode walkMode, sum *Summary) error {
	sum.start()
	prev := int32(-1)
	for i := int32(0); i < h.NumRecords; i++ {
		if !s.fill(1) {
			return fmt.Errorf("%w: batch declares %d records but holds %d", ErrInvalid, h.NumRecords, i)
		}
		rec, err := s.next()
		if err != nil {
			return fmt.Errorf("%w: record %d: %w", ErrInvalid, i, err)
		}
		if err := sum.add(h, mode, i, &prev, rec.offsetDelta, rec.timestampDelta, rec.nullKey); err != nil {
			return err
		}
	}
	if left := s.drain(); left > 0 {
		return fmt.Errorf("%w: %d bytes remain after the declared %d records", ErrInvalid, left, h.NumRecords)
	}
	sum.UncompressedSize = int(s.off())
	return nil
}
