package raft

// The simulation's invariants (see sim_test.go), checked after every event:
//
//   - at most one leader per term;
//   - a node acknowledges entries and grants votes only once they are
//     persisted (checked as each message leaves, sim_net_test.go);
//   - committed entries never change: every node's log agrees, index by
//     index, with what any node ever saw committed, and a node's commit
//     index never goes back, across restarts too (it is durable);
//   - a node's applied index never goes back within an incarnation, and
//     every node applies the same payload at an index;
//   - a proposal answered success (or the Applier's error) was applied at
//     exactly the index of the answer, and is never applied at another;
//   - a proposal answered ErrStorage or ErrNotLeader (but not
//     ErrOutcomeUnknown) is never applied,
//     before or after the answer, on any node, across restarts;
//   - the metadata images (Loader.Snapshot) are equal at equal offsets,
//     whether reached by replay or by restoring a snapshot;
//   - after the heal, a leader commits a new proposal and every node
//     converges (same applied index, same image) within bounds.

import (
	"fmt"

	"github.com/samsa-io/samsa/internal/metadata"
	etcdraft "go.etcd.io/raft/v3"
)

type simChecker struct {
	leaders   map[uint64]uint64 // term -> the node that led it
	committed map[uint64]simEnt // index -> the entry committed there
	applied   map[uint64]string // index -> payload given to the Applier
	images    map[uint64]string // image offset -> Loader.Snapshot
	byPayload map[string]*simProp
}

type simEnt struct {
	term uint64
	data string
}

func (c *simChecker) init() {
	c.leaders = map[uint64]uint64{}
	c.committed = map[uint64]simEnt{}
	c.applied = map[uint64]string{}
	c.images = map[uint64]string{}
	c.byPayload = map[string]*simProp{}
}

func (s *sim) checkAll() {
	for _, id := range s.ids {
		if sn := s.nodes[id]; sn.node != nil && sn.node.broken == nil {
			s.checkNode(sn)
		}
	}
	s.pollAnswers()
	if s.healed && s.committed && s.err == nil && s.converged() {
		s.logf("converged: %s", s.describe())
		s.done = true
	}
}

func (s *sim) checkNode(sn *simNode) {
	n := sn.node
	bs := n.rn.BasicStatus()
	if bs.RaftState == etcdraft.StateLeader {
		if l, ok := s.chk.leaders[bs.GetTerm()]; ok && l != sn.id {
			s.fail("two leaders in term %d: n%d and n%d", bs.GetTerm(), l, sn.id)
		}
		s.chk.leaders[bs.GetTerm()] = sn.id
	}
	if bs.GetCommit() < sn.lastCommit {
		s.fail("n%d: commit index went back from %d to %d", sn.id, sn.lastCommit, bs.GetCommit())
	}
	sn.lastCommit = bs.GetCommit()
	if n.applied < sn.lastApplied {
		s.fail("n%d: applied index went back from %d to %d", sn.id, sn.lastApplied, n.applied)
	}
	sn.lastApplied = n.applied
	if n.applied > bs.GetCommit() {
		s.fail("n%d: applied %d beyond commit %d", sn.id, n.applied, bs.GetCommit())
	}
	first, _ := n.storage.FirstIndex()
	lo := max(sn.checked+1, first)
	if lo > bs.GetCommit() {
		return
	}
	ents, err := n.storage.Entries(lo, bs.GetCommit()+1, 1<<62)
	if err != nil {
		s.fail("n%d: read committed entries %d..%d: %v", sn.id, lo, bs.GetCommit(), err)
		return
	}
	for _, e := range ents {
		got := simEnt{term: e.GetTerm(), data: string(e.Data)}
		if want, ok := s.chk.committed[e.GetIndex()]; ok && want != got {
			s.fail("n%d: committed entry %d changed: term %d -> %d (data equal: %v)",
				sn.id, e.GetIndex(), want.term, got.term, want.data == got.data)
			return
		}
		s.chk.committed[e.GetIndex()] = got
	}
	sn.checked = bs.GetCommit()
}

// pollAnswers collects the proposals answered since the last event.
func (s *sim) pollAnswers() {
	open := s.open[:0]
	for _, sp := range s.open {
		sn := s.nodes[sp.node]
		var r result
		select {
		case r = <-sp.p.done:
		default:
			if sn.node == nil || sn.node.fatal != nil {
				// Crashed (or stopped) before answering: any outcome.
				sp.state = propUnknown
				s.stats.unknown++
				s.logf("p%d unanswered: n%d went down", sp.id, sp.node)
			} else {
				open = append(open, sp)
			}
			continue
		}
		s.answered(sp, r)
	}
	s.open = open
}

func (s *sim) answered(sp *simProp, r result) {
	sp.index, sp.err = r.index, r.err
	switch {
	case r.err == nil:
		sp.state = propOK
		s.stats.ok++
		if sp.afterHeal {
			s.committed = true
		}
	case errorsIsAny(r.err, ErrOutcomeUnknown, ErrStopped):
		sp.state = propUnknown
		s.stats.unknown++
	case errorsIsAny(r.err, ErrStorage, ErrNotLeader):
		sp.state = propFailed
		s.stats.failed++
	default:
		sp.state = propRejected
		s.stats.rejected++
	}
	s.logf("p%d answered: index %d, err %v", sp.id, r.index, r.err)
	switch sp.state {
	case propOK, propRejected:
		if sp.appliedAt != r.index {
			s.fail("p%d answered %v at index %d, but applied at %d", sp.id, r.err, r.index, sp.appliedAt)
		}
	case propFailed:
		if sp.appliedAt != 0 {
			s.fail("p%d answered %v, but applied at %d", sp.id, r.err, sp.appliedAt)
		}
	}
}

// converged: every node is up and healthy, one leads, and all applied
// its whole log and hold the same image.
func (s *sim) converged() bool {
	ls := s.leaders()
	if len(ls) != 1 || !s.votersSettled() {
		return false
	}
	last, _ := ls[0].node.storage.LastIndex()
	var img []byte
	for _, id := range s.ids {
		sn := s.nodes[id]
		if sn.node == nil || sn.node.broken != nil || sn.node.applied != last {
			return false
		}
		b, err := sn.app.loader.Snapshot()
		if err != nil {
			s.fail("n%d: image snapshot: %v", id, err)
			return false
		}
		if img != nil && string(b) != string(img) {
			s.fail("n%d: image at applied index %d differs from n%d's", id, last, s.ids[0])
			return false
		}
		img = b
	}
	return true
}

// simApplier is the metadata Loader with the apply-side checks.
type simApplier struct {
	s      *sim
	sn     *simNode
	loader *metadata.Loader
	last   uint64
}

func newSimApplier(s *sim, sn *simNode) *simApplier {
	return &simApplier{s: s, sn: sn, loader: metadata.NewLoader("sim-cluster", s.logger(sn.id))}
}

func (a *simApplier) Apply(index uint64, data []byte) error {
	s, id := a.s, a.sn.id
	if index <= a.last {
		s.fail("n%d: Apply(%d) after Apply(%d)", id, index, a.last)
	}
	a.last = index
	payload := string(data)
	if prev, ok := s.chk.applied[index]; ok && prev != payload {
		s.fail("n%d: applied a different payload at %d than another node", id, index)
	}
	s.chk.applied[index] = payload
	if sp := s.chk.byPayload[payload]; sp != nil {
		switch {
		case sp.appliedAt != 0 && sp.appliedAt != index:
			s.fail("n%d: p%d applied at %d, and before at %d", id, sp.id, index, sp.appliedAt)
		case sp.state == propFailed:
			s.fail("n%d: p%d applied at %d after it was answered %v", id, sp.id, index, sp.err)
		}
		sp.appliedAt = index
		s.logf("n%d apply p%d at %d", id, sp.id, index)
	}
	err := a.loader.Apply(index, data)
	a.checkImage()
	return err
}

func (a *simApplier) Snapshot() ([]byte, error) { return a.loader.Snapshot() }

func (a *simApplier) Restore(data []byte) error {
	a.s.stats.restores++
	if err := a.loader.Restore(data); err != nil {
		return err
	}
	a.last = a.loader.Image().Offset
	a.s.logf("n%d restore image at %d", a.sn.id, a.last)
	a.checkImage()
	return nil
}

func (a *simApplier) checkImage() {
	b, err := a.loader.Snapshot()
	if err != nil {
		a.s.fail("n%d: image snapshot: %v", a.sn.id, err)
		return
	}
	off := a.loader.Image().Offset
	if prev, ok := a.s.chk.images[off]; ok && prev != string(b) {
		a.s.fail("n%d: metadata image at offset %d differs from another node's", a.sn.id, off)
	}
	a.s.chk.images[off] = string(b)
}

// metadataBatch is a random batch of metadata records, unique to proposal
// id (its config value). Some batches fail to replay (a topic that exists,
// a change of an unknown broker): the Loader rejects them deterministically,
// on every node alike.
func (s *sim) metadataBatch(id int) []byte {
	val := fmt.Sprintf("p%d", id)
	recs := []metadata.Record{&metadata.ConfigRecord{ResourceType: metadata.ResourceBroker, Name: "sim.proposal", Value: &val}}
	for range s.rng.IntN(3) {
		var r metadata.Record
		broker := int32(1 + s.rng.IntN(4))
		topic := s.rng.IntN(6)
		tid := metadata.Uuid{1, byte(topic)}
		switch s.rng.IntN(6) {
		case 0:
			r = &metadata.RegisterBrokerRecord{BrokerID: broker, BrokerEpoch: int64(id), IncarnationID: metadata.Uuid{2, byte(id)}, Fenced: s.rng.IntN(2) == 0}
		case 1:
			f := s.rng.IntN(2) == 0
			r = &metadata.BrokerRegistrationChangeRecord{BrokerID: broker, BrokerEpoch: int64(id), Fenced: &f}
		case 2:
			r = &metadata.TopicRecord{Name: fmt.Sprintf("t%d", topic), TopicID: tid}
		case 3:
			r = &metadata.PartitionRecord{PartitionID: int32(s.rng.IntN(2)), TopicID: tid, Replicas: []int32{broker}, ISR: []int32{broker}, Leader: broker}
		case 4:
			r = &metadata.RemoveTopicRecord{TopicID: tid}
		case 5:
			r = &metadata.ProducerIdsRecord{BrokerID: broker, BrokerEpoch: 1, NextProducerID: int64(id) * 1000}
		}
		recs = append(recs, r)
	}
	b, err := metadata.EncodeBatch(recs)
	if err != nil {
		s.fail("encode metadata batch: %v", err)
	}
	return b
}
