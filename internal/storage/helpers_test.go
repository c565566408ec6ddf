package storage

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/record"
)

// makeBatch builds a valid v2 batch of n records with values of valueSize
// bytes, all stamped ts (or without timestamps when ts is -1), base offset 0.
func makeBatch(tb testing.TB, n int, ts int64, valueSize int) []byte {
	tb.Helper()
	var recs []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // a zero Length varint is one byte
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(n - 1),
		FirstTimestamp:  ts,
		MaxTimestamp:    ts,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(n),
		Records:         recs,
	}
	b.Length = int32(record.HeaderSize - record.LogOverhead + len(recs))
	raw := b.AppendTo(nil)
	crc := record.ComputeCRC(raw)
	raw[17], raw[18], raw[19], raw[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	if _, err := record.ParseHeader(raw); err != nil {
		tb.Fatal(err)
	}
	return raw
}

// headers splits a Read result into batch headers.
func headers(tb testing.TB, b []byte) []record.Header {
	tb.Helper()
	var out []record.Header
	for len(b) > 0 {
		h, err := record.ParseHeader(b)
		if err != nil {
			tb.Fatalf("parse read result: %v", err)
		}
		if h.Size() > len(b) {
			tb.Fatalf("read returned a partial batch: %d of %d bytes", len(b), h.Size())
		}
		if crc := record.ComputeCRC(b); crc != h.CRC {
			tb.Fatalf("batch at %d: bad CRC", h.BaseOffset)
		}
		out = append(out, h)
		b = b[h.Size():]
	}
	return out
}

func baseOffsets(hs []record.Header) []int64 {
	var out []int64
	for _, h := range hs {
		out = append(out, h.BaseOffset)
	}
	return out
}

// fakeClock is an injected clock that tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

func openLog(tb testing.TB, dir string, cfg LogConfig) *Log {
	tb.Helper()
	l, err := Open(dir, cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

func mustAppend(tb testing.TB, l *Log, batch []byte) int64 {
	tb.Helper()
	off, err := l.Append(batch)
	if err != nil {
		tb.Fatal(err)
	}
	return off
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

// copyDir copies a log directory as a crash would leave it: whatever the
// files hold right now, preallocated indexes included.
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		tb.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			tb.Fatal(err)
		}
		in.Close()
		out.Close()
	}
}
