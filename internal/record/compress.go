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
	switch c {
	case CodecNone:
		if len(src) > limit {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, errTooLarge)
		}
		return append(dst, src...), nil
	case CodecGzip, CodecSnappy, CodecLZ4, CodecZstd:
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, int8(c))
	}
	d := getDecompressor(nil)
	defer d.close()
	r, err := d.open(c, src, limit)
	if err == nil {
		dst, err = readAllLimit(dst, r, limit)
	}
	if err != nil {
		return nil, corruptErr(c, err)
	}
	return dst, nil
}

// corruptErr wraps a decompression failure in ErrCorrupt, naming the codec.
func corruptErr(c Codec, err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, c, err)
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

// Decompression is streaming for every codec: validation walks records
// as they come out of a fixed window (stream.go) and never holds the whole
// records section. What a decompressor keeps per batch is then bounded by
// the codec, not by the batch:
//
//	gzip    the 32 KiB deflate window and tables
//	lz4     one block, at most 4 MiB (the frame declares 64 KiB..4 MiB)
//	zstd    the frame's window (single-segment frames: the content size),
//	        charged to the Budget and at most maxZstdWindow
//	snappy  one decoded block, charged to the Budget (xerial blocks are
//	        32 KiB; a bare block is the whole records section)

// maxZstdWindow is the largest zstd window accepted: the reference
// decoder's default limit (ZSTD_WINDOWLOG_LIMIT_DEFAULT, 2^27), which the
// zstd-jni streams Kafka validates with enforce as well, single-segment
// frames included.
const maxZstdWindow = 128 << 20

// zstdBlockMax is zstd's largest block; the streaming decoder keeps its
// window plus room for two blocks.
const zstdBlockMax = 128 << 10

// maxPooledDecompressor: a decompressor whose zstd window or snappy buffer
// grew beyond this is dropped after use rather than pooled, so one large
// batch does not leave its memory resident for the next small ones.
const maxPooledDecompressor = 4 << 20

// decompressor holds the streaming state of every codec, made on first
// use and pooled, since zstd and gzip state is costly to build.
type decompressor struct {
	src    bytes.Reader
	budget *Budget

	gz       gzip.Reader
	lz       *lz4.Reader
	zd       *zstd.Decoder
	zdMemory int64 // the most memory zd's windows have needed
	zdWindow int64 // the largest window zd accepts now
	sn       snappyReader

	charge int64 // held from budget for zstd
	stream streamReader
}

var decompressors = sync.Pool{New: func() any { return new(decompressor) }}

func getDecompressor(budget *Budget) *decompressor {
	d := decompressors.Get().(*decompressor)
	d.budget = budget
	return d
}

// open starts decompressing src with codec c (not CodecNone).
func (d *decompressor) open(c Codec, src []byte, limit int) (io.Reader, error) {
	d.src.Reset(src)
	switch c {
	case CodecGzip:
		if err := d.gz.Reset(&d.src); err != nil {
			return nil, err
		}
		return &d.gz, nil
	case CodecSnappy:
		if err := d.sn.reset(src, limit, d.budget); err != nil {
			return nil, err
		}
		return &d.sn, nil
	case CodecLZ4:
		if d.lz == nil {
			d.lz = lz4.NewReader(nil)
			// One goroutine per batch: decompression runs on the
			// request's own goroutine, not on helper goroutines.
			_ = d.lz.Apply(lz4.ConcurrencyOption(1))
		}
		d.lz.Reset(&d.src)
		return d.lz, nil
	case CodecZstd:
		return d.openZstd(src)
	}
	return nil, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, int8(c))
}

// openZstd sizes the decoder's window from the first frame header and
// charges it to the budget. Later frames may not declare a larger window
// (Kafka's producers write one frame per batch).
func (d *decompressor) openZstd(src []byte) (io.Reader, error) {
	window := int64(zstd.MinWindowSize)
	var fh zstd.Header
	if err := fh.Decode(src); err == nil {
		switch {
		case fh.Skippable:
			window = maxZstdWindow // the real frame comes later, unseen
		case fh.SingleSegment:
			window = max(int64(fh.FrameContentSize), zstd.MinWindowSize)
		default:
			window = max(int64(fh.WindowSize), zstd.MinWindowSize)
		}
	} // else the decoder fails on the same header
	if window > maxZstdWindow {
		return nil, fmt.Errorf("%w: zstd window of %d bytes exceeds the limit of %d", ErrCorrupt, window, maxZstdWindow)
	}
	memory := window + 2*min(window, zstdBlockMax)
	d.charge = d.budget.acquire(memory)
	if d.zd == nil {
		zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow),
			zstd.WithDecoderMaxMemory(maxZstdWindow))
		if err != nil {
			return nil, err
		}
		d.zd = zd
	}
	d.zdMemory = max(d.zdMemory, memory)
	var err error
	if window == d.zdWindow {
		err = d.zd.Reset(&d.src)
	} else {
		// Setting options allocates, so only when the window changes
		// (a producer's batches tend to share one).
		err = d.zd.ResetWithOptions(&d.src, zstd.WithDecoderMaxWindow(uint64(window)), zstd.WithDecoderMaxMemory(uint64(window)))
		d.zdWindow = window
	}
	if err != nil {
		d.zdWindow = 0
		return nil, err
	}
	return d.zd, nil
}

// close returns the budget charge and pools d, without the state that
// grew large.
func (d *decompressor) close() {
	d.budget.release(d.charge)
	d.charge = 0
	d.sn.close()
	d.budget = nil
	d.src.Reset(nil)
	d.stream.r = nil
	if d.zd != nil {
		if d.zdMemory > maxPooledDecompressor {
			d.zd.Close()
			d.zd, d.zdMemory, d.zdWindow = nil, 0, 0
		} else {
			_ = d.zd.Reset(nil) // drop the reference to the batch
		}
	}
	if d.lz != nil {
		d.lz.Reset(nil)
	}
	decompressors.Put(d)
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

// zstd. An Encoder is expensive to build and safe for concurrent
// EncodeAll, so the package shares one, built on first use (no init-time
// cost for binaries that never see zstd).

var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		panic(err)
	}
	return e
})
