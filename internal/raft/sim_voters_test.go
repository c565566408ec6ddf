package raft

import (
	"math/rand/v2"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Voter changes in the simulation (KIP-853, voters.go). In about half of
// the runs with three or five voters, the leader of the moment removes a
// voter, later adds it back as a learner and, once its log has caught up,
// promotes it again, all while the chaos goes on: crashes, partitions,
// disk faults and message loss. Each step is what AddVoter and RemoveVoter
// do on the node goroutine (proposeConfChange), so one change runs at a
// time. The invariants of sim_check_test.go hold throughout (one leader a
// term, committed entries never change, equal images); the run converges
// only once every node is a voter again.

// simVoters is the voter-change driver of one run.
type simVoters struct {
	on      bool
	rng     *rand.Rand // its own stream: the other random choices stay the seed's
	removed uint64     // a node taken out and not yet back as a voter
}

func (s *sim) initVoters() {
	s.vc.rng = rand.New(rand.NewPCG(s.seed, 0x853))
	s.vc.on = len(s.ids) >= 3 && s.vc.rng.IntN(2) == 0
	if s.vc.on {
		s.logf("voter changes on")
		s.after(100+s.vc.rng.Int64N(400), s.changeVoters)
	}
}

// changeVoters is one step of the driver, on the current leader.
func (s *sim) changeVoters() {
	defer s.after(20+s.vc.rng.Int64N(200), s.changeVoters)
	ls := s.leaders()
	if len(ls) != 1 {
		return
	}
	sn := ls[0]
	n := sn.node
	if last, _ := n.storage.LastIndex(); n.applied < last {
		return // the configuration may still change: judge it once applied
	}
	cs := n.confState
	victim := s.vc.removed
	var cc *pb.ConfChangeV2
	switch {
	case victim == 0 && !s.healed && s.vc.rng.IntN(3) == 0:
		victim = s.ids[s.vc.rng.IntN(len(s.ids))]
		if !slices.Contains(cs.GetVoters(), victim) || len(cs.GetVoters()) < 3 {
			return
		}
		cc = confChange(pb.ConfChangeRemoveNode, victim)
		s.vc.removed = victim
	case victim == 0:
		return
	case slices.Contains(cs.GetVoters(), victim):
		s.logf("n%d is a voter again", victim)
		s.vc.removed = 0
		return
	case slices.Contains(cs.GetLearners(), victim):
		st := n.rn.Status()
		if pr, ok := st.Progress[victim]; !ok || pr.Match < st.GetCommit() {
			return
		}
		cc = confChange(pb.ConfChangeAddNode, victim)
	default:
		cc = confChange(pb.ConfChangeAddLearnerNode, victim)
	}
	_, busy, err := n.proposeConfChange(func() (*pb.ConfChangeV2, error) { return cc, nil }, Voter{ID: victim})
	if busy || err != nil {
		return
	}
	s.stats.voterChanges++
	s.logf("n%d proposes %s of n%d", sn.id, cc.GetChanges()[0].GetType(), victim)
	s.settle(sn)
}

// votersSettled reports whether no node is out of the voter set.
func (s *sim) votersSettled() bool {
	if !s.vc.on || s.vc.removed == 0 {
		return true
	}
	ls := s.leaders()
	return len(ls) == 1 && slices.Contains(ls[0].node.confState.GetVoters(), s.vc.removed)
}
