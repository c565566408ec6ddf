package network

import (
	"math/bits"
	"net"
	"sync"

	"github.com/samsa-io/samsa/internal/wire"
)

// Response frames are built in pooled buffers: a fetch answer can be
// megabytes, and allocating one per response made the heap (and the
// process's RSS) grow with throughput. The writer returns a buffer once its
// bytes are on the socket; nothing else keeps a reference to it.
//
// Buffers come in power-of-two classes from 4 KiB to 64 MiB; larger ones
// are allocated and dropped.
const (
	minBufClass = 12 // 4 KiB
	maxBufClass = 26 // 64 MiB
)

var bufPools [maxBufClass + 1]sync.Pool

// vectoredWrites lets fetch answers on plain TCP sockets go out with
// writev (outFrame.bufs); benchmarks turn it off to compare.
var vectoredWrites = true

// outFrame is a response frame on its way to the socket: buf, a pooled
// buffer returned once written, and for a fetch answer written without
// copying its records (wire.AppendFetchFrame) the buffers to write,
// slices of buf and of the record batches, with one writev.
//
// cuts, set instead of bufs for a fetch answer whose batches are in files
// (sendfile.go), say where in buf the batches go; the frame holds the
// files' references until it is written or dropped.
type outFrame struct {
	buf  []byte
	bufs net.Buffers // nil: write buf
	cuts []wire.FrameCut
}

// writeTo writes f to w and returns its buffer to the pool.
func (f outFrame) writeTo(w net.Conn) error {
	var err error
	switch {
	case f.cuts != nil:
		err = writeWithFiles(w.(*net.TCPConn), f.buf, f.cuts)
	case f.bufs != nil:
		_, err = f.bufs.WriteTo(w)
	default:
		_, err = w.Write(f.buf)
	}
	f.discard()
	return err
}

// discard returns f's buffer to the pool and releases its files.
func (f outFrame) discard() {
	putBuf(f.buf)
	for _, c := range f.cuts {
		if c.File != nil {
			c.File.Release()
		}
	}
}

// getBuf returns an empty buffer with room for at least n bytes.
func getBuf(n int) []byte {
	c := bufClass(n)
	if c > maxBufClass {
		return make([]byte, 0, n)
	}
	if b, ok := bufPools[c].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<c)
}

// putBuf returns b to its pool. Only buffers from getBuf's classes are kept.
func putBuf(b []byte) {
	c := bufClass(cap(b))
	if c > maxBufClass || cap(b) != 1<<c {
		return
	}
	bufPools[c].Put(&b)
}

// bufClass is the smallest class holding n bytes.
func bufClass(n int) int {
	if n <= 1<<minBufClass {
		return minBufClass
	}
	return bits.Len(uint(n - 1))
}
