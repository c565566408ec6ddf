//go:build linux

package nemesis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// subnet is the private network that exists only inside the test's own
// namespaces: node i is subnet.i, the hub's bridge subnet.254.
const subnet = "10.99.0."

// nsPrefix starts the name of every namespace the suite creates; the pid
// that follows lets a later run remove what a killed run left behind.
const nsPrefix = "samsanem-"

// netLab is the test's network: a hub namespace with a bridge, one
// namespace per node, and the tc state of each node's link.
type netLab struct {
	t     *testing.T
	name  string // nsPrefix + pid
	nodes []int32

	mu   sync.Mutex
	cuts map[[2]int32]bool // [from, to]: from's packets to `to` are dropped
	loss float64           // fraction of every node's packets dropped
}

func (l *netLab) hubNS() string          { return l.name + "-hub" }
func (l *netLab) nodeNS(id int32) string { return fmt.Sprintf("%s-n%d", l.name, id) }
func nodeIP(id int32) string             { return subnet + strconv.Itoa(int(id)) }

// run runs a command and fails with its output.
func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newNetLab builds the namespaces, bridge, links and qdiscs, and removes
// them when the test ends (register it before the cluster, so the nodes
// are stopped first).
func newNetLab(t *testing.T, nodes []int32) *netLab {
	t.Helper()
	sweepStale(t)
	l := &netLab{t: t, name: fmt.Sprintf("%s%d", nsPrefix, os.Getpid()), nodes: nodes, cuts: map[[2]int32]bool{}}
	t.Cleanup(l.destroy)
	hub := l.hubNS()
	steps := [][]string{
		{"ip", "netns", "add", hub},
		{"ip", "-n", hub, "link", "set", "lo", "up"},
		{"ip", "-n", hub, "link", "add", "name", "br0", "type", "bridge"},
		{"ip", "-n", hub, "addr", "add", subnet + "254/24", "dev", "br0"},
		{"ip", "-n", hub, "link", "set", "br0", "up"},
	}
	for _, id := range nodes {
		ns, port := l.nodeNS(id), fmt.Sprintf("p%d", id)
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"},
			[]string{"ip", "-n", hub, "link", "add", "name", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"ip", "-n", hub, "link", "set", port, "master", "br0", "up"},
			[]string{"ip", "-n", ns, "addr", "add", nodeIP(id) + "/24", "dev", "eth0"},
			[]string{"ip", "-n", ns, "link", "set", "eth0", "up"},
			// Class 1:1 passes, class 1:2 drops: a pfifo of limit 0
			// refuses every packet.
			[]string{"tc", "-n", ns, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "1", "r2q", "1000"},
			[]string{"tc", "-n", ns, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit"},
			[]string{"tc", "-n", ns, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:2", "htb", "rate", "10gbit"},
			[]string{"tc", "-n", ns, "qdisc", "add", "dev", "eth0", "parent", "1:2", "handle", "2:", "pfifo", "limit", "0"},
		)
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			t.Fatalf("building the test network: %v", err)
		}
	}
	return l
}

// sweepStale deletes namespaces left by suite runs whose process is gone.
func sweepStale(t *testing.T) {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), nsPrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || syscall.Kill(pid, 0) == nil {
			continue
		}
		t.Logf("removing stale namespace %s", e.Name())
		run("ip", "netns", "del", e.Name())
	}
}

// destroy deletes every namespace; their links go with them.
func (l *netLab) destroy() {
	for _, id := range l.nodes {
		run("ip", "netns", "del", l.nodeNS(id))
	}
	run("ip", "netns", "del", l.hubNS())
}

// wrap is devcluster.Config.Wrap: ip netns exec execs the server in place.
func (l *netLab) wrap(id int32) []string { return []string{"ip", "netns", "exec", l.nodeNS(id)} }

// inNetns runs f on a thread switched into namespace ns. Sockets keep the
// namespace they were created in.
func inNetns(ns string, f func()) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + ns)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked and dies with the goroutine rather
		// than serve others in the wrong namespace.
		return fmt.Errorf("setns back: %w", err)
	}
	runtime.UnlockOSThread()
	return nil
}

// dialFrom dials addr with a socket in namespace ns.
func dialFrom(ctx context.Context, ns, network, addr string) (net.Conn, error) {
	var c net.Conn
	var derr error
	if err := inNetns(ns, func() {
		var d net.Dialer
		c, derr = d.DialContext(ctx, network, addr)
	}); err != nil {
		return nil, err
	}
	return c, derr
}

// dial is the clients' kgo.Dialer: every client of the test lives in the
// hub namespace.
func (l *netLab) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialFrom(ctx, l.hubNS(), network, addr)
}

// setCut drops (or passes again) from's packets to `to`.
func (l *netLab) setCut(from, to int32, cut bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cuts[[2]int32{from, to}] == cut {
		return nil
	}
	prio := strconv.Itoa(10 + int(to))
	ns := l.nodeNS(from)
	var err error
	if cut {
		err = run("tc", "-n", ns, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", prio,
			"u32", "match", "ip", "dst", nodeIP(to)+"/32", "flowid", "1:2")
	} else {
		err = run("tc", "-n", ns, "filter", "del", "dev", "eth0", "parent", "1:", "prio", prio)
	}
	if err == nil {
		l.cuts[[2]int32{from, to}] = cut
	}
	return err
}

// setLoss drops the fraction p of every node's outgoing packets (0 heals).
// The classic-BPF program loads the kernel's per-packet random number
// (SKF_AD_RANDOM) and classifies the packet into the drop class 1:2 when
// it is above (1-p)·2³².
func (l *netLab) setLoss(p float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p == l.loss {
		return nil
	}
	var errs []error
	for _, id := range l.nodes {
		ns := l.nodeNS(id)
		if l.loss > 0 {
			if err := run("tc", "-n", ns, "filter", "del", "dev", "eth0", "parent", "1:", "prio", "5"); err != nil {
				errs = append(errs, err)
			}
		}
		if p > 0 {
			threshold := uint32((1 - p) * (1 << 32))
			prog := fmt.Sprintf("4,32 0 0 4294963256,37 0 1 %d,6 0 0 65538,6 0 0 0", threshold)
			if err := run("tc", "-n", ns, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "5",
				"bpf", "bytecode", prog, "classid", "1:2"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	l.loss = p
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// healAll removes every cut and the loss.
func (l *netLab) healAll() error {
	l.mu.Lock()
	var cut [][2]int32
	for link, on := range l.cuts {
		if on {
			cut = append(cut, link)
		}
	}
	l.mu.Unlock()
	var errs []error
	for _, link := range cut {
		if err := l.setCut(link[0], link[1], false); err != nil {
			errs = append(errs, err)
		}
	}
	if err := l.setLoss(0); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// selfTest proves that a cut really stops traffic: a TCP listener in one
// node's namespace is reachable from another's, not while the link is cut,
// and again once it is healed; and that a loss of 100% drops everything.
func (l *netLab) selfTest(t *testing.T) {
	t.Helper()
	a, b := l.nodes[0], l.nodes[1]
	var ln net.Listener
	var lerr error
	if err := inNetns(l.nodeNS(b), func() { ln, lerr = net.Listen("tcp", nodeIP(b)+":7999") }); err != nil || lerr != nil {
		t.Fatalf("self-test listener: %v %v", err, lerr)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	reach := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		c, err := dialFrom(ctx, l.nodeNS(a), "tcp", nodeIP(b)+":7999")
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	check := func(want bool, what string) {
		if got := reach(); got != want {
			t.Fatalf("network self-test: %s: node %d reaches node %d: %v, want %v", what, a, b, got, want)
		}
	}
	check(true, "before any fault")
	if err := l.setCut(a, b, true); err != nil {
		t.Fatal(err)
	}
	check(false, "one-way cut a→b")
	if err := l.setCut(a, b, false); err != nil {
		t.Fatal(err)
	}
	check(true, "after the heal")
	if err := l.setCut(b, a, true); err != nil {
		t.Fatal(err)
	}
	check(false, "one-way cut b→a (the SYN-ACK is dropped)")
	if err := l.healAll(); err != nil {
		t.Fatal(err)
	}
	if err := l.setLoss(1); err != nil {
		t.Fatal(err)
	}
	check(false, "100% loss")
	if err := l.healAll(); err != nil {
		t.Fatal(err)
	}
	check(true, "after healing everything")
	// The hub (the clients' namespace) reaches the node too.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	c, err := l.dial(ctx, "tcp", nodeIP(b)+":7999")
	if err != nil {
		t.Fatalf("network self-test: the hub does not reach node %d: %v", b, err)
	}
	c.Close()
}
