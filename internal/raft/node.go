package raft

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Errors returned by Propose and Barrier.
var (
	ErrNotLeader = errors.New("raft: this node is not the leader")
	ErrStopped   = errors.New("raft: node stopped")
)

// Applier is the state machine fed by the log. All methods run on the Node
// goroutine, never concurrently.
type Applier interface {
	// Apply applies one committed entry. An error leaves the state machine
	// unchanged for that entry (it must be deterministic) and is returned to
	// the proposer, if it is waiting on this node.
	Apply(index uint64, data []byte) error
	// Snapshot returns the whole state, as of the last applied entry.
	Snapshot() ([]byte, error)
	// Restore replaces the whole state with a Snapshot result.
	Restore(data []byte) error
}

// Transport delivers raft messages to peers. Send must not block for long:
// raft tolerates loss, so a slow peer's messages may be dropped. Received
// messages are handed to Node.Step.
type Transport interface {
	Send(msgs []*pb.Message)
}

// Config configures a Node.
type Config struct {
	// ID is this node's raft id (Kafka's node.id); must be non-zero.
	ID uint64
	// Peers are the ids of all voters, including ID. Used only when Dir
	// is empty; afterwards membership comes from the log. Defaults to {ID}.
	Peers []uint64
	// Dir holds the log (e.g. <metadata.log.dir>/__cluster_metadata-0).
	Dir string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Transport may be nil when Peers is {ID}.
	Transport Transport
	// Applier receives committed entries; required.
	Applier Applier
	// TickInterval is the raft logical clock; default 100ms. Elections
	// take 10 ticks, heartbeats 1.
	TickInterval time.Duration
	// SnapshotEvery is the number of applied entries between snapshots;
	// default 1000.
	SnapshotEvery uint64
}

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if c.ID == 0 {
		return errors.New("raft: ID must be non-zero")
	}
	if c.Dir == "" {
		return errors.New("raft: Dir is required")
	}
	if c.Applier == nil {
		return errors.New("raft: Applier is required")
	}
	if len(c.Peers) == 0 {
		c.Peers = []uint64{c.ID}
	}
	if !slices.Contains(c.Peers, c.ID) {
		return fmt.Errorf("raft: Peers %v must include ID %d", c.Peers, c.ID)
	}
	if len(c.Peers) > 1 && c.Transport == nil {
		return errors.New("raft: Transport is required with more than one peer")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TickInterval <= 0 {
		c.TickInterval = 100 * time.Millisecond
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 1000
	}
	return nil
}

// Node is one member of the metadata quorum.
type Node struct {
	cfg     Config
	log     *diskLog
	storage *etcdraft.MemoryStorage
	rn      *etcdraft.RawNode // owned by the run goroutine
	nonce   uint64

	propc chan *proposal
	recvc chan *pb.Message
	// reportc carries transport feedback (see Reporter) to the run goroutine.
	reportc chan func(*etcdraft.RawNode)
	// queryc runs read-only queries (Status) on the run goroutine.
	queryc chan func()
	stopc  chan struct{}
	donec  chan struct{}
	closed sync.Once

	leader atomic.Uint64
	term   atomic.Uint64
	// commits publishes the commit index to observers (observe.go).
	commits commitWatch

	// Owned by the run goroutine.
	seq         uint64
	waiting     map[uint64]*proposal
	confState   *pb.ConfState
	applied     uint64
	snapApplied uint64
	fatal       error
	// peers and peersTerm: contact times of voters, on the leader (status.go).
	peers     map[uint64]peerTimes
	peersTerm uint64
}

type proposal struct {
	data []byte
	seq  uint64
	done chan result // buffered 1
}

type result struct {
	index uint64
	err   error
}

// Open recovers the log in cfg.Dir (bootstrapping a fresh one), restores the
// latest snapshot into the Applier, replays the entries known to be
// committed and starts the node goroutine. A one-voter node is leader when
// Open returns. Use Barrier to be sure every committed entry is applied
// (entries whose commit was not yet recorded are applied after election).
func Open(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dl, rec, err := openDiskLog(cfg.Dir, cfg.Logger)
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, log: dl, storage: etcdraft.NewMemoryStorage(),
		propc: make(chan *proposal), recvc: make(chan *pb.Message, 256),
		reportc: make(chan func(*etcdraft.RawNode), 256), queryc: make(chan func()),
		stopc: make(chan struct{}), donec: make(chan struct{}),
		waiting: map[uint64]*proposal{},
	}
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		dl.close()
		return nil, err
	}
	n.nonce = binary.BigEndian.Uint64(nb[:])
	if err := n.restore(rec); err != nil {
		dl.close()
		return nil, err
	}
	rn, err := etcdraft.NewRawNode(&etcdraft.Config{
		ID: cfg.ID, ElectionTick: 10, HeartbeatTick: 1, Storage: n.storage,
		Applied: n.applied, MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256,
		CheckQuorum: true, PreVote: true, DisableProposalForwarding: true,
		Logger: raftLogger{cfg.Logger},
	})
	if err != nil {
		dl.close()
		return nil, fmt.Errorf("raft: %w", err)
	}
	n.rn = rn
	if v := n.confState.GetVoters(); len(v) == 1 && v[0] == cfg.ID {
		// A quorum of one needs no election timeout: lead at once.
		if err := rn.Campaign(); err != nil {
			dl.close()
			return nil, err
		}
	}
	// Process the campaign (and the replay of committed entries) before
	// returning, so a one-voter node is already leader when Open returns.
	if err := n.drainReady(); err != nil {
		dl.close()
		return nil, err
	}
	go n.run()
	return n, nil
}

func (n *Node) restore(rec *recovered) error {
	snap := rec.snap
	if snap == nil {
		// Fresh directory: the initial voter set lives in a data-less
		// checkpoint at index 1 (see doc.go).
		peers := slices.Clone(n.cfg.Peers)
		slices.Sort(peers)
		snap = &pb.Snapshot{Metadata: &pb.SnapshotMetadata{
			Index: new(uint64(1)), Term: new(uint64(1)), ConfState: &pb.ConfState{Voters: peers},
		}}
		if err := n.log.saveSnapshot(snap); err != nil {
			return fmt.Errorf("bootstrap metadata log: %w", err)
		}
	}
	if err := n.storage.ApplySnapshot(snap); err != nil {
		return err
	}
	if len(snap.Data) > 0 {
		if err := n.cfg.Applier.Restore(snap.Data); err != nil {
			return fmt.Errorf("restore metadata snapshot at %d: %w", snap.GetMetadata().GetIndex(), err)
		}
	}
	n.confState = snap.GetMetadata().GetConfState()
	n.applied = snap.GetMetadata().GetIndex()
	n.snapApplied = n.applied
	if err := n.storage.Append(rec.entries); err != nil {
		return err
	}
	hs := rec.hard
	last, _ := n.storage.LastIndex()
	if hs.GetCommit() > last {
		// Only possible if acknowledged bytes were lost (disk fault):
		// raft would panic, so keep going with what survives.
		n.cfg.Logger.Error("metadata log lost committed entries", "commit", hs.GetCommit(), "lastIndex", last)
		hs.Commit = new(last)
	}
	if hs.GetCommit() < n.applied {
		hs.Commit = new(n.applied)
	}
	if hs.GetTerm() < snap.GetMetadata().GetTerm() {
		hs.Term = new(snap.GetMetadata().GetTerm())
	}
	n.commits.set(hs.GetCommit())
	return n.storage.SetHardState(hs)
}

// Propose appends data to the log and returns its index once the entry is
// committed and applied. The context bounds the wait; if it expires the
// entry may still commit later.
func (n *Node) Propose(ctx context.Context, data []byte) (uint64, error) {
	if len(data) == 0 {
		return 0, errors.New("raft: empty proposal")
	}
	return n.propose(ctx, data)
}

// Barrier commits an empty entry and returns its index once applied: every
// entry committed before the call (including those replayed at Open) has
// been applied when it returns. The new leader uses it before deciding.
func (n *Node) Barrier(ctx context.Context) (uint64, error) { return n.propose(ctx, nil) }

func (n *Node) propose(ctx context.Context, data []byte) (uint64, error) {
	p := &proposal{data: data, done: make(chan result, 1)}
	select {
	case n.propc <- p:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.donec:
		return 0, ErrStopped
	}
	select {
	case r := <-p.done:
		return r.index, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.donec:
		return 0, ErrStopped
	}
}

// Step hands a message received from a peer to the node.
func (n *Node) Step(ctx context.Context, m *pb.Message) error {
	select {
	case n.recvc <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.donec:
		return ErrStopped
	}
}

// ReportUnreachable tells raft that messages to peer id were lost, so the
// leader probes it instead of streaming appends into the void. Never blocks:
// feedback is dropped if the node is backed up (it is only an optimisation).
func (n *Node) ReportUnreachable(id uint64) {
	n.report(func(rn *etcdraft.RawNode) { rn.ReportUnreachable(id) })
}

// ReportSnapshot tells raft whether a MsgSnap to peer id was sent. Without
// it the leader keeps that follower paused forever after a lost snapshot.
func (n *Node) ReportSnapshot(id uint64, failed bool) {
	st := etcdraft.SnapshotFinish
	if failed {
		st = etcdraft.SnapshotFailure
	}
	n.report(func(rn *etcdraft.RawNode) { rn.ReportSnapshot(id, st) })
}

func (n *Node) report(f func(*etcdraft.RawNode)) {
	select {
	case n.reportc <- f:
	default:
	}
}

// IsLeader reports whether this node currently leads the quorum.
func (n *Node) IsLeader() bool { return n.leader.Load() == n.cfg.ID }

// Leader returns the current leader's id, 0 if unknown.
func (n *Node) Leader() uint64 { return n.leader.Load() }

// Term returns the current raft term (Kafka's leader epoch of the quorum).
func (n *Node) Term() uint64 { return n.term.Load() }

// ID returns this node's id.
func (n *Node) ID() uint64 { return n.cfg.ID }

// Close stops the goroutine, waits for it and closes the files.
func (n *Node) Close() error {
	n.closed.Do(func() { close(n.stopc) })
	<-n.donec
	return n.log.close()
}

func (n *Node) run() {
	defer close(n.donec)
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	for {
		if err := n.drainReady(); err != nil {
			n.fail(err)
			return
		}
		select {
		case <-ticker.C:
			n.rn.Tick()
		case p := <-n.propc:
			n.handleProposal(p)
		case f := <-n.reportc:
			f(n.rn)
		case q := <-n.queryc:
			q()
		case m := <-n.recvc:
			if err := n.rn.Step(m); err != nil {
				n.cfg.Logger.Debug("raft step", "err", err)
			}
			n.notePeer(m)
		case <-n.stopc:
			n.failWaiting(ErrStopped)
			return
		}
	}
}

func (n *Node) fail(err error) {
	n.cfg.Logger.Error("metadata raft node stopped", "err", err)
	n.fatal = err
	n.failWaiting(err)
}

func (n *Node) handleProposal(p *proposal) {
	if n.rn.BasicStatus().RaftState != etcdraft.StateLeader {
		p.done <- result{err: ErrNotLeader}
		return
	}
	n.seq++
	p.seq = n.seq
	env := make([]byte, 0, 17+len(p.data))
	env = append(env, envelopeV1)
	env = binary.BigEndian.AppendUint64(env, n.nonce)
	env = binary.BigEndian.AppendUint64(env, p.seq)
	env = append(env, p.data...)
	if err := n.rn.Propose(env); err != nil {
		p.done <- result{err: fmt.Errorf("%w: %v", ErrNotLeader, err)}
		return
	}
	n.waiting[p.seq] = p
}

const envelopeV1 = 1

func (n *Node) drainReady() error {
	for n.rn.HasReady() {
		rd := n.rn.Ready()
		if err := n.handleReady(rd); err != nil {
			return err
		}
		n.rn.Advance(rd)
	}
	return n.maybeSnapshot()
}

func (n *Node) handleReady(rd etcdraft.Ready) error {
	if rd.SoftState != nil {
		n.leader.Store(rd.SoftState.Lead)
		if rd.SoftState.RaftState != etcdraft.StateLeader {
			// Our pending entries may be overwritten by the new leader;
			// the caller must retry against it (Kafka: NOT_CONTROLLER).
			n.failWaiting(ErrNotLeader)
		}
	}
	if !etcdraft.IsEmptySnap(rd.Snapshot) {
		if err := n.installSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if err := n.log.append(rd.Entries); err != nil {
		return err
	}
	if err := n.storage.Append(rd.Entries); err != nil {
		return err
	}
	if !etcdraft.IsEmptyHardState(rd.HardState) {
		if err := n.log.saveHardState(rd.HardState); err != nil {
			return fmt.Errorf("save quorum-state: %w", err)
		}
		if err := n.storage.SetHardState(rd.HardState); err != nil {
			return err
		}
		n.term.Store(rd.HardState.GetTerm())
		n.commits.set(rd.HardState.GetCommit())
	}
	if len(rd.Messages) > 0 && n.cfg.Transport != nil {
		n.cfg.Transport.Send(rd.Messages)
	}
	for _, e := range rd.CommittedEntries {
		if err := n.applyEntry(e); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) installSnapshot(s *pb.Snapshot) error {
	if err := n.log.saveSnapshot(s); err != nil {
		return err
	}
	if err := n.storage.ApplySnapshot(s); err != nil {
		return err
	}
	if err := n.cfg.Applier.Restore(s.Data); err != nil {
		return fmt.Errorf("restore snapshot from leader: %w", err)
	}
	n.confState = s.GetMetadata().GetConfState()
	n.applied = s.GetMetadata().GetIndex()
	n.snapApplied = n.applied
	return nil
}

func (n *Node) applyEntry(e *pb.Entry) error {
	idx := e.GetIndex()
	switch e.GetType() {
	case pb.EntryNormal:
		n.applyNormal(idx, e.Data)
	case pb.EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.Data, &cc); err != nil {
			return fmt.Errorf("conf change at %d: %w", idx, err)
		}
		n.confState = n.rn.ApplyConfChange(&cc)
	case pb.EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := proto.Unmarshal(e.Data, &cc); err != nil {
			return fmt.Errorf("conf change at %d: %w", idx, err)
		}
		n.confState = n.rn.ApplyConfChange(&cc)
	}
	n.applied = idx
	return nil
}

func (n *Node) applyNormal(idx uint64, data []byte) {
	if len(data) == 0 {
		return // leader no-op of a new term
	}
	if len(data) < 17 || data[0] != envelopeV1 {
		n.cfg.Logger.Error("skipping metadata entry with unknown envelope", "index", idx)
		return
	}
	nonce := binary.BigEndian.Uint64(data[1:])
	seq := binary.BigEndian.Uint64(data[9:])
	payload := data[17:]
	var err error
	if len(payload) > 0 {
		if err = n.cfg.Applier.Apply(idx, payload); err != nil {
			n.cfg.Logger.Error("metadata entry rejected by state machine", "index", idx, "err", err)
		}
	}
	if nonce != n.nonce {
		return
	}
	if p, ok := n.waiting[seq]; ok {
		delete(n.waiting, seq)
		p.done <- result{index: idx, err: err}
	}
}

func (n *Node) failWaiting(err error) {
	for seq, p := range n.waiting {
		p.done <- result{err: err}
		delete(n.waiting, seq)
	}
}

func (n *Node) maybeSnapshot() error {
	if n.applied-n.snapApplied < n.cfg.SnapshotEvery {
		return nil
	}
	data, err := n.cfg.Applier.Snapshot()
	if err != nil {
		return fmt.Errorf("metadata snapshot: %w", err)
	}
	s, err := n.storage.CreateSnapshot(n.applied, n.confState, data)
	if err != nil {
		return err
	}
	if err := n.log.saveSnapshot(s); err != nil {
		return err
	}
	if err := n.storage.Compact(n.applied); err != nil {
		return err
	}
	n.cfg.Logger.Debug("wrote metadata snapshot", "index", n.applied, "bytes", len(data))
	n.snapApplied = n.applied
	return nil
}

// raftLogger routes etcd raft's logging to slog.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)              { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(f string, v ...any)   { r.l.Debug(fmt.Sprintf(f, v...)) }
func (r raftLogger) Info(v ...any)               { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Infof(f string, v ...any)    { r.l.Debug(fmt.Sprintf(f, v...)) }
func (r raftLogger) Warning(v ...any)            { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(f string, v ...any) { r.l.Warn(fmt.Sprintf(f, v...)) }
func (r raftLogger) Error(v ...any)              { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(f string, v ...any)   { r.l.Error(fmt.Sprintf(f, v...)) }
func (r raftLogger) Fatal(v ...any)              { r.Panic(v...) }
func (r raftLogger) Fatalf(f string, v ...any)   { r.Panicf(f, v...) }
func (r raftLogger) Panic(v ...any)              { s := fmt.Sprint(v...); r.l.Error(s); panic(s) }
func (r raftLogger) Panicf(f string, v ...any)   { r.Panic(fmt.Sprintf(f, v...)) }
