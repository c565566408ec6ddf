// Package devcluster runs a local Samsa cluster, each node a separate
// `samsa server` process on loopback with its own data directory and log
// file: by default combined broker+controller nodes, or (Config.Controllers)
// controller-only voters plus broker-only nodes. `samsa dev cluster` uses
// it, and so do the tests that kill nodes.
package devcluster

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/samsa-io/samsa/internal/metadata"
)

// Config describes a cluster.
type Config struct {
	// Nodes is the number of combined nodes (node ids 1..Nodes); default
	// 3. Ignored when Controllers is set.
	Nodes int
	// Controllers, when non-zero, runs that many controller-only nodes
	// (ids 1..Controllers, the voters) and Brokers broker-only nodes
	// (ids Controllers+1..Controllers+Brokers) instead of combined ones.
	Controllers int
	// Brokers is the number of broker-only nodes with Controllers; default 1.
	Brokers int
	// Dir holds node-<id>/ data directories, node-<id>.properties and
	// node-<id>.log. Reusing a Dir restarts the same cluster.
	Dir string
	// Binary is the samsa executable, run as `Binary server ...`; default
	// os.Executable(), which is right for `samsa dev`. A test binary is not
	// a samsa binary: tests build one and pass its path (e2e/cluster does).
	Binary string
	// BasePort, when non-zero, gives the i-th node that serves clients
	// (in id order) client port BasePort+i-1 and the i-th voter controller
	// port BasePort+100+i-1: with combined nodes, node i has BasePort+i-1
	// and BasePort+100+i-1; with Controllers, the first broker-only node
	// has BasePort. Zero picks free ports.
	BasePort int
	// Properties are extra server properties for every node (key=value).
	Properties []string
	// StartTimeout bounds how long a node may take to serve; default 60 s.
	StartTimeout time.Duration
	// VoterAddr, when set, gives the address node from dials to reach
	// voter to, whose controller listener is addr: it rewrites each
	// node's controller.quorum.voters. Tests put a proxy there that they
	// can cut, to isolate a node from the quorum while clients still
	// reach it. Nil: every node dials addr.
	VoterAddr func(from, to int32, addr string) string
	// Host, when set, gives node id's listener host in place of
	// 127.0.0.1. Tests that run each node in a network namespace of its
	// own give each its address there.
	Host func(id int32) string
	// Wrap, when set, returns the command prefix that runs node id's
	// process (e.g. "ip netns exec <ns>"). The prefix must exec the
	// server in place, keeping the process id, so that Pause, Kill and
	// Stop reach the server itself.
	Wrap func(id int32) []string

	// ClientProtocol is the security protocol of the listener that
	// serves clients and other brokers (the inter-broker listener):
	// PLAINTEXT (the default), SSL, SASL_PLAINTEXT or SASL_SSL. The
	// listener is named after it, as Kafka's default listeners are.
	ClientProtocol string
	// ControllerProtocol is the security protocol of the CONTROLLER
	// listener; default PLAINTEXT.
	ControllerProtocol string
	// NodeProperties, when set, gives extra properties for node id,
	// written after Properties (later keys win): a node's own key
	// store, for instance.
	NodeProperties func(id int32) []string
	// AddScram are `samsa server --add-scram` arguments (Kafka's
	// `kafka-storage format --add-scram`) given to every controller:
	// SCRAM credentials written into the new metadata log, so that the
	// nodes' own SASL user exists before they replicate. A node whose
	// log exists ignores them.
	AddScram []string
}

// Cluster is a running set of nodes.
type Cluster struct {
	cfg       Config
	ClusterID string
	Nodes     []*Node
}

// Node is one samsa server process.
type Node struct {
	ID int32
	// Roles is the node's process.roles.
	Roles string
	// ClientAddr is the client (and inter-broker) listener,
	// host:port; empty on a controller-only node.
	ClientAddr string
	// ControllerAddr is the CONTROLLER listener; empty on a broker-only
	// node.
	ControllerAddr string
	Dir            string
	ConfigPath     string
	LogPath        string

	cl *Cluster

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the process exits
}

// Start writes each node's configuration (unless Dir already has one) and
// starts every node, returning once all of them serve clients.
func Start(cfg Config) (*Cluster, error) {
	if cfg.Controllers > 0 {
		cfg.Brokers = max(cfg.Brokers, 1)
		cfg.Nodes = cfg.Controllers + cfg.Brokers
	}
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Binary = exe
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg}
	if err := c.configure(); err != nil {
		return nil, err
	}
	errs := make(chan error, len(c.Nodes))
	for _, n := range c.Nodes {
		go func() { errs <- n.Start() }()
	}
	var all []error
	for range c.Nodes {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// configure reads the cluster id and ports of an existing Dir, or picks
// new ones and writes the node configurations.
func (c *Cluster) configure() error {
	idPath := filepath.Join(c.cfg.Dir, "cluster.id")
	if b, err := os.ReadFile(idPath); err == nil {
		c.ClusterID = strings.TrimSpace(string(b))
	} else {
		id, err := metadata.RandomUuid(rand.Reader)
		if err != nil {
			return err
		}
		c.ClusterID = id.String()
		if err := os.WriteFile(idPath, []byte(c.ClusterID+"\n"), 0o644); err != nil {
			return err
		}
	}
	ports, err := c.ports()
	if err != nil {
		return err
	}
	// voters is controller.quorum.voters as node from sees it.
	voters := func(from int32) string {
		var vs []string
		for i := range c.cfg.Nodes {
			to := int32(i + 1)
			if c.role(to) == "broker" {
				continue
			}
			addr := fmt.Sprintf("%s:%d", c.host(to), ports[2*i+1])
			if c.cfg.VoterAddr != nil && to != from {
				addr = c.cfg.VoterAddr(from, to, addr)
			}
			vs = append(vs, fmt.Sprintf("%d@%s", to, addr))
		}
		return strings.Join(vs, ",")
	}
	for i := range c.cfg.Nodes {
		id := int32(i + 1)
		n := &Node{ID: id, cl: c, Roles: c.role(id),
			Dir:        filepath.Join(c.cfg.Dir, fmt.Sprintf("node-%d", id)),
			ConfigPath: filepath.Join(c.cfg.Dir, fmt.Sprintf("node-%d.properties", id)),
			LogPath:    filepath.Join(c.cfg.Dir, fmt.Sprintf("node-%d.log", id)),
		}
		var listeners []string
		client := cmp.Or(c.cfg.ClientProtocol, "PLAINTEXT")
		if n.Roles != "controller" {
			n.ClientAddr = fmt.Sprintf("%s:%d", c.host(id), ports[2*i])
			listeners = append(listeners, client+"://"+n.ClientAddr)
		}
		if n.Roles != "broker" {
			n.ControllerAddr = fmt.Sprintf("%s:%d", c.host(id), ports[2*i+1])
			listeners = append(listeners, "CONTROLLER://"+n.ControllerAddr)
		}
		if _, err := os.Stat(n.ConfigPath); err != nil {
			props := []string{
				fmt.Sprintf("node.id=%d", id),
				"process.roles=" + n.Roles,
				"listeners=" + strings.Join(listeners, ","),
				"controller.listener.names=CONTROLLER",
				"listener.security.protocol.map=" + client + ":" + client + ",CONTROLLER:" + cmp.Or(c.cfg.ControllerProtocol, "PLAINTEXT"),
				"controller.quorum.voters=" + voters(id),
				"log.dirs=" + n.Dir,
			}
			if client != "PLAINTEXT" {
				// Kafka's default inter-broker listener is the one
				// named PLAINTEXT.
				props = append(props, "inter.broker.listener.name="+client)
			}
			props = append(props, c.cfg.Properties...)
			if c.cfg.NodeProperties != nil {
				props = append(props, c.cfg.NodeProperties(id)...)
			}
			if err := os.WriteFile(n.ConfigPath, []byte(strings.Join(props, "\n")+"\n"), 0o644); err != nil {
				return err
			}
		} else if err := n.readAddrs(); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, n)
	}
	return nil
}

// host is node id's listener host.
func (c *Cluster) host(id int32) string {
	if c.cfg.Host != nil {
		return c.cfg.Host(id)
	}
	return "127.0.0.1"
}

// role is node id's process.roles.
func (c *Cluster) role(id int32) string {
	switch {
	case c.cfg.Controllers == 0:
		return "broker,controller"
	case int(id) <= c.cfg.Controllers:
		return "controller"
	default:
		return "broker"
	}
}

// ports returns a client and a controller port per node.
func (c *Cluster) ports() ([]int, error) {
	n := c.cfg.Nodes
	ports := make([]int, 2*n)
	if c.cfg.BasePort != 0 {
		// Client ports are numbered over the nodes that serve clients
		// and controller ports over the voters, so that BasePort is a
		// broker's whatever the layout.
		var brokers, voters int
		for i := range n {
			role := c.role(int32(i + 1))
			if role != "controller" {
				ports[2*i] = c.cfg.BasePort + brokers
				brokers++
			}
			if role != "broker" {
				ports[2*i+1] = c.cfg.BasePort + 100 + voters
				voters++
			}
		}
		return ports, nil
	}
	return FreePorts(len(ports))
}

// readAddrs takes the listener addresses from an existing configuration.
func (n *Node) readAddrs() error {
	b, err := os.ReadFile(n.ConfigPath)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "listeners=")
		if !ok {
			continue
		}
		for _, l := range strings.Split(v, ",") {
			name, addr, _ := strings.Cut(l, "://")
			if name == "CONTROLLER" {
				n.ControllerAddr = addr
			} else {
				n.ClientAddr = addr
			}
		}
	}
	return nil
}

// Bootstrap lists the client addresses of every node that serves clients.
func (c *Cluster) Bootstrap() []string {
	var addrs []string
	for _, n := range c.Nodes {
		if n.ClientAddr != "" {
			addrs = append(addrs, n.ClientAddr)
		}
	}
	return addrs
}

// Node returns the node with an id.
func (c *Cluster) Node(id int32) *Node { return c.Nodes[id-1] }

// Close stops every running node gracefully: the broker-only nodes
// first, while the quorum they hand their leaderships over through still
// runs (a broker stopped after the controllers waits in vain for its
// controlled shutdown to be granted), then the voters.
func (c *Cluster) Close() {
	stop := func(roles func(string) bool) {
		var wg sync.WaitGroup
		for _, n := range c.Nodes {
			if roles(n.Roles) {
				wg.Add(1)
				go func() { defer wg.Done(); n.Stop() }()
			}
		}
		wg.Wait()
	}
	stop(func(r string) bool { return r == "broker" })
	stop(func(r string) bool { return r != "broker" })
}

// readyMarker is the log line a node writes once it serves clients;
// controllerReadyMarker the one a controller-only node writes once the
// metadata log is bootstrapped.
const (
	readyMarker           = `msg="serving Kafka clients"`
	controllerReadyMarker = `msg="controller ready"`
)

// Start runs the node's process and waits until it serves clients, or
// for a controller-only node until it is ready (or it exits, or the start
// timeout passes).
func (n *Node) Start() error {
	n.mu.Lock()
	if n.cmd != nil {
		n.mu.Unlock()
		return fmt.Errorf("node %d is already running", n.ID)
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.mu.Unlock()
		return err
	}
	args := []string{n.cl.cfg.Binary, "server", "--config", n.ConfigPath, "--cluster-id", n.cl.ClusterID}
	if n.Roles != "broker" {
		for _, a := range n.cl.cfg.AddScram {
			args = append(args, "--add-scram", a)
		}
	}
	if n.cl.cfg.Wrap != nil {
		args = append(n.cl.cfg.Wrap(n.ID), args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	pr, pw := io.Pipe()
	cmd.Stdout = logf
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		logf.Close()
		n.mu.Unlock()
		return fmt.Errorf("start node %d: %w", n.ID, err)
	}
	n.cmd = cmd
	done := make(chan struct{})
	n.done = done
	n.mu.Unlock()

	marker := readyMarker
	if n.Roles == "controller" {
		marker = controllerReadyMarker
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if !signalled && strings.Contains(line, marker) {
				signalled = true
				close(ready)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		cmd.Wait()
		pw.Close()
		n.mu.Lock()
		if n.cmd == cmd {
			n.cmd = nil
		}
		n.mu.Unlock()
		close(done)
	}()
	select {
	case <-ready:
		return nil
	case <-done:
		return fmt.Errorf("node %d exited during start-up; see %s", n.ID, n.LogPath)
	case <-time.After(n.cl.cfg.StartTimeout):
		n.Kill()
		return fmt.Errorf("node %d did not serve within %v; see %s", n.ID, n.cl.cfg.StartTimeout, n.LogPath)
	}
}

// Running reports whether the process is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Pause stops the process with SIGSTOP: it keeps its sockets but does
// nothing, like a machine that hangs. Resume continues it.
func (n *Node) Pause() { n.signal(syscall.SIGSTOP, -1) }

// Resume continues a paused process (SIGCONT).
func (n *Node) Resume() { n.signal(syscall.SIGCONT, -1) }

// Kill sends SIGKILL and waits for the process to be gone.
func (n *Node) Kill() { n.signal(syscall.SIGKILL, 0) }

// Stop sends SIGTERM and waits up to 30 s for a clean exit, then kills.
func (n *Node) Stop() { n.signal(syscall.SIGTERM, 30*time.Second) }

func (n *Node) signal(sig syscall.Signal, grace time.Duration) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	if grace < 0 {
		return // no exit to wait for
	}
	if grace > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		select {
		case <-done:
			return
		case <-ctx.Done():
			cmd.Process.Kill()
		}
	}
	<-done
}
