package server

import (
	"context"
	"sync"

	"github.com/samsa-io/samsa/internal/controllerchannel"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/storage"
)

// A combined node (process.roles=broker,controller) formatted with
// --no-initial-controllers joins an existing quorum as Kafka 4.4's does:
// until a voter change adds it, its raft log receives nothing, so its
// broker side observes the quorum like a broker-only node (a
// raft.Observer fetching the metadata log from the leader into the same
// Loader). When the leader adds it, raft catches it up (a snapshot, then
// the log) and from its first delivery on only raft feeds the Loader; the
// observer stops.

// joinGate hands the Loader first to the observer, then, from raft's
// first Apply or Restore on, to raft alone.
type joinGate struct {
	loader *metadata.Loader
	// joined is closed when raft takes over.
	joined chan struct{}

	// stopObserver closes the observer, once; stopped tells the goroutine
	// that waits for joined that the node is going down.
	stopObserver func()
	stopped      chan struct{}

	mu   sync.Mutex
	raft bool
}

func newJoinGate(l *metadata.Loader) *joinGate {
	return &joinGate{loader: l, joined: make(chan struct{}), stopped: make(chan struct{}), stopObserver: func() {}}
}

// close stops the observer, on the way down.
func (g *joinGate) close() {
	select {
	case <-g.stopped:
	default:
		close(g.stopped)
	}
	g.stopObserver()
}

// raftSide is the gate as raft's Applier.
type raftSide struct{ g *joinGate }

func (r raftSide) take() {
	if !r.g.raft {
		r.g.raft = true
		close(r.g.joined)
	}
}

func (r raftSide) Apply(index uint64, data []byte) error {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	r.take()
	return r.g.loader.Apply(index, data)
}

func (r raftSide) Restore(data []byte) error {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	r.take()
	return r.g.loader.Restore(data)
}

func (r raftSide) Snapshot() ([]byte, error) { return r.g.loader.Snapshot() }

// observerSide is the gate as the observer's Applier: it drops what
// arrives once raft has taken over.
type observerSide struct{ g *joinGate }

func (o observerSide) Apply(index uint64, data []byte) error {
	o.g.mu.Lock()
	defer o.g.mu.Unlock()
	if o.g.raft {
		return nil
	}
	return o.g.loader.Apply(index, data)
}

func (o observerSide) Restore(data []byte) error {
	o.g.mu.Lock()
	defer o.g.mu.Unlock()
	if o.g.raft {
		return nil
	}
	return o.g.loader.Restore(data)
}

func (o observerSide) Snapshot() ([]byte, error) { return o.g.loader.Snapshot() }

// joiningCombined reports whether this node is a combined node joining a
// quorum (its raft log has no voters yet).
func (s *Server) joiningCombined() bool { return s.gate != nil }

// observeUntilJoined starts, on a joining combined node, the observer
// that feeds its broker side until the leader adds it.
func (s *Server) observeUntilJoined(ctx context.Context) error {
	if !s.joiningCombined() {
		return nil
	}
	s.logger.Info("controller ready to join the quorum", "node.id", s.cfg.NodeID, "directory.id", storage.UUIDString(s.metadataDirID))
	if err := s.observeWith(ctx, observerSide{s.gate}); err != nil {
		return err
	}
	s.gate.stopObserver = sync.OnceFunc(s.observer.Close)
	go func() {
		select {
		case <-s.gate.joined:
			s.logger.Info("added to the metadata quorum: the raft log feeds the broker from now on")
			s.gate.stopObserver()
		case <-s.gate.stopped:
		}
	}()
	return nil
}

// joinLeaders is the channel's LeaderSource on a joining combined node:
// raft's leader once it knows one, the observer's before.
type joinLeaders struct {
	raft     controllerchannel.RaftLeaders
	observer *raft.Observer
}

func (j joinLeaders) Leader() int32 {
	if id := j.raft.Leader(); id != 0 {
		return id
	}
	return j.observer.Leader()
}

func (j joinLeaders) NotLeader(id int32) { j.observer.NotLeader(id) }

func (j joinLeaders) Addr(id int32) (string, bool) {
	if a, ok := j.raft.Addr(id); ok {
		return a, true
	}
	return j.observer.Addr(id)
}
