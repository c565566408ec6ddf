package main

import (
	"bytes"
	"flag"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/servertest"
)

// startTestCluster starts a one-node Samsa server in-process for the CLI to
// talk to and returns its bootstrap address.
func startTestCluster(t *testing.T) string {
	t.Helper()
	return servertest.Addr(servertest.Start(t))
}

// result is what one CLI invocation printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

// samsa runs the CLI in-process with the given stdin, as main would.
func samsa(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// mustRun runs the CLI and fails the test unless it exits 0.
func mustRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := samsa(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("samsa %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// deadAddr returns a loopback address on which nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestParseArgsInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 0, "")
	b := fs.Bool("b", false, "")
	var kv kvList
	fs.Var(&kv, "kv", "")
	pos, _, ok := parseArgs(fs, []string{"a", "--n", "-3", "b", "--b", "--kv", "x=1=2", "-kv=y=", "--", "--n", "c"})
	if !ok {
		t.Fatal("parse failed")
	}
	if want := []string{"a", "b", "--n", "c"}; !slices.Equal(pos, want) {
		t.Errorf("positional = %q, want %q", pos, want)
	}
	if *n != -3 || !*b {
		t.Errorf("n=%d b=%t, want -3 true", *n, *b)
	}
	if kv.String() != "x=1=2,y=" {
		t.Errorf("kv = %q", kv.String())
	}
}

func TestParseArgsErrors(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var kv kvList
	fs.Var(&kv, "kv", "")
	if _, code, ok := parseArgs(fs, []string{"--nope"}); ok || code != exitUsage {
		t.Errorf("unknown flag: ok=%t code=%d, want false 2", ok, code)
	}
	if _, code, ok := parseArgs(fs, []string{"--kv", "novalue"}); ok || code != exitUsage {
		t.Errorf("bad kv: ok=%t code=%d, want false 2", ok, code)
	}
	if _, code, ok := parseArgs(fs, []string{"-h"}); ok || code != exitOK {
		t.Errorf("-h: ok=%t code=%d, want false 0", ok, code)
	}
}

func TestUnreachableCluster(t *testing.T) {
	addr := deadAddr(t)
	for _, args := range [][]string{
		{"topic", "list"},
		{"topic", "create", "t"},
		{"produce", "t"},
		{"consume", "t", "--exit-at-end"},
	} {
		r := samsa(t, "a\n", append(args, "--bootstrap", addr, "--timeout", "2s")...)
		want := "samsa: cannot reach " + addr + ": "
		if r.code != 1 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 1 and one line starting %q", args, r.code, r.stderr, want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"topic", "list", "--no-such-flag"},
		{"topic"},
		{"topic", "frobnicate"},
		{"topic", "create"},
		{"topic", "create", "a", "b"},
		{"topic", "create", "a", "--partitions", "0"},
		{"topic", "describe"},
		{"produce"},
		{"produce", "t", "--acks", "2"},
		{"produce", "t", "--compression", "brotli"},
		{"consume", "t", "--from", "yesterday"},
		{"consume", "t", "--format", "%x"},
		{"consume", "t", "--unknown"},
	} {
		r := samsa(t, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "usage: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with usage", args, r.code, r.stderr)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	r := samsa(t, "", "consume", "-h")
	// Asked for, the usage goes to stdout (a pager, grep).
	if r.code != 0 || !strings.Contains(r.stdout, "--exit-at-end") || !strings.Contains(r.stdout, "%T timestamp") || r.stderr != "" {
		t.Errorf("consume -h: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// silentAddr returns a loopback address that accepts connections but never
// answers, like a hung broker or a wrong service.
func silentAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func TestSilentClusterTimesOut(t *testing.T) {
	addr := silentAddr(t)
	start := time.Now()
	r := samsa(t, "", "topic", "list", "--bootstrap", addr, "--timeout", "500ms")
	want := "samsa: cannot reach " + addr + ": no answer within 500ms\n"
	if r.code != 1 || r.stderr != want {
		t.Errorf("exit %d stderr %q, want 1 and %q", r.code, r.stderr, want)
	}
	// --timeout, not the 10 s default, bounds the wait: the answer comes
	// no sooner than 500ms and before the default would have run out (a
	// 20x margin, so that a busy machine does not fail it).
	if d := time.Since(start); d < 500*time.Millisecond || d >= 10*time.Second {
		t.Errorf("took %v to give up with --timeout 500ms; want at least 500ms and less than the 10s default", d)
	}
}

func TestBootstrapList(t *testing.T) {
	b := startTestCluster(t)
	r := mustRun(t, "", "topic", "create", "x", "--bootstrap", deadAddr(t)+", "+b)
	if r.stdout == "" {
		t.Error("create through a bootstrap list with one dead seed printed nothing")
	}
}
