package physical

import (
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
)

var sizes = []struct {
	name string
	n    int
}{{"100B", 100}, {"1KiB", 1024}, {"1MiB", 1 << 20}}

func BenchmarkMemcpy(b *testing.B) {
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			src, dst := make([]byte, s.n), make([]byte, s.n)
			b.SetBytes(int64(s.n))
			for b.Loop() {
				copy(dst, src)
			}
		})
	}
}

func BenchmarkCRC32C(b *testing.B) {
	table := crc32.MakeTable(crc32.Castagnoli)
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) {
			buf := make([]byte, s.n)
			b.SetBytes(int64(s.n))
			for b.Loop() {
				crc32.Checksum(buf, table)
			}
		})
	}
}

// BenchmarkLoopbackTCP writes chunks over one 127.0.0.1 connection that
// a goroutine drains: the cost of moving bytes through the kernel's TCP
// stack one way, a write per chunk.
func BenchmarkLoopbackTCP(b *testing.B) {
	for _, s := range []struct {
		name string
		n    int
	}{{"16KiB", 16 << 10}, {"1MiB", 1 << 20}} {
		b.Run(s.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			drained := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err == nil {
					_, err = io.Copy(io.Discard, c)
					c.Close()
				}
				drained <- err
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, s.n)
			b.SetBytes(int64(s.n))
			for b.Loop() {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			c.Close()
			if err := <-drained; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkPageCacheWrite appends chunks to a file without fsync, as a
// log segment is written, starting a new file every 64 MiB so that the
// benchmark does not fill the disk.
func BenchmarkPageCacheWrite(b *testing.B) {
	for _, s := range []struct {
		name string
		n    int
	}{{"16KiB", 16 << 10}, {"1MiB", 1 << 20}} {
		b.Run(s.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "segment")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, s.n)
			written := 0
			b.SetBytes(int64(s.n))
			for b.Loop() {
				if written >= 64<<20 {
					if err := f.Truncate(0); err != nil {
						b.Fatal(err)
					}
					if _, err := f.Seek(0, io.SeekStart); err != nil {
						b.Fatal(err)
					}
					written = 0
				}
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				written += s.n
			}
		})
	}
}

// BenchmarkFsync is a 1 KiB write then fsync of one file, what an
// acknowledgement costs with log.flush.interval.messages=1 when nothing
// shares the fsync.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "segment"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	for b.Loop() {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
