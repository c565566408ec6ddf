package network

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/wire"
)

// fetchAnswer answers every Fetch with resp.
type fetchAnswer struct{ resp *kmsg.FetchResponse }

func (h fetchAnswer) Handle(_ context.Context, _ *Conn, req wire.Request) (kmsg.Response, error) {
	r := *h.resp
	r.Version = req.Body.GetVersion()
	return &r, nil
}

func serveFetchAnswer(tb testing.TB, resp *kmsg.FetchResponse) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := Serve(ln, Config{Listener: "PLAINTEXT", Handler: fetchAnswer{resp}, MaxRequestSize: 1 << 20,
		Versions: wire.NewVersionTable(wire.VersionRange{Key: kmsg.Fetch, Min: 4, Max: 18}),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil))})
	tb.Cleanup(func() { s.Close() })
	return s
}

// fetchResponseWithRecords is a response of parts partitions of size
// bytes of records each.
func fetchResponseWithRecords(parts, size int) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	t := kmsg.NewFetchResponseTopic()
	t.Topic = "orders"
	t.TopicID = [16]byte{1, 2, 3}
	for i := range parts {
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = int32(i)
		p.HighWatermark, p.LastStableOffset, p.LogStartOffset = 1000, 1000, 0
		p.RecordBatches = bytes.Repeat([]byte{byte('a' + i)}, size)
		t.Partitions = append(t.Partitions, p)
	}
	resp.Topics = append(resp.Topics, t)
	return resp
}

// TestFetchAnswerOverTCP: a fetch answer, whose record batches go out
// with writev on a plain TCP socket, reads back as the response the
// handler gave, in every version, pipelined behind one another.
func TestFetchAnswerOverTCP(t *testing.T) {
	resp := fetchResponseWithRecords(3, 70_000)
	resp.Topics[0].Partitions[1].RecordBatches = nil // a partition without records
	s := serveFetchAnswer(t, resp)
	c := dial(t, s)
	for v := int16(4); v <= 18; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		if _, err := c.Write(frame(req, int32(v))); err != nil {
			t.Fatal(err)
		}
	}
	for v := int16(4); v <= 18; v++ {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := wire.ReadFrame(c, 1<<20, nil)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		got := kmsg.NewPtrFetchResponse()
		got.Version = v
		id, err := wire.ReadResponse(b, got)
		if err != nil || id != int32(v) {
			t.Fatalf("v%d: correlation id %d, %v", v, id, err)
		}
		want := *resp
		want.Version = v
		if !bytes.Equal(got.AppendTo(nil), want.AppendTo(nil)) {
			t.Fatalf("v%d: the answer read back differs from the handler's", v)
		}
	}
}

// BenchmarkFetchAnswer is one client fetching a 768 KiB answer (6
// partitions of 128 KiB) at a time over loopback, its record batches in
// memory: the frame copied whole into a buffer (copy) or written with its
// batches in place (writev); or in a file (sendfile.go): sent with
// sendfile (sendfile), or pread into a pooled frame buffer as on a TLS
// connection (pread).
func BenchmarkFetchAnswer(b *testing.B) {
	for _, mode := range []struct {
		name               string
		vectored, sendfile bool
		files              bool
	}{{"copy", false, true, false}, {"writev", true, true, false}, {"sendfile", true, true, true}, {"pread", true, false, true}} {
		b.Run(mode.name, func(b *testing.B) {
			vectoredWrites, sendfileWrites = mode.vectored, mode.sendfile
			defer func() { vectoredWrites, sendfileWrites = true, true }()
			resp := fetchResponseWithRecords(6, 128<<10)
			var s *Server
			if mode.files {
				s = serveFileAnswer(b, newFileAnswer(b, resp), nil)
			} else {
				s = serveFetchAnswer(b, resp)
			}
			nc, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			req := kmsg.NewPtrFetchRequest()
			req.Version = 16
			f := frame(req, 1)
			var buf []byte
			b.SetBytes(6 * 128 << 10)
			b.ResetTimer()
			for range b.N {
				if _, err := nc.Write(f); err != nil {
					b.Fatal(err)
				}
				if buf, err = wire.ReadFrame(nc, 1<<21, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
