package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge is returned by ReadFrame for a size prefix above the limit
// (socket.request.max.bytes) or below zero. The connection cannot be
// resynchronised after it: close it.
var ErrFrameTooLarge = errors.New("frame too large")

// ReadFrame reads one size-prefixed frame from r. The size is checked against
// max before anything is allocated, so a hostile prefix costs nothing. buf is
// reused when it is large enough.
func ReadFrame(r io.Reader, max int32, buf []byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > max {
		return nil, fmt.Errorf("%w: size %d, socket.request.max.bytes is %d", ErrFrameTooLarge, n, max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
