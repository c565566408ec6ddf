// Package servertest starts in-process Samsa nodes for tests: a fresh data
// directory, an ephemeral loopback port, and shutdown when the test ends.
package servertest

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/server"
)

// Start starts a single-node Samsa server for t on a temporary data
// directory and returns it; extra are config overrides (key=value). Logs go
// to stderr when the test runs with -v.
func Start(t testing.TB, extra ...string) *server.Server {
	t.Helper()
	return StartIn(t, t.TempDir(), extra...)
}

// StartIn is Start on a given data directory, for restart tests.
func StartIn(t testing.TB, dir string, extra ...string) *server.Server {
	t.Helper()
	overrides := append([]string{
		"log.dirs=" + dir,
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
	}, extra...)
	cfg, warnings, err := config.Load("", overrides)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	if len(warnings) > 0 {
		t.Fatalf("servertest: config warnings: %v", warnings)
	}
	s, err := server.Start(cfg, Logger(), nil)
	if err != nil {
		t.Fatalf("servertest: start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Addr is the server's client address.
func Addr(s *server.Server) string { return s.Addr("PLAINTEXT") }

// Logger logs to stderr under -v and nowhere otherwise.
func Logger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
