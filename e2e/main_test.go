package e2e

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/samsa-io/samsa/internal/servertest"
)

// childDirEnv, when set, makes the test binary a Samsa server on that data
// directory instead of running tests: startKillable re-executes the binary
// this way to get a server it can SIGKILL.
const childDirEnv = "SAMSA_E2E_SERVER_DIR"

// childPropsEnv carries extra config overrides for that server, one per
// line.
const childPropsEnv = "SAMSA_E2E_SERVER_PROPS"

// childNofileEnv, when set with childDirEnv, is the open-file limit
// (RLIMIT_NOFILE, soft and hard) the server child sets on itself before it
// starts: lowering the hard limit cannot be undone, so only a child does it.
const childNofileEnv = "SAMSA_E2E_SERVER_NOFILE"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		flag.Parse() // servertest.Logger asks testing.Verbose
		if v := os.Getenv(childNofileEnv); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err == nil {
				err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "set RLIMIT_NOFILE to %q: %v\n", v, err)
				os.Exit(2)
			}
		}
		os.Exit(serveChild(dir))
	}
	os.Exit(m.Run())
}

// serveChild runs a server on dir, prints "addr=<address>" on stdout once
// it serves, and runs until SIGTERM or until it is killed.
func serveChild(dir string) int {
	t := &childTB{}
	var extra []string
	if props := os.Getenv(childPropsEnv); props != "" {
		extra = strings.Split(props, "\n")
	}
	srv := servertest.StartIn(t, dir, extra...)
	fmt.Printf("addr=%s\n", servertest.Addr(srv))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	t.cleanup()
	return 0
}

// childTB is the testing.TB servertest needs, outside a test.
type childTB struct {
	testing.TB
	cleanups []func()
}

func (c *childTB) Helper()          {}
func (c *childTB) Cleanup(f func()) { c.cleanups = append(c.cleanups, f) }
func (c *childTB) Fatalf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, f+"\n", a...)
	os.Exit(2)
}
func (c *childTB) cleanup() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
}

// startKillable starts a server on dir (with extra config overrides) in a
// child process and returns its address and a function that SIGKILLs it
// and waits for it to exit: a crash, with no shutdown code run.
func startKillable(t *testing.T, dir string, extra ...string) (addr string, kill func()) {
	t.Helper()
	addr, _, kill = startChild(t, dir, childPropsEnv+"="+strings.Join(extra, "\n"))
	return addr, kill
}

// startChild starts a server on dir in a child process, with extra
// environment (childPropsEnv, childNofileEnv), and returns its address, a
// function that stops it cleanly (SIGTERM) and fails the test unless it
// exits with status 0, and one that SIGKILLs it.
func startChild(t *testing.T, dir string, env ...string) (addr string, stop, kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childDirEnv+"="+dir), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill = func() {
		if killed {
			return
		}
		killed = true
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Cleanup(kill)
	stop = func() {
		t.Helper()
		if killed {
			return
		}
		killed = true
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("server child on %s: clean stop: %v", dir, err)
		}
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "addr="); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return a, stop, kill
		}
	}
	kill()
	t.Fatalf("server child on %s exited before serving: %v", dir, sc.Err())
	return "", nil, nil
}
