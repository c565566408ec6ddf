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
	n, err := ReadFrameSize(r, max)
	if err != nil {
		return nil, err
	}
	return ReadFrameBody(r, n, buf)
}

// ReadFrameSize reads a frame's size prefix and checks it against max: the
// first half of ReadFrame, for a caller that reserves memory before the
// body is allocated.
func ReadFrameSize(r io.Reader, max int32) (int32, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > max {
		return 0, fmt.Errorf("%w: size %d, socket.request.max.bytes is %d", ErrFrameTooLarge, n, max)
	}
	return n, nil
}

// ReadFrameBody reads the n bytes of a frame whose size ReadFrameSize
// returned, into buf when it is large enough.
func ReadFrameBody(r io.Reader, n int32, buf []byte) ([]byte, error) {
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
