package raft

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Dynamic voters (KIP-853).
//
// raft's ConfState holds only ids; what Kafka's VotersRecord adds (the
// directory id and the controller endpoints of each voter) travels in the
// Context of each ConfChangeV2 and is kept by the Node as its voter set.
// Snapshots carry it in front of the Applier's data (snapshotVoters), so
// a restart or a node that catches up by snapshot knows it too.
//
// AddVoter follows KIP-853's rule that a new voter is first an observer
// that has caught up: the node joins as a raft learner (which receives
// the log but does not vote), and is promoted to voter once its log holds
// everything committed. One change runs at a time: raft's simple
// (one-node) configuration changes never need a joint configuration, and
// a second change waits until the first is applied.

// Voter is one member of the quorum as KIP-853 describes it.
type Voter struct {
	ID uint64
	// DirectoryID is the directory.id of the voter's metadata log
	// directory; zero for a static voter (controller.quorum.voters).
	DirectoryID [16]byte
	// Endpoints are the voter's controller listeners.
	Endpoints []Endpoint
}

// Endpoint is one controller listener of a voter.
type Endpoint struct {
	Name string
	Host string
	Port uint16
}

// Addr is the endpoint's host:port.
func (e Endpoint) Addr() string {
	return fmt.Sprintf("%s:%d", hostForAddr(e.Host), e.Port)
}

func hostForAddr(h string) string {
	if bytes.IndexByte([]byte(h), ':') >= 0 {
		return "[" + h + "]"
	}
	return h
}

// Errors of AddVoter and RemoveVoter.
var (
	ErrDuplicateVoter = errors.New("raft: the node is already a voter")
	ErrVoterNotFound  = errors.New("raft: no such voter")
	// ErrChangePending: another voter change is not applied yet.
	ErrChangePending = errors.New("raft: another voter change is in progress")
	// ErrLastVoter: the only voter cannot be removed.
	ErrLastVoter = errors.New("raft: cannot remove the only voter")
)

// confContext is the Context of a ConfChangeV2 this package proposes: the
// proposer's nonce and sequence (to find its waiter), the voter, and the
// whole voter set after the change (Kafka's VotersRecord, which the
// metadata log serves to observers; absent in logs written before).
type confContext struct {
	Nonce  uint64  `json:"nonce"`
	Seq    uint64  `json:"seq"`
	Voter  Voter   `json:"voter"`
	Voters []Voter `json:"voters,omitempty"`
}

// Voters returns the voter set: every voter, and learners being added,
// with what is known of them.
func (n *Node) Voters(ctx context.Context) (voters, learners []Voter, err error) {
	q := func() {
		cs := n.confState
		for _, id := range cs.GetVoters() {
			voters = append(voters, n.voterInfo(id))
		}
		for _, id := range cs.GetLearners() {
			learners = append(learners, n.voterInfo(id))
		}
	}
	err = n.run1(ctx, q)
	return voters, learners, err
}

func (n *Node) voterInfo(id uint64) Voter {
	if v, ok := n.voters[id]; ok {
		return v
	}
	return Voter{ID: id}
}

// run1 runs q on the node goroutine and waits for it.
func (n *Node) run1(ctx context.Context, q func()) error {
	done := make(chan struct{})
	if err := n.query(ctx, func() { q(); close(done) }); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-n.donec:
		return ErrStopped
	}
}

// AddVoter adds v to the quorum: as a learner first, then, once its log
// has caught up with the commit index, as a voter. It returns when the
// promotion is applied on this node (the leader). If the learner does not
// catch up before ctx ends, it is removed again (unless it was a learner
// already), so a failed AddVoter changes nothing. ErrDuplicateVoter if
// v.ID already votes; ErrChangePending while another change is not yet
// applied (the caller may retry); ErrNotLeader off the leader.
func (n *Node) AddVoter(ctx context.Context, v Voter) error {
	if v.ID == 0 {
		return errors.New("raft: voter id must be non-zero")
	}
	var learner bool
	err := n.changeVoters(ctx, func() (*pb.ConfChangeV2, error) {
		if slices.Contains(n.confState.GetVoters(), v.ID) {
			return nil, ErrDuplicateVoter
		}
		learner = slices.Contains(n.confState.GetLearners(), v.ID)
		if learner {
			return nil, nil
		}
		return confChange(pb.ConfChangeAddLearnerNode, v.ID), nil
	}, v)
	if err != nil {
		return err
	}
	if err := n.waitCaughtUp(ctx, v.ID); err != nil {
		if !learner {
			// Leave the voters as they were, as Kafka's failed add does
			// (the node may never have run): take the learner out again.
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if rerr := n.changeVoters(rctx, func() (*pb.ConfChangeV2, error) {
				if !slices.Contains(n.confState.GetLearners(), v.ID) {
					return nil, nil
				}
				return confChange(pb.ConfChangeRemoveNode, v.ID), nil
			}, Voter{ID: v.ID}); rerr != nil {
				n.cfg.Logger.Warn("learner left in the quorum after a failed AddVoter", "node.id", v.ID, "err", rerr)
			}
		}
		return err
	}
	return n.changeVoters(ctx, func() (*pb.ConfChangeV2, error) {
		if slices.Contains(n.confState.GetVoters(), v.ID) {
			return nil, ErrDuplicateVoter
		}
		if !slices.Contains(n.confState.GetLearners(), v.ID) {
			return nil, fmt.Errorf("%w: node %d stopped being a learner before its promotion", ErrChangePending, v.ID)
		}
		return confChange(pb.ConfChangeAddNode, v.ID), nil
	}, v)
}

// RemoveVoter removes voter id (a learner too). dir, when not zero, must
// be the voter's directory id. A leader that removes itself steps down
// once the change is applied.
func (n *Node) RemoveVoter(ctx context.Context, id uint64, dir [16]byte) error {
	var info Voter
	return n.changeVoters(ctx, func() (*pb.ConfChangeV2, error) {
		cs := n.confState
		isVoter := slices.Contains(cs.GetVoters(), id)
		if !isVoter && !slices.Contains(cs.GetLearners(), id) {
			return nil, ErrVoterNotFound
		}
		info = n.voterInfo(id)
		if dir != ([16]byte{}) && info.DirectoryID != ([16]byte{}) && dir != info.DirectoryID {
			return nil, fmt.Errorf("%w: node %d has another directory id", ErrVoterNotFound, id)
		}
		if isVoter && len(cs.GetVoters()) == 1 {
			return nil, ErrLastVoter
		}
		return confChange(pb.ConfChangeRemoveNode, id), nil
	}, Voter{ID: id})
}

// UpdateVoter replaces what the quorum knows of voter v.ID (its
// endpoints) with v; v.DirectoryID must match the voter's unless either
// is zero. It is a configuration change that changes no membership (raft
// adds an existing voter as a no-op), so it goes through the log like any
// other and waits its turn.
func (n *Node) UpdateVoter(ctx context.Context, v Voter) error {
	return n.changeVoters(ctx, func() (*pb.ConfChangeV2, error) {
		if !slices.Contains(n.confState.GetVoters(), v.ID) {
			return nil, ErrVoterNotFound
		}
		if old := n.voterInfo(v.ID); v.DirectoryID != ([16]byte{}) && old.DirectoryID != ([16]byte{}) && v.DirectoryID != old.DirectoryID {
			return nil, fmt.Errorf("%w: node %d has another directory id", ErrVoterNotFound, v.ID)
		}
		return confChange(pb.ConfChangeAddNode, v.ID), nil
	}, v)
}

func confChange(t pb.ConfChangeType, id uint64) *pb.ConfChangeV2 {
	return &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: t.Enum(), NodeId: new(id)}}}
}

// changeVoters proposes the change decide returns (nil: nothing to do)
// and waits until it is applied. It waits, polling, while an earlier
// change is unapplied: raft would silently turn a second pending change
// into an empty entry.
func (n *Node) changeVoters(ctx context.Context, decide func() (*pb.ConfChangeV2, error), v Voter) error {
	for {
		var wait chan error
		var busy bool
		var err error
		if qerr := n.run1(ctx, func() { wait, busy, err = n.proposeConfChange(decide, v) }); qerr != nil {
			return qerr
		}
		if !busy {
			if err != nil || wait == nil {
				return err
			}
			select {
			case err := <-wait:
				return err
			case <-ctx.Done():
				return ctx.Err()
			case <-n.donec:
				return ErrStopped
			}
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrChangePending, ctx.Err())
		case <-n.donec:
			return ErrStopped
		}
	}
}

// proposeConfChange runs on the node goroutine. busy: an earlier change
// (or any entry) is not applied yet, try again.
func (n *Node) proposeConfChange(decide func() (*pb.ConfChangeV2, error), v Voter) (wait chan error, busy bool, err error) {
	if n.broken != nil {
		return nil, false, n.broken
	}
	if n.rn.BasicStatus().RaftState != etcdraft.StateLeader {
		return nil, false, ErrNotLeader
	}
	if last, _ := n.storage.LastIndex(); n.applied < last || len(n.confWaiting) > 0 {
		return nil, true, nil
	}
	cc, err := decide()
	if err != nil || cc == nil {
		return nil, false, err
	}
	n.seq++
	ctxb, err := json.Marshal(confContext{Nonce: n.nonce, Seq: n.seq, Voter: v, Voters: n.votersAfter(cc, v)})
	if err != nil {
		return nil, false, err
	}
	cc.Context = ctxb
	if err := n.rn.ProposeConfChange(cc); err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	w := make(chan error, 1)
	n.confWaiting[n.seq] = w
	return w, false, nil
}

// waitCaughtUp waits until learner id holds every committed entry.
func (n *Node) waitCaughtUp(ctx context.Context, id uint64) error {
	for {
		var ok bool
		var err error
		q := func() {
			if n.rn.BasicStatus().RaftState != etcdraft.StateLeader {
				err = ErrNotLeader
				return
			}
			st := n.rn.Status()
			pr, tracked := st.Progress[id]
			if !tracked {
				err = fmt.Errorf("%w: node %d was removed while catching up", ErrVoterNotFound, id)
				return
			}
			ok = pr.Match >= st.GetCommit()
		}
		if qerr := n.run1(ctx, q); qerr != nil {
			return qerr
		}
		if err != nil || ok {
			return err
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("node %d has not caught up with the metadata log: %w", id, ctx.Err())
		case <-n.donec:
			return ErrStopped
		}
	}
}

// applyConfChange applies a committed ConfChangeV2: raft's configuration,
// the voter set and the proposer's waiter.
func (n *Node) applyConfChange(cc *pb.ConfChangeV2) {
	n.confState = n.rn.ApplyConfChange(cc)
	var c confContext
	if len(cc.Context) > 0 && json.Unmarshal(cc.Context, &c) != nil {
		n.cfg.Logger.Error("voter change with an unreadable context", "context", string(cc.Context))
	}
	for _, ch := range cc.GetChanges() {
		id := ch.GetNodeId()
		switch ch.GetType() {
		case pb.ConfChangeRemoveNode:
			delete(n.voters, id)
		default:
			// raft ignores a snapshot whose configuration lacks the
			// receiver, and a joining node catches up by snapshot
			// from index 1: take one that includes it.
			n.snapNow = true
			if c.Voter.ID == id {
				n.voters[id] = c.Voter
			}
		}
	}
	n.cfg.Logger.Info("metadata quorum changed", "voters", n.confState.GetVoters(), "learners", n.confState.GetLearners())
	n.publishVoters()
	if c.Nonce == n.nonce {
		if w, ok := n.confWaiting[c.Seq]; ok {
			delete(n.confWaiting, c.Seq)
			w <- nil
		}
	}
}

// publishVoters tells Config.OnVoters the current voters and learners.
// A node that has joined no quorum yet tells nothing: its transport
// keeps the voters it was pointed at.
func (n *Node) publishVoters() {
	if n.cfg.OnVoters == nil || len(n.confState.GetVoters()) == 0 {
		return // a joining node that knows no voters yet
	}
	out := map[uint64]Voter{}
	for _, id := range append(slices.Clone(n.confState.GetVoters()), n.confState.GetLearners()...) {
		out[id] = n.voterInfo(id)
	}
	n.cfg.OnVoters(out)
}

// A snapshot's data is the Applier's, preceded, when the voter set is
// known, by the voters:
//
//	magic "\xffSMVOTER" | len u32 | voters (JSON) | Applier data
//
// The Applier's own data never starts with 0xff (the metadata loader's
// format byte is 1), and a snapshot without voters is exactly the
// Applier's data, as before dynamic quorums.
const votersMagic = "\xffSMVOTER"

func wrapSnapshot(voters map[uint64]Voter, data []byte) []byte {
	if len(voters) == 0 {
		return data
	}
	vs := slices.Collect(maps.Values(voters))
	slices.SortFunc(vs, func(a, b Voter) int { return int(a.ID) - int(b.ID) })
	js, _ := json.Marshal(vs)
	out := make([]byte, 0, len(votersMagic)+4+len(js)+len(data))
	out = append(out, votersMagic...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(js)))
	out = append(out, js...)
	return append(out, data...)
}

// unwrapSnapshot splits a snapshot's data into the voters and the
// Applier's data.
func unwrapSnapshot(data []byte) (map[uint64]Voter, []byte, error) {
	if !bytes.HasPrefix(data, []byte(votersMagic)) {
		return nil, data, nil
	}
	rest := data[len(votersMagic):]
	if len(rest) < 4 || uint64(len(rest)-4) < uint64(binary.BigEndian.Uint32(rest)) {
		return nil, nil, errors.New("snapshot voters truncated")
	}
	l := binary.BigEndian.Uint32(rest)
	var vs []Voter
	if err := json.Unmarshal(rest[4:4+l], &vs); err != nil {
		return nil, nil, fmt.Errorf("snapshot voters: %w", err)
	}
	out := make(map[uint64]Voter, len(vs))
	for _, v := range vs {
		out[v.ID] = v
	}
	return out, rest[4+l:], nil
}
