package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
)

// Xerial framing, as written by the snappy-java SnappyOutputStream that
// Kafka's Java client uses:
//
//	magic   [8]byte  0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
//	version int32    1
//	compat  int32    1
//	then blocks until the end: length int32, a raw snappy block of that length
//
// Readers that see no magic treat the whole input as one raw snappy block,
// which is what librdkafka and several Go clients write.
var xerialMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderLen = 16
	xerialBlockSize = 32 << 10 // snappy-java's default block size
)

var errXerial = errors.New("malformed xerial snappy framing")

func xerialEncode(dst, src []byte) []byte {
	dst = append(dst, xerialMagic[:]...)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	for len(src) > 0 {
		block := src[:min(len(src), xerialBlockSize)]
		src = src[len(block):]
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		start := len(dst)
		dst = append(dst, make([]byte, snappy.MaxEncodedLen(len(block)))...)
		enc := snappy.Encode(dst[start:], block)
		dst = dst[:start+len(enc)]
		binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(enc)))
	}
	return dst
}

// snappyReader streams the decoding of a records section block by block.
// Each block is decoded whole (the format allows references anywhere back
// in the block), into a buffer charged to the budget for as long as the
// reader holds it.
type snappyReader struct {
	rest     []byte // input not yet decoded
	xerial   bool
	bareDone bool   // the bare block has been decoded
	buf      []byte // backing store of out
	out      []byte // decoded bytes not yet read
	produced int
	limit    int
	budget   *Budget
	charge   int64 // held from budget
	chargeOf int   // the block size the charge was taken for
}

func (s *snappyReader) reset(src []byte, limit int, budget *Budget) error {
	s.out, s.produced, s.limit, s.budget, s.bareDone = nil, 0, limit, budget, false
	s.xerial = len(src) >= len(xerialMagic) && bytes.Equal(src[:len(xerialMagic)], xerialMagic[:])
	s.rest = src
	if s.xerial {
		if len(src) < xerialHeaderLen {
			return errXerial
		}
		s.rest = src[xerialHeaderLen:]
	}
	return nil
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		var block []byte
		switch {
		case !s.xerial && !s.bareDone:
			block, s.rest, s.bareDone = s.rest, nil, true
		case !s.xerial || len(s.rest) == 0:
			return 0, io.EOF
		default:
			if len(s.rest) < 4 {
				return 0, errXerial
			}
			n := binary.BigEndian.Uint32(s.rest)
			if uint64(n) > uint64(len(s.rest)-4) {
				return 0, errXerial
			}
			block, s.rest = s.rest[4:4+n], s.rest[4+n:]
		}
		if err := s.decode(block); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// decode decodes one raw snappy block into s.out.
func (s *snappyReader) decode(block []byte) error {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return err
	}
	if n > s.limit-s.produced {
		return fmt.Errorf("%w: %w", ErrCorrupt, errTooLarge)
	}
	if n > s.chargeOf {
		s.budget.release(s.charge)
		s.charge, s.chargeOf = s.budget.acquire(int64(n)), n
	}
	if cap(s.buf) < n {
		s.buf = nil // let the old one go before making the new one
		s.buf = make([]byte, n)
	}
	s.out = s.buf[:n]
	if _, err := snappy.DecodeStrict(s.out, block); err != nil {
		s.out = nil
		return err
	}
	s.produced += n
	return nil
}

// close returns the charge and drops a buffer too large to keep pooled.
func (s *snappyReader) close() {
	s.budget.release(s.charge)
	s.charge, s.chargeOf, s.budget = 0, 0, nil
	s.rest, s.out = nil, nil
	if cap(s.buf) > maxPooledDecompressor {
		s.buf = nil
	}
}
