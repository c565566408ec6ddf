package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedSize bounds what Decompress will produce from one batch.
// A compressed batch is at most message.max.bytes on the wire, but a few
// kilobytes of zstd or gzip can claim gigabytes; the cap turns such a
// "decompression bomb" into an ErrCorrupt instead of an out-of-memory kill.
const MaxDecompressedSize = 256 << 20

// errTooLarge is wrapped in ErrCorrupt when output would pass the cap.
var errTooLarge = errors.New("decompressed batch exceeds size limit")

// Compress compresses src, a records section, with codec c in the form
// Kafka's own clients write: gzip (RFC 1952), snappy in xerial framing (as
// the Java client's SnappyOutputStream writes it), LZ4 frame format, zstd
// frame. CodecNone returns a copy of src.
func Compress(c Codec, src []byte) ([]byte, error) {
	return appendCompressed(nil, c, src)
}

// Decompress reverses Compress for any codec. For snappy it accepts both
// xerial framing and a bare snappy block, since librdkafka and others write
// the latter. Malformed input or output beyond MaxDecompressedSize returns
// an error wrapping ErrCorrupt; an unknown codec returns ErrInvalid.
func Decompress(c Codec, src []byte) ([]byte, error) {
	return decompress(nil, c, src, MaxDecompressedSize)
}

func appendCompressed(dst []byte, c Codec, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return gzipCompress(dst, src)
	case CodecSnappy:
		return xerialEncode(dst, src), nil
	case CodecLZ4:
		return lz4Compress(dst, src)
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, int8(c))
}

// decompress appends the decompression of src to dst[:0], failing once
// the output would exceed limit bytes.
func decompress(dst []byte, c Codec, src []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	var err error
	switch c {
	case CodecNone:
		if len(src) > limit {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, errTooLarge)
		}
		return append(dst, src...), nil
	case CodecGzip:
		dst, err = gzipDecompress(dst, src, limit)
	case CodecSnappy:
		dst, err = xerialDecode(dst, src, limit)
	case CodecLZ4:
		dst, err = lz4Decompress(dst, src, limit)
	case CodecZstd:
		dst, err = zstdDecompress(dst, src, limit)
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, int8(c))
	}
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, c, err)
	}
	return dst, nil
}

// readAllLimit appends everything r yields to dst, up to limit bytes.
// Unlike io.ReadAll it grows dst only as data arrives, so a bomb costs
// memory in proportion to what it really expands to, capped by limit.
func readAllLimit(dst []byte, r io.Reader, limit int) ([]byte, error) {
	if cap(dst) == 0 {
		dst = make([]byte, 0, 4096)
	}
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		room := cap(dst) - len(dst)
		if len(dst)+room > limit+1 { // +1: we must see a byte past the limit to know
			room = limit + 1 - len(dst)
		}
		n, err := r.Read(dst[len(dst) : len(dst)+room])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, errTooLarge)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// gzip. Readers and writers hold sizeable state (a writer ~800 KiB), so they
// are pooled rather than made per batch.

type gzipReader struct {
	src bytes.Reader
	zr  gzip.Reader
}

var gzipReaders = sync.Pool{New: func() any { return new(gzipReader) }}

func gzipDecompress(dst, src []byte, limit int) ([]byte, error) {
	g := gzipReaders.Get().(*gzipReader)
	defer gzipReaders.Put(g)
	g.src.Reset(src)
	if err := g.zr.Reset(&g.src); err != nil {
		return nil, err
	}
	return readAllLimit(dst, &g.zr, limit)
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func gzipCompress(dst, src []byte) ([]byte, error) {
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	buf := bytes.NewBuffer(dst)
	w.Reset(buf)
	if _, err := w.Write(src); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// LZ4, frame format. Kafka's Java client writes 64 KiB independent blocks
// without content checksum; we write the same so any Kafka reader copes.

type lz4Reader struct {
	src bytes.Reader
	zr  *lz4.Reader
}

var lz4Readers = sync.Pool{New: func() any {
	r := &lz4Reader{zr: lz4.NewReader(nil)}
	// One goroutine per batch: decompression runs on the request's own
	// goroutine instead of fanning out to helper goroutines.
	_ = r.zr.Apply(lz4.ConcurrencyOption(1))
	return r
}}

func lz4Decompress(dst, src []byte, limit int) ([]byte, error) {
	r := lz4Readers.Get().(*lz4Reader)
	defer lz4Readers.Put(r)
	r.src.Reset(src)
	r.zr.Reset(&r.src)
	return readAllLimit(dst, r.zr, limit)
}

var lz4Writers = sync.Pool{New: func() any {
	w := lz4.NewWriter(nil)
	if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false), lz4.ConcurrencyOption(1)); err != nil {
		panic(err) // fixed, valid options: cannot fail
	}
	return w
}}

func lz4Compress(dst, src []byte) ([]byte, error) {
	w := lz4Writers.Get().(*lz4.Writer)
	defer lz4Writers.Put(w)
	buf := bytes.NewBuffer(dst)
	w.Reset(buf)
	if _, err := w.Write(src); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// zstd. An Encoder or Decoder is expensive to build and safe for concurrent
// EncodeAll/DecodeAll, so the package shares one of each, built on first
// use (no init-time cost for binaries that never see zstd).

var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		panic(err)
	}
	return e
})

var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderMaxMemory(MaxDecompressedSize),
		zstd.WithDecoderConcurrency(0))
	if err != nil {
		panic(err)
	}
	return d
})

func zstdDecompress(dst, src []byte, limit int) ([]byte, error) {
	out, err := zstdDecoder().DecodeAll(src, dst)
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, errTooLarge)
		}
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, errTooLarge)
	}
	return out, nil
}
