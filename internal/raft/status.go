package raft

import (
	"context"
	"maps"
	"slices"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// Status is one node's view of the quorum (what Kafka's DescribeQuorum
// reports). Only the leader knows its followers' progress.
type Status struct {
	ID     uint64
	Leader uint64 // 0 if unknown
	Term   uint64
	// Commit is the highest index known committed: the high watermark of
	// the metadata log.
	Commit uint64
	// LastIndex is the last index of this node's log (its log end).
	LastIndex uint64
	// Voters is the current voter set, sorted.
	Voters []uint64
	// Progress is set on the leader only: one entry per voter, itself
	// included.
	Progress map[uint64]PeerStatus
}

// PeerStatus is the leader's knowledge of one voter.
type PeerStatus struct {
	// Match is the highest index known to be in the voter's log.
	Match uint64
	// LastContact is when the leader last heard from the voter in this
	// term; zero if never. The leader's own entry is the time of Status.
	LastContact time.Time
	// LastCaughtUp is the last time the voter was known to hold the
	// leader's whole log; zero if never in this term.
	LastCaughtUp time.Time
}

// peerTimes are the contact times the run goroutine records per voter.
type peerTimes struct {
	contact, caughtUp time.Time
}

// Status returns the node's view of the quorum. It runs on the node
// goroutine, so it fails only if the node stops or ctx ends first.
func (n *Node) Status(ctx context.Context) (Status, error) {
	done := make(chan Status, 1)
	q := func() { done <- n.buildStatus() }
	select {
	case n.queryc <- q:
	case <-ctx.Done():
		return Status{}, ctx.Err()
	case <-n.donec:
		return Status{}, ErrStopped
	}
	select {
	case s := <-done:
		return s, nil
	case <-ctx.Done():
		return Status{}, ctx.Err()
	case <-n.donec:
		return Status{}, ErrStopped
	}
}

// buildStatus builds the Status; it runs on the node goroutine.
func (n *Node) buildStatus() Status {
	st := n.rn.Status()
	last, _ := n.storage.LastIndex()
	s := Status{
		ID: n.cfg.ID, Leader: st.Lead, Term: st.GetTerm(), Commit: st.GetCommit(), LastIndex: last,
		Voters: slices.Sorted(maps.Keys(st.Config.Voters.IDs())),
	}
	if st.RaftState != etcdraft.StateLeader {
		return s
	}
	now := time.Now()
	s.Progress = make(map[uint64]PeerStatus, len(st.Progress))
	for id, pr := range st.Progress {
		ps := PeerStatus{Match: pr.Match}
		if id == n.cfg.ID {
			ps.LastContact, ps.LastCaughtUp = now, now
		} else if t, ok := n.peers[id]; ok {
			ps.LastContact, ps.LastCaughtUp = t.contact, t.caughtUp
		}
		s.Progress[id] = ps
	}
	return s
}

// notePeer records contact with the sender of m, on the leader. A voter
// is caught up when its log holds everything the leader has.
func (n *Node) notePeer(m *pb.Message) {
	from := m.GetFrom()
	bs := n.rn.BasicStatus()
	if from == 0 || from == n.cfg.ID || bs.RaftState != etcdraft.StateLeader {
		return
	}
	if n.peers == nil || n.peersTerm != bs.GetTerm() {
		// Times from an earlier term describe another leader's view.
		n.peers, n.peersTerm = map[uint64]peerTimes{}, bs.GetTerm()
	}
	now := time.Now()
	t := n.peers[from]
	t.contact = now
	last, _ := n.storage.LastIndex()
	n.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
		if id == from && pr.Match >= last {
			t.caughtUp = now
		}
	})
	n.peers[from] = t
}
