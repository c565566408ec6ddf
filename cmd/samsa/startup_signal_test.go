package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// freePort returns a loopback port nothing listens on (bound then freed).
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := devcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// TestSIGTERMDuringStartupExits starts a voter of a three-voter quorum
// whose other voters never come up, so start-up blocks waiting for a
// controller (for up to two minutes before the fix, with SIGTERM caught but
// unread). SIGTERM must end it within a few seconds with exit code 0.
func TestSIGTERMDuringStartupExits(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"cluster", "new-id"}, nil, &out, io.Discard); code != 0 {
		t.Fatalf("cluster new-id: exit %d", code)
	}
	p1, p2, p3 := freePort(t), freePort(t), freePort(t)
	cmd := exec.Command(os.Args[0], "server",
		"--cluster-id", strings.TrimSpace(out.String()),
		"--override", "node.id=1",
		"--override", "log.dirs="+t.TempDir(),
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", p1),
		"--override", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d,2@127.0.0.1:%d,3@127.0.0.1:%d", p1, p2, p3),
	)
	cmd.Env = append(os.Environ(), "SAMSA_RUN_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	quorum := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if strings.Contains(sc.Text(), "serving the controller quorum") {
				close(quorum)
			}
		}
	}()
	done := make(chan error, 1)
	go func() { <-scanned; done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	select {
	case <-quorum:
	case err := <-done:
		t.Fatalf("server exited during start-up: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not reach the quorum wait in 30s:\n%s", log.String())
	}
	// Let it block in the wait for the other voters.
	time.Sleep(time.Second)
	if strings.Contains(log.String(), "serving Kafka clients") {
		t.Fatalf("a voter without a quorum served clients:\n%s", log.String())
	}

	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM during start-up: %v\n%s", err, log.String())
		}
		t.Logf("exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("server still running 10s after SIGTERM during start-up:\n%s", log.String())
	}
}
