package httpapi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/httpapi"
	"github.com/samsa-io/samsa/internal/httpauth"
)

func get(t *testing.T, c *http.Client, url, user, pass string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func listen(t *testing.T, cfg httpapi.Config) string {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := httpapi.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addrs()[0].String()
}

func TestBasicAuthGuardsAllButHealthz(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("ops: s3cret,monitoring\nguest: pw,other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := httpauth.LoadUsers(users)
	if err != nil {
		t.Fatal(err)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "m 1\n") })
	addr := listen(t, httpapi.Config{
		Listeners: []config.RegistryListener{{Addr: "127.0.0.1:0"}},
		Auth:      &httpauth.BasicAuth{Realm: "Ops", Users: u, Roles: []string{"monitoring"}},
		Metrics:   metrics,
		Ready:     func() error { return errors.New("broker 1 is fenced") },
	})
	base := "http://" + addr
	c := http.DefaultClient
	if code, body, _ := get(t, c, base+"/healthz", "", ""); code != 200 || body != "ok\n" {
		t.Errorf("/healthz without credentials: %d %q, want 200", code, body)
	}
	for _, path := range []string{"/metrics", "/readyz"} {
		code, _, h := get(t, c, base+path, "", "")
		if code != 401 || h.Get("WWW-Authenticate") != `Basic realm="Ops"` {
			t.Errorf("%s without credentials: %d %q, want 401 with a challenge", path, code, h.Get("WWW-Authenticate"))
		}
		if code, _, _ := get(t, c, base+path, "ops", "wrong"); code != 401 {
			t.Errorf("%s with a wrong password: %d, want 401", path, code)
		}
		if code, _, _ := get(t, c, base+path, "guest", "pw"); code != 401 {
			t.Errorf("%s by a user without the role: %d, want 401", path, code)
		}
	}
	if code, body, _ := get(t, c, base+"/metrics", "ops", "s3cret"); code != 200 || body != "m 1\n" {
		t.Errorf("/metrics with credentials: %d %q", code, body)
	}
	if code, body, _ := get(t, c, base+"/readyz", "ops", "s3cret"); code != 503 || body != "not ready: broker 1 is fenced\n" {
		t.Errorf("/readyz of a node not ready: %d %q", code, body)
	}
	if code, _, _ := get(t, c, base+"/nothing", "ops", "s3cret"); code != 404 {
		t.Errorf("an unknown path: %d, want 404", code)
	}
}

// selfSigned is a certificate for 127.0.0.1 and the pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "samsa"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestHTTPSEndpoint(t *testing.T) {
	cert, pool := selfSigned(t)
	addr := listen(t, httpapi.Config{
		Listeners: []config.RegistryListener{{Addr: "127.0.0.1:0", TLS: true}},
		TLS:       &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code, body, _ := get(t, c, "https://"+addr+"/readyz", "", ""); code != 200 || body != "ready\n" {
		t.Errorf("/readyz over https: %d %q", code, body)
	}
	// Go's server answers plain HTTP on a TLS port with a 400.
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain http answered 200 on an https endpoint")
		}
	}
}

func TestHTTPSEndpointNeedsTLS(t *testing.T) {
	_, err := httpapi.Listen(httpapi.Config{Listeners: []config.RegistryListener{{Addr: "127.0.0.1:0", TLS: true}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil {
		t.Fatal("an https endpoint without TLS configuration was served")
	}
}

// TestSetConsole: before the console is mounted every other path answers
// 404; after, the console serves them, and the node's own endpoints stay
// its own.
func TestSetConsole(t *testing.T) {
	s, err := httpapi.Listen(httpapi.Config{
		Listeners: []config.RegistryListener{{Addr: "127.0.0.1:0"}},
		Metrics:   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics\n") }),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	base := "http://" + s.Addrs()[0].String()
	c := &http.Client{}
	for _, p := range []string{"/", "/topics"} {
		if code, _, _ := get(t, c, base+p, "", ""); code != http.StatusNotFound {
			t.Errorf("GET %s before the console: %d, want 404", p, code)
		}
	}
	s.SetConsole(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console "+r.URL.Path) }))
	for p, want := range map[string]string{"/": "console /", "/topics/x": "console /topics/x", "/metrics": "metrics\n", "/healthz": "ok\n", "/readyz": "ready\n"} {
		if code, body, _ := get(t, c, base+p, "", ""); code != http.StatusOK || body != want {
			t.Errorf("GET %s: %d %q, want 200 %q", p, code, body, want)
		}
	}
}
