package raft

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestStatusOnLeaderReportsVoterProgress(t *testing.T) {
	c := newTestCluster(t, 3, 1000)
	lead := c.waitLeader()
	idx := c.propose("a", "b", "c")
	c.waitConverged([]string{"a", "b", "c"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Followers learn the commit index with the next heartbeat; poll the
	// leader until every voter's match reached the last proposal.
	var st Status
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		st, err = c.nodes[lead].Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		done := len(st.Progress) == 3
		for _, p := range st.Progress {
			done = done && p.Match >= idx[2] && !p.LastCaughtUp.IsZero()
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.Leader != lead || st.ID != lead || st.Term != c.nodes[lead].Term() {
		t.Fatalf("status leader %d id %d term %d, want leader %d term %d", st.Leader, st.ID, st.Term, lead, c.nodes[lead].Term())
	}
	if !slices.Equal(st.Voters, []uint64{1, 2, 3}) {
		t.Fatalf("voters %v", st.Voters)
	}
	if st.Commit < idx[2] || st.LastIndex < st.Commit {
		t.Fatalf("commit %d last %d, want commit >= %d", st.Commit, st.LastIndex, idx[2])
	}
	for _, id := range c.ids {
		p, ok := st.Progress[id]
		if !ok || p.Match < idx[2] {
			t.Fatalf("voter %d progress %+v (present %v), want match >= %d", id, p, ok, idx[2])
		}
		if p.LastContact.IsZero() || p.LastCaughtUp.IsZero() {
			t.Fatalf("voter %d has no contact times: %+v", id, p)
		}
	}
	for _, id := range c.ids {
		if id == lead {
			continue
		}
		fs, err := c.nodes[id].Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fs.Leader != lead || fs.Progress != nil || fs.LastIndex < idx[2] {
			t.Fatalf("follower %d status %+v: want leader %d, no progress, last index >= %d", id, fs, lead, idx[2])
		}
	}
}

func TestStatusAfterCloseFails(t *testing.T) {
	n, _ := openNode(t, t.TempDir(), 1000)
	n.Close()
	if _, err := n.Status(context.Background()); err != ErrStopped {
		t.Fatalf("err = %v, want ErrStopped", err)
	}
}
