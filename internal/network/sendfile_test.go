package network

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/security/tlstest"
	"github.com/samsa-io/samsa/internal/wire"
)

// testRegion is wire.FileRecords over a region of a test file, counting
// its releases.
type testRegion struct {
	f        *os.File
	off      int64
	n        int
	released *atomic.Int64
}

func (r *testRegion) Len() int                { return r.n }
func (r *testRegion) File() (*os.File, int64) { return r.f, r.off }
func (r *testRegion) Release()                { r.released.Add(1) }
func (r *testRegion) ReadTo(b []byte) error {
	n, err := r.f.ReadAt(b[:r.n], r.off)
	if n < r.n {
		return errors.Join(errFileShortened, err)
	}
	return nil
}

// fileAnswer answers every Fetch with resp, its record batches given as
// regions of one file holding them one after another.
type fileAnswer struct {
	resp     *kmsg.FetchResponse
	f        *os.File
	released atomic.Int64
	handed   atomic.Int64 // regions handed out
	// truncate, when set, shortens the file after the answer is made.
	truncate bool
}

func newFileAnswer(tb testing.TB, resp *kmsg.FetchResponse) *fileAnswer {
	f, err := os.Create(filepath.Join(tb.TempDir(), "00000000000000000000.log"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if _, err := f.Write(p.RecordBatches); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return &fileAnswer{resp: resp, f: f}
}

func (h *fileAnswer) Handle(_ context.Context, _ *Conn, req wire.Request) (kmsg.Response, error) {
	r := *h.resp
	r.Version = req.Body.GetVersion()
	r.Topics = nil
	out := &wire.FetchWithFiles{FetchResponse: &r}
	var off int64
	for _, t := range h.resp.Topics {
		t.Partitions = append([]kmsg.FetchResponseTopicPartition(nil), t.Partitions...)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			var region wire.FileRecords
			if len(p.RecordBatches) > 0 {
				region = &testRegion{f: h.f, off: off, n: len(p.RecordBatches), released: &h.released}
				h.handed.Add(1)
				off += int64(len(p.RecordBatches))
				p.RecordBatches = []byte{}
			}
			out.Files = append(out.Files, region)
		}
		r.Topics = append(r.Topics, t)
	}
	if h.truncate {
		if err := h.f.Truncate(off / 2); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// waitReleased waits until every region handed out is released.
func (h *fileAnswer) waitReleased(tb testing.TB) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); h.released.Load() != h.handed.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d file regions released", h.released.Load(), h.handed.Load())
		}
	}
}

func serveFileAnswer(tb testing.TB, h Handler, tlsCfg *tls.Config) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := Serve(ln, Config{Listener: "PLAINTEXT", Handler: h, MaxRequestSize: 1 << 20, TLS: tlsCfg,
		Versions: wire.NewVersionTable(wire.VersionRange{Key: kmsg.Fetch, Min: 4, Max: 18}),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil))})
	tb.Cleanup(func() { s.Close() })
	return s
}

// tlsPair is a server TLS config and a client one trusting it.
func tlsPair(t *testing.T) (server, client *tls.Config) {
	ca := tlstest.NewCA(t, "CA")
	id := ca.Server(t, pkix.Name{CommonName: "broker"})
	ts, err := security.NewTLSServer(security.TLSSettings{
		KeystoreType: "PEM", KeystoreCertificateChain: tlstest.CertPEM(id.Chain...), KeystoreKey: id.KeyPEM(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return ts.Config(), &tls.Config{RootCAs: pool, ServerName: "localhost"}
}

func dialFileAnswer(t *testing.T, s *Server, clientTLS *tls.Config) net.Conn {
	c, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if clientTLS != nil {
		c = tls.Client(c, clientTLS)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFetchAnswerFromFiles: a fetch answer whose record batches are file
// regions reads back as the response with the batches in place, in every
// version, pipelined, over plain TCP (sendfile) and TLS (copied into the
// frame); every region is released once written.
func TestFetchAnswerFromFiles(t *testing.T) {
	serverTLS, clientTLS := tlsPair(t)
	for _, mode := range []struct {
		name      string
		srv, clnt *tls.Config
	}{{"plaintext", nil, nil}, {"tls", serverTLS, clientTLS}} {
		t.Run(mode.name, func(t *testing.T) {
			resp := fetchResponseWithRecords(3, 300_000) // more than a socket buffer
			resp.Topics[0].Partitions[1].RecordBatches = nil
			h := newFileAnswer(t, resp)
			s := serveFileAnswer(t, h, mode.srv)
			c := dialFileAnswer(t, s, mode.clnt)
			go func() {
				for v := int16(4); v <= 18; v++ {
					req := kmsg.NewPtrFetchRequest()
					req.Version = v
					if _, err := c.Write(frame(req, int32(v))); err != nil {
						return
					}
				}
			}()
			for v := int16(4); v <= 18; v++ {
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				b, err := wire.ReadFrame(c, 1<<21, nil)
				if err != nil {
					t.Fatalf("v%d: %v", v, err)
				}
				got := kmsg.NewPtrFetchResponse()
				got.Version = v
				if id, err := wire.ReadResponse(b, got); err != nil || id != int32(v) {
					t.Fatalf("v%d: correlation id %d, %v", v, id, err)
				}
				want := *resp
				want.Version = v
				if !bytes.Equal(got.AppendTo(nil), want.AppendTo(nil)) {
					t.Fatalf("v%d: the answer read back differs from the handler's", v)
				}
			}
			h.waitReleased(t)
		})
	}
}

// TestFetchAnswerFromShortenedFile: when a file is shortened under an
// answer, the connection closes without sending the rest of the frame
// (never other bytes in its place), and the regions are released.
func TestFetchAnswerFromShortenedFile(t *testing.T) {
	serverTLS, clientTLS := tlsPair(t)
	for _, mode := range []struct {
		name      string
		srv, clnt *tls.Config
	}{{"plaintext", nil, nil}, {"tls", serverTLS, clientTLS}} {
		t.Run(mode.name, func(t *testing.T) {
			h := newFileAnswer(t, fetchResponseWithRecords(2, 100_000))
			h.truncate = true
			s := serveFileAnswer(t, h, mode.srv)
			c := dialFileAnswer(t, s, mode.clnt)
			req := kmsg.NewPtrFetchRequest()
			req.Version = 16
			if _, err := c.Write(frame(req, 1)); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if b, err := wire.ReadFrame(c, 1<<21, nil); err == nil {
				t.Fatalf("read a whole frame of %d bytes from a shortened file", len(b))
			} else if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the connection stayed open")
			}
			h.waitReleased(t)
		})
	}
}
