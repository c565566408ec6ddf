package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var consoleRE = regexp.MustCompile(`serving the web console" url=(\S+)`)

// TestServerConsole: `samsa server` with http.listeners serves the web
// console at / of that listener, showing the node's topics.
func TestServerConsole(t *testing.T) {
	srv := startServerProc(t, t.TempDir(), "--override", "http.listeners=http://127.0.0.1:0",
		"--override", "schema.registry.listeners=", "--override", "rest.proxy.listeners=")
	url := strings.TrimSuffix(waitFor(t, consoleRE, srv.stderr.String), "/")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, "seen-in-console"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/topics/seen-in-console")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Topic seen-in-console") || strings.Count(string(body), "<tr>") < 5 {
		t.Fatalf("GET /topics/seen-in-console: %d\n%s", resp.StatusCode, body)
	}
	// /metrics still answers beside it.
	resp, err = http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
}
