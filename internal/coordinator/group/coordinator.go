package group

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// KV is one record of __consumer_offsets; a nil Value is a tombstone. The
// coordinator writes plain KVs (Key and Value only); on load a
// Transactional record stays pending until a Control marker of its
// producer commits or drops it.
type KV = coordinator.KV

// Coordinator is the classic and KIP-848 group coordinator of one broker:
// a shard per loaded partition of __consumer_offsets, run by the
// coordinator runtime.
type Coordinator struct {
	cfg Config
	rt  *coordinator.Runtime[*shard]
	// shareInitMu serializes the initializations of share partitions
	// (share_init.go).
	shareInitMu sync.Mutex
}

// shard is one loaded partition of __consumer_offsets and the groups on it.
type shard struct {
	c *Coordinator
	p *coordinator.Partition[*shard]

	// mu guards the groups; p.Write takes it to decide and apply. Lock
	// order: the partition's write lock before mu.
	mu struct {
		sync.Mutex
		groups map[string]*group
		// pending holds transactional offsets until their marker:
		// producer id -> group -> partition -> offset.
		pending map[int64]map[string]map[tp]offsetEntry
		seq     int64 // records replayed, for offsetEntry.seq
		// shares are the KIP-932 share groups (share_group.go).
		shares map[string]*shareGroup
	}
}

// New returns a coordinator with no loaded partitions and starts its offset
// expiry task.
func New(cfg Config) *Coordinator {
	c := &Coordinator{cfg: cfg.withDefaults()}
	c.rt = coordinator.NewRuntime(coordinator.Config{Topic: "__consumer_offsets", NumPartitions: c.cfg.NumPartitions, Logger: c.cfg.Logger},
		func(p *coordinator.Partition[*shard]) *shard {
			s := &shard{c: c, p: p}
			s.mu.groups = map[string]*group{}
			s.mu.pending = map[int64]map[string]map[tp]offsetEntry{}
			return s
		})
	c.rt.Every(c.cfg.RetentionCheckInterval, func(p *coordinator.Partition[*shard]) { p.Shard.expire() })
	return c
}

// PartitionFor returns the __consumer_offsets partition that owns groupID.
func (c *Coordinator) PartitionFor(groupID string) int32 { return c.rt.PartitionFor(groupID) }

// Load makes this coordinator the owner of partition (led at epoch): it
// replays log in the background; requests for the partition's groups get
// COORDINATOR_LOAD_IN_PROGRESS until the replay ends. Loading an already
// loaded partition replaces the old state.
func (c *Coordinator) Load(partition, epoch int32, log coordinator.PartitionLog) {
	c.rt.Load(partition, epoch, log)
}

// Unload drops the partition's state: pending JoinGroup and SyncGroup calls
// are answered NOT_COORDINATOR and its timers stop.
func (c *Coordinator) Unload(partition int32) { c.rt.Unload(partition) }

// Close unloads every partition, stops timers and background work and waits
// for them.
func (c *Coordinator) Close() { c.rt.Close() }

func (s *shard) Lock()   { s.mu.Lock() }
func (s *shard) Unlock() { s.mu.Unlock() }

// ReplayLocked applies one record read on load.
func (s *shard) ReplayLocked(kv KV) error { return s.replayLocked(kv, true) }

// OnLoadedLocked gives every replayed member a fresh session so that
// consumers that were alive before the move can heartbeat back in.
func (s *shard) OnLoadedLocked() {
	for _, g := range s.mu.groups {
		s.finishLoadLocked(g)
	}
	s.finishShareLoadLocked()
}

// OnUnloadedLocked answers every waiter NOT_COORDINATOR and stops the
// groups' timers.
func (s *shard) OnUnloadedLocked() {
	for _, g := range s.mu.groups {
		s.dropGroupLocked(g, kerr.NotCoordinator.Code)
	}
	for _, g := range s.mu.shares {
		g.stopTimers()
	}
	s.mu.groups = nil
	s.mu.shares = nil
}

// afterFunc runs fn after d on a goroutine Close joins.
func (s *shard) afterFunc(d time.Duration, fn func()) *time.Timer { return s.c.rt.AfterFunc(d, fn) }

// goTracked runs fn on a goroutine Close joins (used to persist from timer
// callbacks, which hold mu and so cannot start a write).
func (s *shard) goTracked(fn func()) { s.c.rt.Go(fn) }

// unloadedLocked reports whether the partition was unloaded: a timer or
// waiter that finds it so must not act.
func (s *shard) unloadedLocked() bool { return s.p.UnloadedLocked() }

// finishLoadLocked restarts the sessions of g's members after a load.
func (s *shard) finishLoadLocked(g *group) {
	if g.cg != nil {
		s.finishConsumerLoadLocked(g)
		return
	}
	if g.sg != nil {
		s.finishStreamsLoadLocked(g)
		return
	}
	for _, m := range g.members {
		s.scheduleSessionLocked(g, m)
	}
	g.updateSubscriptions()
}

// dropGroupLocked stops g's timers and answers its waiters with code.
func (s *shard) dropGroupLocked(g *group, code int16) {
	if g.cg != nil {
		g.cg.stopAllTimers()
	}
	if g.sg != nil {
		g.sg.stopAllTimers()
	}
	for _, m := range g.members {
		stopTimer(m.sessionTimer)
		m.timerSeq++
		s.answerJoinLocked(m, joinError(code, m.id))
		s.answerSyncLocked(m, &syncResult{code: code})
	}
	for _, t := range g.pending {
		stopTimer(t)
	}
	stopTimer(g.rebalanceTimer)
	stopTimer(g.syncTimer)
	g.rebalanceSeq++
	g.state = stateDead
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// shardFor finds the loaded shard of groupID, or the error code to answer:
// NOT_COORDINATOR if the partition is not ours, COORDINATOR_LOAD_IN_PROGRESS
// while it replays.
func (c *Coordinator) shardFor(groupID string) (*shard, int16) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID.Code
	}
	return c.rt.Shard(groupID)
}

// newMemberID is Kafka's clientId + "-" + random UUID.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

type clientInfoKey struct{}

type clientInfo struct{ id, host string }

// WithClient returns ctx carrying the request's client id and client host
// (e.g. "/127.0.0.1"), which JoinGroup stores for DescribeGroups.
func WithClient(ctx context.Context, clientID, clientHost string) context.Context {
	return context.WithValue(ctx, clientInfoKey{}, clientInfo{clientID, clientHost})
}

func clientFrom(ctx context.Context) clientInfo {
	ci, _ := ctx.Value(clientInfoKey{}).(clientInfo)
	return ci
}
