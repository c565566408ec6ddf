package nemesis

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binary is the samsa executable built once for all tests.
var binary string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		// Nothing to build for: the fault tests skip, and the schedule
		// test needs no binary.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "samsa-nemesis")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "samsa")
	build := exec.Command("go", "build", "-o", binary, "github.com/samsa-io/samsa/cmd/samsa")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building samsa:", err)
		os.Exit(1)
	}
	// A fresh path every run keeps go test from reusing a cached result
	// built from older sources.
	if f, err := os.Open(binary); err == nil {
		f.Close()
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fastFailover makes a lost broker's session expire in seconds, so a run
// spends its time on failovers rather than waiting (as e2e/cluster).
var fastFailover = []string{
	"broker.session.timeout.ms=3000",
	"broker.heartbeat.interval.ms=300",
	"replica.lag.time.max.ms=5000",
	"replica.fetch.wait.max.ms=200",
	"offsets.topic.replication.factor=3",
	"offsets.topic.num.partitions=6",
	"transaction.state.log.replication.factor=3",
	"transaction.state.log.min.isr=2",
	"transaction.state.log.num.partitions=6",
	"group.initial.rebalance.delay.ms=0",
}

// dumpLogs prints the end of every node's log.
func dumpLogs(t *testing.T, dir string, n int) {
	for id := 1; id <= n; id++ {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("node-%d.log", id)))
		if err != nil {
			continue
		}
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		f.Close()
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		t.Logf("---- node %d log (last %d lines) ----\n%s", id, len(lines), strings.Join(lines, "\n"))
	}
}
