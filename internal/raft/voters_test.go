package raft

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"
)

// addJoiner starts node id with Config.Join on a fresh directory, its
// transport pointed at the current voters, and returns its Voter.
func (c *testCluster) addJoiner(id uint64) Voter {
	c.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	c.addrs[id] = ln.Addr().String()
	c.dirs[id] = c.t.TempDir()
	c.joining[id] = true
	c.startWith(id, ln)
	c.t.Cleanup(func() { c.stop(id) })
	host, port, _ := net.SplitHostPort(c.addrs[id])
	p, _ := net.LookupPort("tcp", port)
	return Voter{ID: id, DirectoryID: [16]byte{byte(id), 1}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: host, Port: uint16(p)}}}
}

func (c *testCluster) voterIDs(id uint64) (voters, learners []uint64) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	vs, ls, err := c.nodes[id].Voters(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, v := range vs {
		voters = append(voters, v.ID)
	}
	for _, v := range ls {
		learners = append(learners, v.ID)
	}
	slices.Sort(voters)
	return voters, learners
}

// addJoiner does not add id to c.ids: waitLeader would wait for a
// learner to know the leader.

// A joining node never campaigns; AddVoter makes it a learner, catches it
// up (by snapshot here) and promotes it; the voter set, endpoints and
// directory id included, survives a restart; RemoveVoter takes it out.
func TestClusterAddAndRemoveVoter(t *testing.T) {
	c := newTestCluster(t, 3, 5)
	want := c.propose(seq("a", 0, 12)...)
	_ = want
	v4 := c.addJoiner(4)
	time.Sleep(100 * time.Millisecond) // many election timeouts of 10ms ticks
	if c.nodes[4].Leader() != 0 || c.nodes[4].IsLeader() {
		t.Fatalf("a joining node knows or is a leader (%d) before it is added", c.nodes[4].Leader())
	}
	lead := c.waitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.nodes[lead].AddVoter(ctx, v4); err != nil {
		t.Fatalf("AddVoter: %v", err)
	}
	c.ids = append(c.ids, 4)
	if err := c.nodes[lead].AddVoter(ctx, v4); !errors.Is(err, ErrDuplicateVoter) {
		t.Fatalf("second AddVoter = %v, want ErrDuplicateVoter", err)
	}
	all := append(seq("a", 0, 12), seq("b", 0, 5)...)
	c.propose(seq("b", 0, 5)...)
	c.waitConverged(all)
	for _, id := range c.ids {
		if vs, ls := c.voterIDs(id); !slices.Equal(vs, []uint64{1, 2, 3, 4}) || len(ls) != 0 {
			t.Fatalf("node %d sees voters %v learners %v, want [1 2 3 4] and none", id, vs, ls)
		}
	}
	// The quorum of four survives any one node's restart, and the new
	// voter's endpoint and directory id are still known afterwards.
	c.stop(1)
	c.start(1)
	c.propose("c0")
	all = append(all, "c0")
	c.waitConverged(all)
	vs, _, err := c.nodes[1].Voters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(vs, func(v Voter) bool { return v.ID == 4 }); i < 0 || vs[i].DirectoryID != v4.DirectoryID || len(vs[i].Endpoints) != 1 || vs[i].Endpoints[0] != v4.Endpoints[0] {
		t.Fatalf("after restart node 1 knows voters %+v, want node 4 as %+v", vs, v4)
	}

	// A voter's endpoints change through the log: every node learns them.
	moved := v4
	moved.Endpoints = []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: v4.Endpoints[0].Port}, {Name: "OTHER", Host: "127.0.0.2", Port: 1}}
	lead = c.waitLeader()
	if err := c.nodes[lead].UpdateVoter(ctx, moved); err != nil {
		t.Fatalf("UpdateVoter: %v", err)
	}
	if err := c.nodes[lead].UpdateVoter(ctx, Voter{ID: 9}); !errors.Is(err, ErrVoterNotFound) {
		t.Fatalf("UpdateVoter of a stranger = %v, want ErrVoterNotFound", err)
	}
	c.propose("c1")
	all = append(all, "c1")
	c.waitConverged(all)
	for _, id := range c.ids {
		vs, _, err := c.nodes[id].Voters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(vs, func(v Voter) bool { return v.ID == 4 }); i < 0 || len(vs[i].Endpoints) != 2 || vs[i].Endpoints[1].Host != "127.0.0.2" {
			t.Fatalf("node %d knows node 4 as %+v after UpdateVoter", id, vs)
		}
	}
	if vs, _ := c.voterIDs(lead); !slices.Equal(vs, []uint64{1, 2, 3, 4}) {
		t.Fatalf("UpdateVoter changed the voters: %v", vs)
	}

	if err := c.nodes[lead].RemoveVoter(ctx, 4, [16]byte{9}); !errors.Is(err, ErrVoterNotFound) {
		t.Fatalf("RemoveVoter with the wrong directory id = %v, want ErrVoterNotFound", err)
	}
	if err := c.nodes[lead].RemoveVoter(ctx, 4, v4.DirectoryID); err != nil {
		t.Fatalf("RemoveVoter: %v", err)
	}
	c.stop(4)
	c.ids = c.ids[:3]
	c.propose("d0")
	c.waitConverged(append(all, "d0"))
	for _, id := range c.ids {
		if vs, _ := c.voterIDs(id); !slices.Equal(vs, []uint64{1, 2, 3}) {
			t.Fatalf("node %d sees voters %v after the removal, want [1 2 3]", id, vs)
		}
	}
}

// Removing the leader: it steps down and the others elect a new one.
func TestClusterRemoveLeader(t *testing.T) {
	c := newTestCluster(t, 3, 1000)
	c.propose("a")
	lead := c.waitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.nodes[lead].RemoveVoter(ctx, lead, [16]byte{}); err != nil {
		t.Fatalf("RemoveVoter(leader): %v", err)
	}
	c.stop(lead)
	c.ids = slices.DeleteFunc(c.ids, func(id uint64) bool { return id == lead })
	c.propose("b")
	c.waitConverged([]string{"a", "b"})
}

// AddVoter of a node that never runs times out and leaves the voter set
// as it was: no learner stays behind.
func TestClusterAddVoterThatNeverRunsChangesNothing(t *testing.T) {
	c := newTestCluster(t, 3, 1000)
	c.propose("a")
	lead := c.waitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	ghost := Voter{ID: 7, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}}
	if err := c.nodes[lead].AddVoter(ctx, ghost); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AddVoter of a node that never runs = %v, want a deadline", err)
	}
	c.eventually("the ghost learner removed", func() bool {
		vs, ls := c.voterIDs(lead)
		return slices.Equal(vs, []uint64{1, 2, 3}) && len(ls) == 0
	})
}
