package raft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// testCluster runs real Nodes over TCPTransport on 127.0.0.1.
type testCluster struct {
	t     *testing.T
	ids   []uint64
	addrs map[uint64]string
	dirs  map[uint64]string
	every uint64
	nodes map[uint64]*Node // nil while stopped
	trs   map[uint64]*TCPTransport
	apps  map[uint64]*memApplier
	// cut is a partitioned node that waitLeader does not consult.
	cut uint64
	// joining are nodes started with Config.Join.
	joining map[uint64]bool
}

// setPeers points tr at the voters' first endpoints, as the server does.
func setPeers(tr *TCPTransport, vs map[uint64]Voter) {
	for id, v := range vs {
		if len(v.Endpoints) > 0 {
			tr.SetPeer(id, v.Endpoints[0].Addr())
		}
	}
	for id := range tr.Peers() {
		if _, ok := vs[id]; !ok {
			tr.RemovePeer(id)
		}
	}
}

func newTestCluster(t *testing.T, size int, every uint64) *testCluster {
	t.Helper()
	c := &testCluster{t: t, addrs: map[uint64]string{}, dirs: map[uint64]string{}, every: every,
		nodes: map[uint64]*Node{}, trs: map[uint64]*TCPTransport{}, apps: map[uint64]*memApplier{}, joining: map[uint64]bool{}}
	lns := map[uint64]net.Listener{}
	for i := 1; i <= size; i++ {
		id := uint64(i)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c.ids = append(c.ids, id)
		lns[id] = ln
		c.addrs[id] = ln.Addr().String()
		c.dirs[id] = t.TempDir()
	}
	for _, id := range c.ids {
		c.startWith(id, lns[id])
	}
	t.Cleanup(func() {
		for _, id := range c.ids {
			c.stop(id)
		}
	})
	return c
}

// start restarts a stopped node on its old address and directory.
func (c *testCluster) start(id uint64) {
	c.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the old socket may linger for a moment
		if ln, err = net.Listen("tcp", c.addrs[id]); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.startWith(id, ln)
}

func (c *testCluster) startWith(id uint64, ln net.Listener) {
	c.t.Helper()
	tr, err := NewTCPTransport(TCPConfig{ID: id, ClusterID: "test-cluster", Peers: c.addrs, Listener: ln,
		Logger: quietLogger(), DialTimeout: time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	a := &memApplier{}
	n, err := Open(Config{ID: id, Peers: c.ids, Dir: c.dirs[id], Transport: tr, Applier: a,
		Logger: quietLogger(), TickInterval: 10 * time.Millisecond, SnapshotEvery: c.every,
		Join: c.joining[id], OnVoters: func(vs map[uint64]Voter) { setPeers(tr, vs) }})
	if err != nil {
		tr.Close()
		c.t.Fatal(err)
	}
	tr.Attach(n)
	c.nodes[id], c.trs[id], c.apps[id] = n, tr, a
}

func (c *testCluster) stop(id uint64) {
	if n := c.nodes[id]; n != nil {
		n.Close()
		c.trs[id].Close()
		c.nodes[id] = nil
	}
}

// eventually polls cond every 10ms for up to 10s.
func (c *testCluster) eventually(what string, cond func() bool) {
	c.t.Helper()
	// A liveness bound, generous for two busy cores: elections take a
	// few ticks; how many is for benchmarks, not for this test.
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLeader waits until every running node (but cut) names the same running leader.
func (c *testCluster) waitLeader() uint64 {
	c.t.Helper()
	var lead uint64
	c.eventually("one agreed leader", func() bool {
		lead = 0
		for _, id := range c.ids {
			n := c.nodes[id]
			if n == nil || id == c.cut {
				continue
			}
			l := n.Leader()
			if l == 0 || (lead != 0 && l != lead) {
				return false
			}
			lead = l
		}
		return c.nodes[lead] != nil && c.nodes[lead].IsLeader()
	})
	return lead
}

// propose proposes each value on the current leader, retrying across
// leader changes, and returns the indexes.
func (c *testCluster) propose(data ...string) []uint64 {
	c.t.Helper()
	var idx []uint64
	for _, d := range data {
		var i uint64
		c.eventually("commit of "+d, func() bool {
			// A proposal whose wait timed out may still commit: one
			// applied anywhere is not proposed again (each datum is
			// proposed once, as a client that checks before it retries).
			if at, ok := c.appliedAt(d); ok {
				i = at
				return true
			}
			n := c.nodes[c.waitLeader()]
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var err error
			i, err = n.Propose(ctx, []byte(d))
			return err == nil
		})
		idx = append(idx, i)
	}
	return idx
}

// appliedAt is the index at which a running node applied d.
func (c *testCluster) appliedAt(d string) (uint64, bool) {
	for _, id := range c.ids {
		if c.nodes[id] == nil {
			continue
		}
		idx, data := c.apps[id].state()
		if k := slices.Index(data, d); k >= 0 {
			return idx[k], true
		}
	}
	return 0, false
}

// waitConverged waits until every running node applied exactly want.
func (c *testCluster) waitConverged(want []string) {
	c.t.Helper()
	c.eventually(fmt.Sprintf("all nodes applying %v", want), func() bool {
		for _, id := range c.ids {
			if c.nodes[id] == nil {
				continue
			}
			if _, d := c.apps[id].state(); !slices.Equal(d, want) {
				return false
			}
		}
		return true
	})
}

func seq(prefix string, from, to int) []string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, fmt.Sprintf("%s%d", prefix, i))
	}
	return s
}

func TestClusterElectsOneLeaderAndReplicatesInOrder(t *testing.T) {
	c := newTestCluster(t, 3, 1000)
	lead := c.waitLeader()
	for _, id := range c.ids {
		if id == lead {
			continue
		}
		if c.nodes[id].IsLeader() {
			t.Fatalf("node %d and %d both lead", id, lead)
		}
		_, err := c.nodes[id].Propose(context.Background(), []byte("x"))
		if !errors.Is(err, ErrNotLeader) {
			t.Fatalf("propose on follower %d: err = %v, want ErrNotLeader", id, err)
		}
	}
	want := seq("v", 0, 10)
	idx := c.propose(want...)
	if !slices.IsSorted(idx) || idx[9]-idx[0] != 9 {
		t.Fatalf("indexes not consecutive: %v", idx)
	}
	c.waitConverged(want)
	for _, id := range c.ids {
		if gotIdx, _ := c.apps[id].state(); !slices.Equal(gotIdx, idx) {
			t.Fatalf("node %d applied at %v, leader assigned %v", id, gotIdx, idx)
		}
		if tm := c.nodes[id].Term(); tm != c.nodes[lead].Term() {
			t.Fatalf("node %d term %d, leader term %d", id, tm, c.nodes[lead].Term())
		}
	}
}

func TestClusterLeaderFailover(t *testing.T) {
	c := newTestCluster(t, 3, 1000)
	old := c.waitLeader()
	oldTerm := c.nodes[old].Term()
	c.propose("a", "b")
	c.stop(old)
	lead := c.waitLeader()
	if lead == old {
		t.Fatalf("stopped node %d still leader", old)
	}
	if tm := c.nodes[lead].Term(); tm <= oldTerm {
		t.Fatalf("new leader term %d, want > %d", tm, oldTerm)
	}
	c.propose("c", "d")
	c.waitConverged([]string{"a", "b", "c", "d"})
	// The old leader rejoins as a follower and catches up.
	c.start(old)
	c.waitConverged([]string{"a", "b", "c", "d"})
	if l := c.waitLeader(); l != lead {
		t.Fatalf("rejoining node %d disrupted leader %d (now %d)", old, lead, l)
	}
}

func TestClusterRestartedNodeCatchesUpFromSnapshot(t *testing.T) {
	c := newTestCluster(t, 3, 5)
	lead := c.waitLeader()
	c.propose(seq("p", 0, 3)...)
	c.waitConverged(seq("p", 0, 3))
	var down uint64
	for _, id := range c.ids {
		if id != lead {
			down = id
			break
		}
	}
	c.stop(down)
	// Enough entries that the leader snapshots and compacts past what the
	// stopped node has, so it can only catch up by snapshot.
	want := seq("p", 0, 30)
	c.propose(want[3:]...)
	c.start(down)
	c.waitConverged(want)
	a := c.apps[down]
	a.mu.Lock()
	restores := a.restores
	a.mu.Unlock()
	if restores == 0 {
		t.Fatal("restarted node caught up without restoring a snapshot; expected the leader's snapshot")
	}
	c.propose("after")
	c.waitConverged(append(want, "after"))
}

func TestClusterPartitionedNodeRejoins(t *testing.T) {
	c := newTestCluster(t, 3, 1000)
	lead := c.waitLeader()
	var cut uint64
	for _, id := range c.ids {
		if id != lead {
			cut = id
			break
		}
	}
	all := func(*pb.Message) bool { return true }
	c.trs[cut].setDrop(all)
	c.cut = cut
	c.propose("x", "y", "z")
	// The cut node sees none of it. Wait until its election timer ran out
	// (it forgets the leader and pre-campaigns): PreVote must keep those
	// campaigns from disrupting the majority, now and after healing.
	c.eventually("the cut node to give up on the leader", func() bool { return c.nodes[cut].Leader() == 0 })
	if _, d := c.apps[cut].state(); len(d) != 0 {
		t.Fatalf("partitioned node applied %v", d)
	}
	if l := c.waitLeader(); l == cut {
		t.Fatalf("partitioned node %d became leader", cut)
	}
	termBefore := c.nodes[lead].Term()
	c.trs[cut].setDrop(nil)
	c.cut = 0
	c.waitConverged([]string{"x", "y", "z"})
	c.propose("w")
	c.waitConverged([]string{"x", "y", "z", "w"})
	if c.nodes[lead].Term() != termBefore || !c.nodes[lead].IsLeader() {
		t.Fatalf("rejoin disrupted the leader: term %d -> %d", termBefore, c.nodes[lead].Term())
	}
}

func TestClusterSurvivesGarbageOnRaftPort(t *testing.T) {
	c := newTestCluster(t, 3, 1000)
	lead := c.waitLeader()
	conn, err := net.Dial("tcp", c.addrs[lead])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	if n, err := conn.Read(b[:]); n != 0 || !closedByPeer(err) {
		t.Fatalf("garbage connection: read %d bytes, err %v; want closed", n, err)
	}
	c.propose("still", "works")
	c.waitConverged([]string{"still", "works"})
	if l := c.waitLeader(); l != lead {
		t.Fatalf("leader changed %d -> %d", lead, l)
	}
}
