package raft

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// ErrCompacted is returned by CommittedEntries when the first requested
// index is no longer in the log: it is covered by the latest snapshot.
var ErrCompacted = errors.New("raft: requested index is compacted into a snapshot")

// Entry is one committed log entry as observers see it: Data is the
// payload the Applier received, nil for entries the Applier never sees
// (leader no-ops, barriers, membership changes). Voters, for a voter
// change, is the voter set after it (nil when its entry does not record
// the set: a log written before the set was recorded).
type Entry struct {
	Index, Term uint64
	Data        []byte
	Voters      []Voter
}

// Snapshot is the latest snapshot of the log: Data is an Applier.Snapshot
// result (empty for the bootstrap checkpoint at index 1) covering every
// entry up to Index; Voters the voter set at Index when the snapshot
// records it.
type Snapshot struct {
	Index, Term uint64
	Data        []byte
	Voters      map[uint64]Voter
}

// commitWatch lets readers wait for the commit index to move. The run
// goroutine is the only writer.
type commitWatch struct {
	mu      sync.Mutex
	commit  uint64
	changed chan struct{} // closed and replaced when commit advances
}

func (w *commitWatch) get() (uint64, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.commit, w.changed
}

func (w *commitWatch) set(commit uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if commit <= w.commit {
		return
	}
	w.commit = commit
	if w.changed != nil {
		close(w.changed)
	}
	w.changed = make(chan struct{})
}

// Commit returns the highest index this node knows to be committed (the
// metadata log's high watermark minus one) and a channel closed when it
// next advances: a long poll waits on it.
func (n *Node) Commit() (uint64, <-chan struct{}) { return n.commits.get() }

// CommittedEntries returns committed entries from index from on, at most
// maxBytes of data (but at least one entry when any is available). It
// returns no entries when from is past the commit index, and ErrCompacted
// when from is at or below the latest snapshot. It runs on the node
// goroutine.
func (n *Node) CommittedEntries(ctx context.Context, from uint64, maxBytes int) ([]Entry, error) {
	type answer struct {
		ents []Entry
		err  error
	}
	done := make(chan answer, 1)
	q := func() {
		ents, err := n.committedEntries(from, maxBytes)
		done <- answer{ents, err}
	}
	if err := n.query(ctx, q); err != nil {
		return nil, err
	}
	a := <-done
	return a.ents, a.err
}

func (n *Node) committedEntries(from uint64, maxBytes int) ([]Entry, error) {
	first, _ := n.storage.FirstIndex()
	if from < first {
		return nil, ErrCompacted
	}
	commit := n.rn.BasicStatus().GetCommit()
	last, _ := n.storage.LastIndex()
	hi := min(commit, last) + 1
	if from >= hi {
		return nil, nil
	}
	ents, err := n.storage.Entries(from, hi, uint64(max(maxBytes, 1)))
	if errors.Is(err, etcdraft.ErrCompacted) {
		return nil, ErrCompacted
	}
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ents))
	for _, e := range ents {
		out = append(out, Entry{Index: e.GetIndex(), Term: e.GetTerm(), Data: payload(e), Voters: changedVoters(e)})
	}
	return out, nil
}

// payload is what applyNormal hands the Applier, nil when nothing.
func payload(e *pb.Entry) []byte {
	if e.GetType() != pb.EntryNormal || len(e.Data) < 17 || e.Data[0] != envelopeV1 || len(e.Data) == 17 {
		return nil
	}
	return e.Data[17:]
}

// changedVoters is the voter set a voter change entry records, nil for
// other entries.
func changedVoters(e *pb.Entry) []Voter {
	if e.GetType() != pb.EntryConfChangeV2 {
		return nil
	}
	var cc pb.ConfChangeV2
	var c confContext
	if proto.Unmarshal(e.Data, &cc) != nil || json.Unmarshal(cc.Context, &c) != nil {
		return nil
	}
	return c.Voters
}

// LatestSnapshot returns the snapshot that entries below the log's first
// index are compacted into.
func (n *Node) LatestSnapshot(ctx context.Context) (Snapshot, error) {
	done := make(chan Snapshot, 1)
	var serr error
	q := func() {
		s, err := n.storage.Snapshot()
		voters, data, uerr := unwrapSnapshot(s.Data)
		serr = errors.Join(err, uerr)
		done <- Snapshot{Index: s.GetMetadata().GetIndex(), Term: s.GetMetadata().GetTerm(), Data: data, Voters: voters}
	}
	if err := n.query(ctx, q); err != nil {
		return Snapshot{}, err
	}
	s := <-done
	return s, serr
}

// query runs q on the node goroutine.
func (n *Node) query(ctx context.Context, q func()) error {
	select {
	case n.queryc <- q:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.donec:
		return ErrStopped
	}
}

// ObserverState is what the leader knows of one observer: a node that
// fetches the metadata log over the Kafka protocol (a broker-only node).
type ObserverState struct {
	ID uint64
	// LogEnd is the offset it last fetched from: its log end.
	LogEnd uint64
	// LastFetch is when it last fetched.
	LastFetch time.Time
}

// observerTTL is how long an observer that stopped fetching is still
// listed (Kafka forgets observers after five minutes).
const observerTTL = 5 * time.Minute

// noteObserver records a fetch by observer id from offset.
func (n *Node) noteObserver(id int32, offset int64) {
	if id < 0 || uint64(id) == n.cfg.ID {
		return
	}
	n.observed.Lock()
	defer n.observed.Unlock()
	if n.observed.m == nil {
		n.observed.m = map[uint64]ObserverState{}
	}
	n.observed.m[uint64(id)] = ObserverState{ID: uint64(id), LogEnd: uint64(max(offset, 0)), LastFetch: time.Now()}
}

// Observers lists the nodes that fetched the metadata log from this node
// in the last five minutes, by id.
func (n *Node) Observers() []ObserverState {
	n.observed.Lock()
	defer n.observed.Unlock()
	var out []ObserverState
	for id, o := range n.observed.m {
		if time.Since(o.LastFetch) > observerTTL {
			delete(n.observed.m, id)
			continue
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b ObserverState) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
