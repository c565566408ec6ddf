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
	// ErrStorage answers a proposal whose entry could not be written (a
	// full disk, an I/O error), and every proposal while the node waits
	// to retry its storage. The entry is discarded: it is never applied.
	ErrStorage = errors.New("raft: metadata log storage failure")
	// ErrOutcomeUnknown, wrapped with ErrNotLeader, answers a proposal
	// whose entry a snapshot from the leader covers: the entry was
	// committed or replaced, and the snapshot does not say which. Like an
	// expired context, it says nothing either way.
	ErrOutcomeUnknown = errors.New("raft: proposal outcome unknown")
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
	// Voters describe the initial voters (directory ids, endpoints) of a
	// dynamic quorum, written with Peers into a fresh directory; nil for
	// a static quorum (controller.quorum.voters), whose endpoints come
	// from the configuration.
	Voters []Voter
	// Join starts a fresh directory with no voters at all: the node is
	// neither voter nor candidate until the leader adds it (AddVoter) and
	// sends it the log. Peers and Voters are then ignored.
	Join bool
	// OnVoters, when set, is called on the node goroutine with the voters
	// and learners each time the set changes (and once at Open): the
	// server points its transport at them. It must not block.
	OnVoters func(map[uint64]Voter)
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
	// SnapshotBytes also makes a snapshot due once the entries applied
	// since the last one hold this many bytes, or as many as that
	// snapshot if it was larger: a restart then replays at most about
	// one snapshot's worth of entries, however few and large they are
	// (a node's restart writes its partitions' leader changes in a few
	// entries). Default 4 MiB.
	SnapshotBytes uint64
	// SnapshotOnClose has Close write a snapshot of what was applied
	// since the last one, so that the next start loads it instead of
	// replaying entries.
	SnapshotOnClose bool
	// Fault, when set, is called before each write ("write") and fsync
	// ("sync") of the log's files with the operation and the path; an
	// error it returns is that operation's failure. Tests inject disk
	// faults with it; production leaves it nil.
	Fault func(op, path string) error
	// now is the clock of storage retries and snapshot retries; default
	// time.Now. The simulation (sim_test.go) sets its own.
	now func() time.Time
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
	if c.Join {
		c.Peers = nil
		if c.Transport == nil {
			return errors.New("raft: Transport is required to join a quorum")
		}
	} else {
		if len(c.Peers) == 0 {
			c.Peers = []uint64{c.ID}
		}
		if !slices.Contains(c.Peers, c.ID) {
			return fmt.Errorf("raft: Peers %v must include ID %d", c.Peers, c.ID)
		}
		if len(c.Peers) > 1 && c.Transport == nil {
			return errors.New("raft: Transport is required with more than one peer")
		}
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
	if c.SnapshotBytes == 0 {
		c.SnapshotBytes = 4 << 20
	}
	if c.now == nil {
		c.now = time.Now
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
	// snapBytes is the size of the last snapshot's data; sinceSnap the
	// bytes of the entries applied after it (Config.SnapshotBytes).
	snapBytes, sinceSnap uint64
	fatal                error
	// broken is the storage failure the node is recovering from (nil when
	// healthy): until retryAt it drops messages and refuses proposals,
	// then reopens its log from disk (recoverStorage). cut is the first
	// index written by the failed Ready, removed from disk on recovery.
	broken  error
	retryAt time.Time
	backoff time.Duration
	cut     uint64
	// cutWaiting are the proposals whose entries recovery cuts (n.cut
	// on), each with its failure: they are answered once the cut is on
	// disk, because a crash before could leave an entry in the log for
	// a restart to commit.
	cutWaiting []cutProposal
	snapRetry  time.Time // a failed snapshot write is retried after this
	// durableCommit is the commit index in quorum-state on disk.
	durableCommit uint64
	// peers and peersTerm: contact times of voters, on the leader (status.go).
	peers     map[uint64]peerTimes
	peersTerm uint64
	// voters: what is known of each voter and learner (voters.go);
	// confWaiting: the AddVoter/RemoveVoter calls waiting for their
	// change to apply, by sequence.
	voters      map[uint64]Voter
	confWaiting map[uint64]chan error
	// observed: the observers that fetched from this node (observe.go);
	// written by Kafka request goroutines, hence its own lock.
	observed struct {
		sync.Mutex
		m map[uint64]ObserverState
	}
	// snapNow asks for a snapshot at the next chance, whatever
	// SnapshotEvery says (a node was added).
	snapNow bool
}

type proposal struct {
	data  []byte
	seq   uint64
	index uint64      // of its entry, once persisted in this node's log
	done  chan result // buffered 1
}

type cutProposal struct {
	p   *proposal
	err error
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
	n, err := open(cfg)
	if err != nil {
		return nil, err
	}
	go n.run()
	return n, nil
}

// open is Open without the goroutine: the simulation drives the node's
// turn functions (settle, onTick, onProposal, onMessage, onReport) itself.
func open(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dl, rec, err := openDiskLog(cfg.Dir, cfg.Logger, cfg.Fault)
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, log: dl, storage: etcdraft.NewMemoryStorage(),
		propc: make(chan *proposal), recvc: make(chan *pb.Message, 256),
		reportc: make(chan func(*etcdraft.RawNode), 256), queryc: make(chan func()),
		stopc: make(chan struct{}), donec: make(chan struct{}),
		waiting: map[uint64]*proposal{}, voters: map[uint64]Voter{}, confWaiting: map[uint64]chan error{},
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
		CheckQuorum: true, PreVote: true, DisableProposalForwarding: true, StepDownOnRemoval: true,
		Logger: raftLogger{cfg.Logger},
	})
	if err != nil {
		dl.close()
		return nil, fmt.Errorf("raft: %w", err)
	}
	n.rn = rn
	n.publishVoters()
	if v := n.confState.GetVoters(); len(v) == 1 && v[0] == cfg.ID {
		// A quorum of one needs no election timeout: lead at once.
		if err := rn.Campaign(); err != nil {
			dl.close()
			return nil, err
		}
	}
	// Process the campaign (and the replay of committed entries) before
	// returning, so a one-voter node is already leader when Open returns
	// (unless its disk fails: then it retries in the background).
	if err := n.drainReady(); err != nil && !n.storageFailed(err) {
		n.log.close()
		return nil, err
	}
	return n, nil
}

func (n *Node) restore(rec *recovered) error {
	snap := rec.snap
	if snap == nil && n.cfg.Join {
		// Joining: no voters until the leader's snapshot arrives.
		n.confState = &pb.ConfState{}
		return n.restoreEntries(rec, 0)
	}
	if snap == nil {
		// Fresh directory: the initial voter set lives in a checkpoint
		// at index 1 with no Applier data (see doc.go).
		peers := slices.Clone(n.cfg.Peers)
		slices.Sort(peers)
		infos := map[uint64]Voter{}
		for _, v := range n.cfg.Voters {
			infos[v.ID] = v
		}
		snap = &pb.Snapshot{Data: wrapSnapshot(infos, nil), Metadata: &pb.SnapshotMetadata{
			Index: new(uint64(1)), Term: new(uint64(1)), ConfState: &pb.ConfState{Voters: peers},
		}}
		if err := n.log.saveSnapshot(snap); err != nil {
			return fmt.Errorf("bootstrap metadata log: %w", err)
		}
	}
	if err := n.storage.ApplySnapshot(snap); err != nil {
		return err
	}
	voters, data, err := unwrapSnapshot(snap.Data)
	if err != nil {
		return fmt.Errorf("metadata snapshot at %d: %w", snap.GetMetadata().GetIndex(), err)
	}
	if voters != nil {
		n.voters = voters
	}
	if len(data) > 0 {
		if err := n.cfg.Applier.Restore(data); err != nil {
			return fmt.Errorf("restore metadata snapshot at %d: %w", snap.GetMetadata().GetIndex(), err)
		}
	}
	n.confState = snap.GetMetadata().GetConfState()
	n.applied = snap.GetMetadata().GetIndex()
	n.snapApplied = n.applied
	n.snapBytes, n.sinceSnap = uint64(len(data)), 0
	return n.restoreEntries(rec, snap.GetMetadata().GetTerm())
}

// restoreEntries loads the recovered entries and hard state into the
// in-memory storage; the term is at least snapTerm, the snapshot's.
func (n *Node) restoreEntries(rec *recovered, snapTerm uint64) error {
	if err := n.storage.Append(rec.entries); err != nil {
		return err
	}
	hs := rec.hard
	last, _ := n.storage.LastIndex()
	if hs.GetCommit() > last {
		// Only possible if acknowledged bytes were lost (disk fault):
		// raft would panic, so keep going with what survives.
		n.cfg.Logger.Error("metadata log lost committed entries", "commit", hs.GetCommit(), "last_index", last)
		hs.Commit = new(last)
	}
	if hs.GetCommit() < n.applied {
		hs.Commit = new(n.applied)
	}
	if hs.GetTerm() < snapTerm {
		hs.Term = new(snapTerm)
	}
	n.commits.set(hs.GetCommit())
	n.durableCommit = hs.GetCommit()
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
	for n.settle() {
		select {
		case <-ticker.C:
			n.onTick()
		case p := <-n.propc:
			n.onProposal(p)
		case f := <-n.reportc:
			n.onReport(f)
		case q := <-n.queryc:
			q()
		case m := <-n.recvc:
			n.onMessage(m)
		case <-n.stopc:
			n.failWaiting(ErrStopped)
			n.snapshotAtStop()
			return
		}
	}
}

// The turn functions below are the run loop's cases; the simulation calls
// them directly, one at a time, followed by settle.

// settle persists, sends and applies whatever raft has ready. It returns
// false once the node has failed for good.
func (n *Node) settle() bool {
	if n.fatal != nil {
		return false
	}
	if n.broken != nil {
		return true
	}
	if err := n.drainReady(); err != nil && !n.storageFailed(err) {
		n.fail(err)
		return false
	}
	return true
}

// onTick advances raft's clock. While storage is failing, the first tick
// after retryAt tries to recover instead.
func (n *Node) onTick() {
	if n.broken == nil {
		n.rn.Tick()
		return
	}
	if n.cfg.now().Before(n.retryAt) {
		return
	}
	if err := n.recoverStorage(); err != nil && !n.storageFailed(err) {
		n.fail(err)
		return
	}
	if n.broken == nil {
		n.cfg.Logger.Info("metadata log storage recovered", "applied", n.applied)
	}
}

// onProposal starts a proposal, or refuses it while storage is failing.
func (n *Node) onProposal(p *proposal) {
	if n.broken != nil {
		p.done <- result{err: n.broken}
		return
	}
	n.handleProposal(p)
}

// onReport applies transport feedback; dropped while storage is failing.
func (n *Node) onReport(f func(*etcdraft.RawNode)) {
	if n.broken == nil {
		f(n.rn)
	}
}

// onMessage steps a peer's message into raft. While storage is failing
// it is dropped (raft tolerates loss, and a node that cannot write must
// not vote or lead).
func (n *Node) onMessage(m *pb.Message) {
	if n.broken != nil {
		return
	}
	if err := n.rn.Step(m); err != nil {
		n.cfg.Logger.Debug("raft step", "err", err)
	}
	n.notePeer(m)
}

// storageFailed handles an error of drainReady: a storage failure puts
// the node in recovery and returns true; anything else is fatal.
func (n *Node) storageFailed(err error) bool {
	if !errors.Is(err, ErrStorage) {
		return false
	}
	if v := n.confState.GetVoters(); len(v) == 1 && v[0] == n.cfg.ID {
		// The only voter: entries above the durable commit index are in
		// no other log, so recovery may drop them, and their proposals
		// get a definite answer at the first retry instead of waiting
		// for the disk to accept them.
		for _, p := range n.waiting {
			if p.index > n.durableCommit {
				if n.cut == 0 || p.index < n.cut {
					n.cut = p.index
				}
				delete(n.waiting, p.seq)
				n.cutWaiting = append(n.cutWaiting, cutProposal{p, err})
			}
		}
	}
	n.backoff = min(max(2*n.backoff, n.cfg.TickInterval), 50*n.cfg.TickInterval)
	n.retryAt = n.cfg.now().Add(n.backoff)
	n.broken = err
	n.leader.Store(0)
	n.cfg.Logger.Error("metadata log write failed; retrying", "err", err, "retry_in", n.backoff)
	return true
}

// discardReady sets aside the proposals whose entries are in rd, which
// could not be persisted, to be answered err once recovery has removed
// those entries from disk; no peer has them (messages go out only after a
// Ready persisted), so they are never applied.
func (n *Node) discardReady(rd etcdraft.Ready, err error) {
	if len(rd.Entries) > 0 {
		if first := rd.Entries[0].GetIndex(); n.cut == 0 || first < n.cut {
			n.cut = first
		}
	}
	for _, e := range rd.Entries {
		if p := n.waiterOf(e); p != nil {
			delete(n.waiting, p.seq)
			n.cutWaiting = append(n.cutWaiting, cutProposal{p, err})
		}
	}
}

// recoverStorage rebuilds the node from what its disk durably holds, as a
// restart would, but keeps the state machine (already applied up to
// n.applied) and the proposals still waiting on entries that did persist.
// It drops the entries of failed Readys (n.cut on), so that nothing
// answered with an error can be applied later.
func (n *Node) recoverStorage() error {
	n.log.close()
	dl, rec, err := openDiskLog(n.cfg.Dir, n.cfg.Logger, n.cfg.Fault)
	if err != nil {
		return fmt.Errorf("%w: reopen: %w", ErrStorage, err)
	}
	n.log = dl
	if rec.snap == nil && !n.cfg.Join {
		return fmt.Errorf("metadata log in %s lost its checkpoint", n.cfg.Dir)
	}
	if last, ok := dl.lastIndex(); ok && n.cut > 0 && last >= n.cut {
		if err := dl.truncateFrom(n.cut); err != nil {
			return fmt.Errorf("%w: drop unpersisted entries: %w", ErrStorage, err)
		}
	}
	ents := rec.entries
	for len(ents) > 0 && n.cut > 0 && ents[len(ents)-1].GetIndex() >= n.cut {
		ents = ents[:len(ents)-1]
	}
	n.cut = 0
	// The cut entries are off the disk (truncateFrom fsyncs): now their
	// proposals may learn that they failed.
	for _, c := range n.cutWaiting {
		c.p.done <- result{err: c.err}
	}
	n.cutWaiting = nil
	ms := etcdraft.NewMemoryStorage()
	if rec.snap != nil {
		if err := ms.ApplySnapshot(rec.snap); err != nil {
			return err
		}
	}
	if err := ms.Append(ents); err != nil {
		return err
	}
	hs := rec.hard
	last, _ := ms.LastIndex()
	if n.applied > last {
		return fmt.Errorf("metadata log in %s ends at %d, below the applied index %d", n.cfg.Dir, last, n.applied)
	}
	hs.Commit = new(min(max(hs.GetCommit(), n.applied), last))
	n.durableCommit = hs.GetCommit()
	if t := rec.snap.GetMetadata().GetTerm(); hs.GetTerm() < t {
		hs.Term = new(t)
	}
	if err := ms.SetHardState(hs); err != nil {
		return err
	}
	rn, err := etcdraft.NewRawNode(&etcdraft.Config{
		ID: n.cfg.ID, ElectionTick: 10, HeartbeatTick: 1, Storage: ms,
		Applied: n.applied, MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256,
		CheckQuorum: true, PreVote: true, DisableProposalForwarding: true, StepDownOnRemoval: true,
		Logger: raftLogger{n.cfg.Logger},
	})
	if err != nil {
		return fmt.Errorf("raft: %w", err)
	}
	n.storage, n.rn, n.broken = ms, rn, nil
	n.term.Store(hs.GetTerm())
	if v := n.confState.GetVoters(); len(v) == 1 && v[0] == n.cfg.ID {
		if err := rn.Campaign(); err != nil {
			return err
		}
	}
	if err := n.drainReady(); err != nil {
		return err
	}
	n.backoff = 0
	return nil
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
			if errors.Is(err, ErrStorage) {
				n.discardReady(rd, err)
			}
			return err
		}
		n.rn.Advance(rd)
	}
	return n.maybeSnapshot()
}

func (n *Node) handleReady(rd etcdraft.Ready) error {
	if rd.SoftState != nil {
		// Losing leadership does not answer the waiting proposals: their
		// entries are in this log and maybe in others, so the next leader
		// may still commit them. Each is answered when its index is
		// applied: success if it is still its entry, ErrNotLeader if
		// another leader's entry replaced it (resolveReplaced).
		n.leader.Store(rd.SoftState.Lead)
		if rd.SoftState.RaftState != etcdraft.StateLeader {
			n.failConfWaiting(fmt.Errorf("%w: lost leadership during a voter change", ErrNotLeader))
		}
	}
	if !etcdraft.IsEmptySnap(rd.Snapshot) {
		if err := n.installSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if err := n.log.append(rd.Entries); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if !etcdraft.IsEmptyHardState(rd.HardState) {
		// Before the entries reach the in-memory storage: a failed Ready
		// must leave it as the disk was (recoverStorage rebuilds it).
		if err := n.log.saveHardState(rd.HardState); err != nil {
			return fmt.Errorf("%w: save quorum-state: %w", ErrStorage, err)
		}
		n.durableCommit = rd.HardState.GetCommit()
	}
	if err := n.storage.Append(rd.Entries); err != nil {
		return err
	}
	n.notePersisted(rd.Entries)
	if !etcdraft.IsEmptyHardState(rd.HardState) {
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

// notePersisted records the index of each waiting proposal whose entry is
// now in the log.
func (n *Node) notePersisted(ents []*pb.Entry) {
	for _, e := range ents {
		if p := n.waiterOf(e); p != nil {
			p.index = e.GetIndex()
		}
	}
}

// waiterOf is the waiting proposal whose entry e is, or nil.
func (n *Node) waiterOf(e *pb.Entry) *proposal {
	d := e.Data
	if e.GetType() != pb.EntryNormal || len(d) < 17 || d[0] != envelopeV1 || binary.BigEndian.Uint64(d[1:]) != n.nonce {
		return nil
	}
	return n.waiting[binary.BigEndian.Uint64(d[9:])]
}

// resolveReplaced answers the proposals whose entries sat at or below the
// applied index idx but were not applied: another leader's entries
// replaced them, so they never will be.
func (n *Node) resolveReplaced(idx uint64) {
	for seq, p := range n.waiting {
		if p.index != 0 && p.index <= idx {
			delete(n.waiting, seq)
			p.done <- result{err: fmt.Errorf("%w: entry %d was replaced by another leader's and not applied", ErrNotLeader, p.index)}
		}
	}
}

func (n *Node) installSnapshot(s *pb.Snapshot) error {
	if err := n.log.saveSnapshot(s); err != nil {
		return fmt.Errorf("%w: save snapshot from leader: %w", ErrStorage, err)
	}
	if err := n.storage.ApplySnapshot(s); err != nil {
		return err
	}
	voters, data, err := unwrapSnapshot(s.Data)
	if err != nil {
		return fmt.Errorf("snapshot from leader: %w", err)
	}
	if len(data) > 0 {
		if err := n.cfg.Applier.Restore(data); err != nil {
			return fmt.Errorf("restore snapshot from leader: %w", err)
		}
	}
	if voters != nil {
		n.voters = voters
	}
	n.confState = s.GetMetadata().GetConfState()
	n.publishVoters()
	n.applied = s.GetMetadata().GetIndex()
	n.snapApplied = n.applied
	n.snapBytes, n.sinceSnap = uint64(len(s.GetData())), 0
	for seq, p := range n.waiting {
		if p.index != 0 && p.index <= n.applied {
			delete(n.waiting, seq)
			p.done <- result{err: fmt.Errorf("%w: %w: entry %d is covered by the leader's snapshot at %d", ErrNotLeader, ErrOutcomeUnknown, p.index, n.applied)}
		}
	}
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
		n.applyConfChange(&cc)
	}
	n.applied = idx
	n.sinceSnap += uint64(len(e.Data))
	n.resolveReplaced(idx)
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
	for _, c := range n.cutWaiting {
		c.p.done <- result{err: err}
	}
	n.cutWaiting = nil
	n.failConfWaiting(err)
}

// failConfWaiting answers the voter changes still waiting: stopped, or no
// longer leader (the change may still apply, like an expired context).
func (n *Node) failConfWaiting(err error) {
	for seq, w := range n.confWaiting {
		w <- err
		delete(n.confWaiting, seq)
	}
}

func (n *Node) maybeSnapshot() error {
	due := n.applied-n.snapApplied >= n.cfg.SnapshotEvery || (n.snapNow && n.applied > n.snapApplied) ||
		n.applied > n.snapApplied && n.sinceSnap >= max(n.cfg.SnapshotBytes, n.snapBytes)
	if !due || n.cfg.now().Before(n.snapRetry) {
		return nil
	}
	data, err := n.cfg.Applier.Snapshot()
	if err != nil {
		return fmt.Errorf("metadata snapshot: %w", err)
	}
	data = wrapSnapshot(n.voters, data)
	term, err := n.storage.Term(n.applied)
	if err != nil {
		return err
	}
	s := &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{Index: new(n.applied), Term: new(term), ConfState: n.confState}}
	if err := n.log.saveSnapshot(s); err != nil {
		// The log still holds every entry: only compaction waits.
		n.snapRetry = n.cfg.now().Add(50 * n.cfg.TickInterval)
		n.cfg.Logger.Warn("metadata snapshot not written; retrying later", "index", n.applied, "err", err)
		return nil
	}
	if _, err := n.storage.CreateSnapshot(n.applied, n.confState, data); err != nil {
		return err
	}
	if err := n.storage.Compact(n.applied); err != nil {
		return err
	}
	n.cfg.Logger.Debug("wrote metadata snapshot", "index", n.applied, "bytes", len(data))
	n.snapApplied = n.applied
	n.snapBytes, n.sinceSnap = uint64(len(data)), 0
	n.snapNow = false
	return nil
}

// snapshotAtStop writes a snapshot of what was applied since the last
// one, so that the next start loads it instead of replaying the entries.
// A node whose storage failed writes none.
func (n *Node) snapshotAtStop() {
	if !n.cfg.SnapshotOnClose || n.fatal != nil || n.broken != nil || n.applied <= n.snapApplied {
		return
	}
	n.snapNow = true
	if err := n.maybeSnapshot(); err != nil {
		n.cfg.Logger.Warn("metadata snapshot at stop not written", "index", n.applied, "err", err)
	}
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
