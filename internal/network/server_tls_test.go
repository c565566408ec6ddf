package network

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/security/tlstest"
	"github.com/samsa-io/samsa/internal/wire"
)

// principalHandler answers like fakeHandler and remembers the principal
// of the last request.
type principalHandler struct {
	fakeHandler
	mu   sync.Mutex
	last security.Principal
}

func (h *principalHandler) Handle(ctx context.Context, c *Conn, req wire.Request) (kmsg.Response, error) {
	h.mu.Lock()
	h.last = c.Principal()
	h.mu.Unlock()
	return h.fakeHandler.Handle(ctx, c, req)
}

func (h *principalHandler) principal() security.Principal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

type tlsFixture struct {
	ca     *tlstest.CA
	client *tlstest.Identity
	srv    *Server
	h      *principalHandler
}

func startTLSServer(t *testing.T, clientAuth string, handshakeTimeout time.Duration) *tlsFixture {
	t.Helper()
	ca := tlstest.NewCA(t, "CA")
	server := ca.Server(t, pkix.Name{CommonName: "broker"})
	ts, err := security.NewTLSServer(security.TLSSettings{
		KeystoreType: "PEM", KeystoreCertificateChain: tlstest.CertPEM(server.Chain...), KeystoreKey: server.KeyPEM(t),
		TruststoreType: "PEM", TruststoreCertificates: tlstest.CertPEM(ca.Cert),
		ClientAuth: clientAuth, PrincipalMappingRules: "RULE:^CN=([^,]+).*$/$1/,DEFAULT",
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &principalHandler{fakeHandler: fakeHandler{fetching: make(chan struct{}, 1)}}
	s := Serve(ln, Config{
		Listener: "SSL", MaxRequestSize: 1 << 20, Handler: h,
		Versions:         wire.NewVersionTable(wire.VersionRange{Key: kmsg.ApiVersions, Min: 0, Max: 4}, wire.VersionRange{Key: kmsg.Metadata, Min: 0, Max: 13}),
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		TLS:              ts.Config(),
		TLSPrincipal:     ts.Principal,
		HandshakeTimeout: handshakeTimeout,
	})
	t.Cleanup(func() { s.Close() })
	return &tlsFixture{ca: ca, client: ca.Client(t, pkix.Name{CommonName: "alice", Organization: []string{"Acme"}}), srv: s, h: h}
}

func (f *tlsFixture) dialTLS(t *testing.T, withCert bool) (*tls.Conn, error) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(f.ca.Cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	if withCert {
		cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{f.client.Cert.Raw}, PrivateKey: f.client.Key}}
	}
	d := tls.Dialer{Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", f.srv.Addr().String())
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c.(*tls.Conn), nil
}

// A request over TLS is answered, and the handler sees the principal
// mapped from the client certificate.
func TestTLSListenerServesAndSetsPrincipal(t *testing.T) {
	f := startTLSServer(t, "required", 0)
	c, err := f.dialTLS(t, true)
	if err != nil {
		t.Fatal(err)
	}
	c.Write(frame(metadataReq(3), 7))
	if id, _ := readResponse(t, c); id != 7 {
		t.Fatalf("correlation id %d, want 7", id)
	}
	if p := f.h.principal(); p.String() != "User:alice" {
		t.Fatalf("principal %v, want User:alice", p)
	}
	// Without a certificate the handshake fails (TLS 1.3 reports it on
	// the first read) and nothing is handled.
	handled := f.h.handled.Load()
	if c2, err := f.dialTLS(t, false); err == nil {
		c2.Write(frame(metadataReq(1), 8))
		c2.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := wire.ReadFrame(c2, 1<<20, nil); err == nil {
			t.Fatal("a client without a certificate was answered")
		}
	}
	if f.h.handled.Load() != handled {
		t.Fatal("a request from a client without a certificate was handled")
	}
}

// Plaintext bytes on an SSL listener close that connection; the listener
// keeps serving TLS clients.
func TestTLSListenerRefusesPlaintext(t *testing.T) {
	f := startTLSServer(t, "none", 0)
	plain := dial(t, f.srv)
	plain.Write(frame(metadataReq(1), 1))
	expectClosed(t, plain)
	if f.h.handled.Load() != 0 {
		t.Fatal("a plaintext request was handled")
	}
	c, err := f.dialTLS(t, false)
	if err != nil {
		t.Fatal(err)
	}
	c.Write(frame(metadataReq(2), 2))
	if id, _ := readResponse(t, c); id != 2 {
		t.Fatalf("correlation id %d", id)
	}
	if p := f.h.principal(); p != security.Anonymous {
		t.Fatalf("principal %v, want User:ANONYMOUS", p)
	}
}

// A client that connects and sends nothing is closed once the handshake
// times out, and does not stop others from being served meanwhile.
func TestTLSHandshakeTimeout(t *testing.T) {
	f := startTLSServer(t, "none", 300*time.Millisecond)
	silent := dial(t, f.srv)
	c, err := f.dialTLS(t, false)
	if err != nil {
		t.Fatalf("a silent client blocked another's handshake: %v", err)
	}
	c.Write(frame(metadataReq(1), 1))
	readResponse(t, c)
	start := time.Now()
	expectClosed(t, silent)
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("silent client closed after %v", d)
	}
}
