package server

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/security/tlstest"
)

// The node's HTTP listener takes its TLS from http.ssl.* (over ssl.*)
// and its basic authentication from http.authentication.*.
func TestHTTPListenerTLSAndBasicAuthFromConfig(t *testing.T) {
	p := newTestPKI(t)
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("prometheus: scrape-me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, warnings, err := config.Load("", []string{
		"log.dirs=" + t.TempDir(),
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"http.listeners=https://127.0.0.1:0",
		"http.ssl.keystore.type=PKCS12", "http.ssl.keystore.location=" + p.brokerP12, "http.ssl.keystore.password=" + tlstest.Password,
		"http.authentication.method=BASIC", "http.authentication.users.file=" + users,
	})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("config: %v %v", err, warnings)
	}
	s, err := Start(cfg, quiet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: p.clientTLS(nil)}}
	get := func(path, user, pass string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+s.HTTPAddr()+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/metrics", "", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials: %d, want 401", code)
	}
	if code, body := get("/readyz", "prometheus", "scrape-me"); code != http.StatusOK {
		t.Errorf("/readyz of a started node: %d %q", code, body)
	}
	code, body := get("/metrics", "prometheus", "scrape-me")
	if code != http.StatusOK || !strings.Contains(body, "kafka_controller_kafkacontroller_activecontrollercount 1") {
		t.Errorf("/metrics: %d, want 200 with activecontrollercount 1", code)
	}
}

func TestHTTPListenersValidated(t *testing.T) {
	for _, v := range []string{"localhost:9644", "ftp://127.0.0.1:1", "http://nohostport"} {
		_, _, err := config.Load("", []string{"http.listeners=" + v})
		if err == nil || !strings.Contains(err.Error(), "http.listeners") {
			t.Errorf("http.listeners=%s: %v, want an error naming the key", v, err)
		}
	}
	for _, v := range []string{"FANCY"} {
		_, _, err := config.Load("", []string{"http.authentication.method=" + v})
		if err == nil || !strings.Contains(err.Error(), "http.authentication.method") {
			t.Errorf("http.authentication.method=%s: %v, want an error naming the key", v, err)
		}
	}
}
