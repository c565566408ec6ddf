package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

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

func xerialDecode(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < len(xerialMagic) || !bytes.Equal(src[:len(xerialMagic)], xerialMagic[:]) {
		return snappyBlock(dst, src, limit)
	}
	if len(src) < xerialHeaderLen {
		return nil, errXerial
	}
	src = src[xerialHeaderLen:]
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, errXerial
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return nil, errXerial
		}
		var err error
		if dst, err = snappyBlock(dst, src[:n], limit); err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return dst, nil
}

// snappyBlock appends the decoding of one raw snappy block to dst.
func snappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > limit-len(dst) {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, errTooLarge)
	}
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	if _, err := snappy.DecodeStrict(dst[start:], block); err != nil {
		return nil, err
	}
	return dst, nil
}
