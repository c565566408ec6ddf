// Package clustertest holds what the multi-process cluster suites
// (e2e/cluster, e2e/nemesis) share: building the samsa binary once for a
// test run, printing the end of every node's log when a test fails, and
// securing a cluster's every listener (SASLSSL).
package clustertest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BuildBinary builds cmd/samsa into a new temporary directory and returns
// its path and a function that removes it. go test caches results by the
// files a test opens and cannot see the sources `go build` just read:
// opening the fresh binary (a new path every run) keeps a stale result
// from being reused.
func BuildBinary(prefix string) (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "samsa")
	build := exec.Command("go", "build", "-o", path, "github.com/samsa-io/samsa/cmd/samsa")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building samsa: %w", err)
	}
	if f, err := os.Open(path); err == nil {
		f.Close()
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// Main is a TestMain body: it builds the binary into *binary, runs the
// tests and removes the binary, and returns the exit code.
func Main(m *testing.M, prefix string, binary *string) int {
	path, cleanup, err := BuildBinary(prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	*binary = path
	return m.Run()
}

// DumpLogs logs the last lines of each of the n nodes' logs in dir
// (devcluster's node-<id>.log).
func DumpLogs(t testing.TB, dir string, n, lines int) {
	t.Helper()
	for id := 1; id <= n; id++ {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("node-%d.log", id)))
		if err != nil {
			continue
		}
		var tail []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			tail = append(tail, sc.Text())
		}
		f.Close()
		if len(tail) > lines {
			tail = tail[len(tail)-lines:]
		}
		t.Logf("---- node %d log (last %d lines) ----\n%s", id, len(tail), strings.Join(tail, "\n"))
	}
}
