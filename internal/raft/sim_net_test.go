package raft

// The simulation's network, clients and logger (see sim_test.go).

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// simNet is the state of the in-memory network. Two nodes can talk when
// they are in the same partition group (nodes absent from group are in
// group 0).
type simNet struct {
	group     map[uint64]int
	partition int // generation, so a stale heal does not undo a newer partition
	drop, dup float64
	maxDelay  int64 // a message takes 1..maxDelay ms
}

func (s *sim) connected(a, b uint64) bool { return s.net.group[a] == s.net.group[b] }

// partition splits the voters in two random sides for a while.
func (s *sim) partition() {
	s.stats.partitions++
	s.net.partition++
	gen := s.net.partition
	clear(s.net.group)
	var side []uint64
	for _, id := range s.ids {
		if s.rng.IntN(2) == 0 {
			s.net.group[id] = 1
			side = append(side, id)
		}
	}
	s.logf("PARTITION %v from the rest", side)
	s.after(50+s.rng.Int64N(800), func() {
		if s.net.partition == gen {
			clear(s.net.group)
			s.logf("partition healed")
		}
	})
}

// simTransport is one node's Transport: Send schedules delivery.
type simTransport struct {
	s    *sim
	from uint64
}

func (t *simTransport) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		t.s.send(t.from, m)
	}
}

func (s *sim) send(from uint64, m *pb.Message) {
	s.checkPersistedBeforeSend(from, m)
	// Messages cross the network as bytes, as over TCPTransport: the
	// receiver must not share memory with the sender.
	b, err := proto.Marshal(m)
	if err != nil {
		s.fail("n%d: marshal %v: %v", from, m.GetType(), err)
		return
	}
	to, typ := m.GetTo(), m.GetType()
	inc := s.nodes[from].inc
	if !s.connected(from, to) || s.rng.Float64() < s.net.drop {
		s.logf("n%d -> n%d %v term %d index %d DROPPED", from, to, typ, m.GetTerm(), m.GetIndex())
		s.dropped(from, inc, to, typ)
		return
	}
	copies := 1
	if s.rng.Float64() < s.net.dup {
		copies = 2
	}
	for range copies {
		s.after(1+s.rng.Int64N(s.net.maxDelay), func() { s.deliver(from, inc, to, b) })
	}
}

// checkPersistedBeforeSend: raft may acknowledge entries and grant votes
// only once they are durable, or a crash makes the node forget them while
// a leader counts on them. The Node's MemoryStorage mirrors what its disk
// holds (it is updated only after a successful write and fsync).
func (s *sim) checkPersistedBeforeSend(from uint64, m *pb.Message) {
	n := s.nodes[from].node
	if n == nil || m.GetReject() {
		return
	}
	switch m.GetType() {
	case pb.MessageType_MsgAppResp:
		if last, _ := n.storage.LastIndex(); m.GetIndex() > last {
			s.fail("n%d acknowledged index %d to n%d with only %d persisted", from, m.GetIndex(), m.GetTo(), last)
		}
	case pb.MessageType_MsgVoteResp:
		hs, _, _ := n.storage.InitialState()
		if hs.GetTerm() != m.GetTerm() || hs.GetVote() != m.GetTo() {
			s.fail("n%d granted its vote in term %d to n%d with term %d vote %d persisted", from, m.GetTerm(), m.GetTo(), hs.GetTerm(), hs.GetVote())
		}
	}
}

// dropped tells the sender what TCPTransport would: a lost snapshot, and
// sometimes that the peer is unreachable.
func (s *sim) dropped(from uint64, inc int, to uint64, typ pb.MessageType) {
	if typ == pb.MessageType_MsgSnap {
		s.after(1, func() {
			s.report(from, inc, "snapshot failed", func(rn *etcdraft.RawNode) { rn.ReportSnapshot(to, etcdraft.SnapshotFailure) })
		})
	} else if s.rng.IntN(4) == 0 {
		s.after(1, func() { s.report(from, inc, "unreachable", func(rn *etcdraft.RawNode) { rn.ReportUnreachable(to) }) })
	}
}

func (s *sim) deliver(from uint64, inc int, to uint64, b []byte) {
	m := &pb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		s.fail("unmarshal message: %v", err)
		return
	}
	sn := s.nodes[to]
	if sn.node == nil || !s.connected(from, to) {
		s.logf("n%d -> n%d %v term %d index %d LOST in flight", from, to, m.GetType(), m.GetTerm(), m.GetIndex())
		s.dropped(from, inc, to, m.GetType())
		return
	}
	s.logf("n%d -> n%d %v term %d index %d commit %d entries %d", from, to, m.GetType(), m.GetTerm(), m.GetIndex(), m.GetCommit(), len(m.Entries))
	sn.node.onMessage(m)
	s.settle(sn)
	if m.GetType() == pb.MessageType_MsgSnap {
		s.after(1, func() {
			s.report(from, inc, "snapshot sent", func(rn *etcdraft.RawNode) { rn.ReportSnapshot(to, etcdraft.SnapshotFinish) })
		})
	}
}

func (s *sim) report(id uint64, inc int, what string, f func(*etcdraft.RawNode)) {
	sn := s.nodes[id]
	if sn.node == nil || sn.inc != inc {
		return
	}
	s.logf("n%d report: %s", id, what)
	sn.node.onReport(f)
	s.settle(sn)
}

// Proposal outcomes, as the contract in doc.go classifies answers.
const (
	propOpen     = iota
	propOK       // success: applied at index
	propRejected // the Applier's error: committed and applied (as a no-op) at index
	propFailed   // ErrStorage or ErrNotLeader: must never be applied
	propUnknown  // ErrStopped, or never answered (crash): either way
)

type simProp struct {
	id        int
	payload   string
	node      uint64
	p         *proposal
	state     int
	index     uint64 // answered index
	appliedAt uint64 // the index it was applied at, anywhere
	err       error
	afterHeal bool
}

// client proposes a new metadata batch every few milliseconds, mostly to
// a node that thinks it leads, sometimes to any live node. It stops once
// a proposal made after the heal has succeeded, so the nodes can settle.
func (s *sim) client() {
	if s.committed {
		return
	}
	s.after(2+s.rng.Int64N(40), s.client)
	targets := s.leaders()
	if len(targets) == 0 || s.rng.IntN(5) == 0 {
		targets = s.live()
	}
	if len(targets) == 0 {
		return
	}
	sn := targets[s.rng.IntN(len(targets))]
	sp := &simProp{id: len(s.props) + 1, node: sn.id, afterHeal: s.healed}
	data := s.metadataBatch(sp.id)
	sp.payload = string(data)
	sp.p = &proposal{data: data, done: make(chan result, 1)}
	s.props = append(s.props, sp)
	s.open = append(s.open, sp)
	s.chk.byPayload[sp.payload] = sp
	s.stats.proposals++
	s.logf("n%d propose p%d", sn.id, sp.id)
	sn.node.onProposal(sp.p)
	s.settle(sn)
}

// logger returns a node's logger: with tracing its records join the event
// log; an Error that says committed entries were lost is a violation.
func (s *sim) logger(id uint64) *slog.Logger { return slog.New(&simLogHandler{s: s, id: id}) }

type simLogHandler struct {
	s     *sim
	id    uint64
	attrs []slog.Attr
}

func (h *simLogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelError || (h.s.tracing && l >= slog.LevelInfo)
}

func (h *simLogHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && strings.Contains(r.Message, "lost committed entries") {
		h.s.fail("n%d logged %q", h.id, r.Message)
	}
	if h.s.tracing {
		var b strings.Builder
		fmt.Fprintf(&b, "n%d log %s %q", h.id, r.Level, r.Message)
		for _, a := range h.attrs {
			fmt.Fprintf(&b, " %s", a)
		}
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s", a)
			return true
		})
		h.s.logf("%s", b.String())
	}
	return nil
}

func (h *simLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &simLogHandler{s: h.s, id: h.id, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], as...)}
}

func (h *simLogHandler) WithGroup(string) slog.Handler { return h }
