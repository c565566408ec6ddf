package record

import (
	"encoding/binary"
	"fmt"
)

// BatchSize returns the total size of the batch at the start of b, as its
// length field declares, without checking that b holds that much. It needs
// only the first LogOverhead bytes.
func BatchSize(b []byte) (int, error) {
	if len(b) < LogOverhead {
		return 0, fmt.Errorf("%w: %d bytes is shorter than a batch's offset and length", ErrCorrupt, len(b))
	}
	l := int32(binary.BigEndian.Uint32(b[lengthOffset:]))
	if l < HeaderSize-LogOverhead {
		return 0, fmt.Errorf("%w: batch length %d is shorter than a header", ErrCorrupt, l)
	}
	return int(l) + LogOverhead, nil
}

// NextBatch splits the first batch off b: batch is that batch's bytes (a
// subslice, not a copy) and rest what follows it. It checks the header (see
// ParseHeader) and that the whole batch is present, but not its CRC or
// records: call Validate on batch for that. At the end of b it returns
// (nil, nil, nil).
func NextBatch(b []byte) (batch, rest []byte, err error) {
	if len(b) == 0 {
		return nil, nil, nil
	}
	h, err := ParseHeader(b)
	if err != nil {
		return nil, nil, err
	}
	n := h.Size()
	if n > len(b) {
		return nil, nil, fmt.Errorf("%w: truncated batch: length says %d bytes, %d remain", ErrCorrupt, n, len(b))
	}
	return b[:n:n], b[n:], nil
}

// Batches splits b, a concatenation of batches such as the records field of
// a produce request, into one subslice per batch. Nothing is copied. A
// trailing partial batch is an error (ErrCorrupt): producers never send
// one, unlike fetch responses, which may end mid-batch.
func Batches(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		batch, rest, err := NextBatch(b)
		if err != nil {
			return nil, fmt.Errorf("batch %d: %w", len(out), err)
		}
		out = append(out, batch)
		b = rest
	}
	return out, nil
}
