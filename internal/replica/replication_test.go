package replica

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// fakeClock is a settable clock shared by the nodes of a test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeController answers AlterPartition like the controller: it commits
// the new ISR with the next partition epoch, unless block holds it or err
// is set.
type fakeController struct {
	mu    sync.Mutex
	reqs  []AlterPartitionRequest
	err   error
	block chan struct{} // if set, AlterPartition waits for it to close
	seen  chan struct{} // if set, receives once per request, before block
}

func (c *fakeController) alter(ctx context.Context, req AlterPartitionRequest) (PartitionState, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	block, err := c.block, c.err
	c.mu.Unlock()
	if c.seen != nil {
		c.seen <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return PartitionState{}, ctx.Err()
		}
	}
	if err != nil {
		return PartitionState{}, err
	}
	return PartitionState{Leader: 1, LeaderEpoch: req.LeaderEpoch, PartitionEpoch: req.PartitionEpoch + 1,
		Replicas: []int32{1, 2, 3}, ISR: req.NewISR}, nil
}

func (c *fakeController) requests() []AlterPartitionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reqs)
}

// replNode is one broker of a replication test: its own data directory,
// log manager and replica manager, hosting "orders"-0.
type replNode struct {
	id   int32
	dir  string
	logs *storage.LogManager
	m    *Manager
	p    *Partition
}

type nodeOptions struct {
	clock    *fakeClock
	alter    func(context.Context, AlterPartitionRequest) (PartitionState, error)
	eligible func(int32) bool
	minIS    int
}

func startReplNode(t *testing.T, id int32, dir string, st PartitionState, o nodeOptions) *replNode {
	t.Helper()
	logs, err := storage.NewLogManager(storage.ManagerConfig{Dirs: []string{dir}, CheckpointInterval: -1,
		RetentionCheckInterval: -1, CleanerThreads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Load(); err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{NodeID: id, Logs: logs, Now: o.clock.Now, AlterPartition: o.alter, ReplicaEligible: o.eligible,
		ReplicaLagTimeMax: 10 * time.Second, HighWatermarkCheckpointInterval: -1,
		ProducerIDExpirationMs: 3_600_000, ProducerIDExpirationCheckIntervalMs: 60_000})
	n := &replNode{id: id, dir: dir, logs: logs, m: m}
	t.Cleanup(func() { n.close() })
	n.p = n.ensure(t, st, o.minIS)
	return n
}

func (n *replNode) ensure(t *testing.T, st PartitionState, minISR int) *Partition {
	t.Helper()
	p, err := n.m.Ensure("orders", [16]byte{1}, 0, st, PartitionConfig{
		MaxMessageBytes:      1 << 20,
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  math.MaxInt64,
		MinInsyncReplicas:    minISR,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (n *replNode) close() {
	n.m.Close()
	n.logs.Close()
}

// fetchOnce makes follower fetch once from leader, as a replica fetcher
// would: truncate on divergence, else append what came back.
func fetchOnce(t *testing.T, leader, follower *replNode) FollowerFetchResult {
	t.Helper()
	off, epoch := follower.p.FetchPosition()
	res, err := leader.p.FetchForFollower(FollowerFetch{ReplicaID: follower.id, FetchOffset: off,
		LastFetchedEpoch: epoch, CurrentLeaderEpoch: leader.p.Offsets().LeaderEpoch, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatalf("fetch by %d at %d (epoch %d): %v", follower.id, off, epoch, err)
	}
	switch {
	case res.Diverging != nil:
		if err := follower.p.TruncateOnDivergence(*res.Diverging); err != nil {
			t.Fatal(err)
		}
	case len(res.Records) > 0:
		if err := follower.p.AppendAsFollower(res.Records, res.Offsets.HighWatermark, res.Offsets.LogStartOffset); err != nil {
			t.Fatal(err)
		}
	default:
		follower.p.UpdateFollowerHighWatermark(res.Offsets.HighWatermark, res.Offsets.LogStartOffset)
	}
	return res
}

func state(leader, leaderEpoch, partitionEpoch int32, isr ...int32) PartitionState {
	return PartitionState{Leader: leader, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch,
		Replicas: []int32{1, 2, 3}, ISR: isr}
}

func wantHW(t *testing.T, p *Partition, hw int64) {
	t.Helper()
	if got := p.Offsets().HighWatermark; got != hw {
		t.Fatalf("high watermark %d, want %d", got, hw)
	}
}

// waitErr runs WaitCommitted in a goroutine and returns its result channel.
func waitErr(ctx context.Context, p *Partition, last int64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- p.WaitCommitted(ctx, last) }()
	return ch
}

func TestFollowerFetchAdvancesHighWatermark(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	st := state(1, 1, 1, 1, 2)
	leader := startReplNode(t, 1, t.TempDir(), st, nodeOptions{clock: clock})
	follower := startReplNode(t, 2, t.TempDir(), st, nodeOptions{clock: clock})
	if !leader.p.IsLeader() || follower.p.IsLeader() {
		t.Fatalf("roles: leader %v, follower %v", leader.p.IsLeader(), follower.p.IsLeader())
	}
	r := mustAppend(t, leader.p, plainBatch(3, clock.Now().UnixMilli()))
	if r.BaseOffset != 0 || r.LastOffset != 2 {
		t.Fatalf("append: %+v", r)
	}
	wantHW(t, leader.p, 0)
	if b, _, err := leader.p.Read(0, 1<<20, true); err != nil || len(b) != 0 {
		t.Fatalf("consumer read above the high watermark: %d bytes, %v", len(b), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := leader.p.WaitCommitted(ctx, r.LastOffset); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("WaitCommitted before the follower fetched: %v, want REQUEST_TIMED_OUT", err)
	}
	done := waitErr(context.Background(), leader.p, r.LastOffset)
	wake := leader.p.Appended()

	// The first fetch (offset 0) carries the records; the leader learns
	// nothing new, so the high watermark stays.
	res := fetchOnce(t, leader, follower)
	if got := batchOffsets(t, res.Records); !slices.Equal(got, []int64{0}) {
		t.Fatalf("fetched batches %v", got)
	}
	wantHW(t, leader.p, 0)
	if s := follower.p.Offsets(); s.LogEndOffset != 3 || s.HighWatermark != 0 {
		t.Fatalf("follower after first fetch: %+v", s)
	}
	select {
	case err := <-done:
		t.Fatalf("WaitCommitted returned %v before the offset committed", err)
	default:
	}

	// The second fetch (offset 3) commits everything.
	fetchOnce(t, leader, follower)
	wantHW(t, leader.p, 3)
	if err := <-done; err != nil {
		t.Fatalf("WaitCommitted after the follower caught up: %v", err)
	}
	select {
	case <-wake:
	default:
		t.Fatal("Appended channel not closed when the high watermark moved")
	}
	if s := follower.p.Offsets(); s.HighWatermark != 3 || s.LogEndOffset != 3 {
		t.Fatalf("follower offsets: %+v", s)
	}
	// Leader-only operations on the follower.
	if _, err := follower.p.Append(plainBatch(1, clock.Now().UnixMilli())); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("Append on a follower: %v", err)
	}
	if _, err := follower.p.FetchForFollower(FollowerFetch{ReplicaID: 1, LastFetchedEpoch: -1, CurrentLeaderEpoch: -1}); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("FetchForFollower on a follower: %v", err)
	}
	if err := follower.p.CheckEnoughReplicas(); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("CheckEnoughReplicas on a follower: %v", err)
	}
	// Epoch checks on the leader.
	for _, c := range []struct {
		epoch int32
		want  error
	}{{0, kerr.FencedLeaderEpoch}, {2, kerr.UnknownLeaderEpoch}} {
		_, err := leader.p.FetchForFollower(FollowerFetch{ReplicaID: 2, FetchOffset: 3, LastFetchedEpoch: -1, CurrentLeaderEpoch: c.epoch})
		if !errors.Is(err, c.want) {
			t.Fatalf("fetch with leader epoch %d: %v, want %v", c.epoch, err, c.want)
		}
	}
	if _, err := leader.p.FetchForFollower(FollowerFetch{ReplicaID: 2, FetchOffset: 4, LastFetchedEpoch: -1, CurrentLeaderEpoch: 1}); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("fetch past the log end: %v", err)
	}
}

func TestWaitCommittedFailsOnLeadershipChange(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	n := startReplNode(t, 1, t.TempDir(), state(1, 1, 1, 1, 2), nodeOptions{clock: clock})
	r := mustAppend(t, n.p, plainBatch(2, clock.Now().UnixMilli()))
	done := waitErr(context.Background(), n.p, r.LastOffset)
	// A stale state changes nothing.
	n.ensure(t, state(2, 0, 5, 2), 0)
	if !n.p.IsLeader() || n.p.State().LeaderEpoch != 1 {
		t.Fatalf("stale state applied: %+v", n.p.State())
	}
	n.ensure(t, state(2, 2, 2, 2, 1), 0)
	if err := <-done; !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("WaitCommitted across a leadership change: %v", err)
	}
	if n.p.IsLeader() {
		t.Fatal("still leader")
	}
	if _, err := n.p.WriteTxnMarker(1, 0, 0, true, 0); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("WriteTxnMarker on a follower: %v", err)
	}
}

func TestMinInsyncReplicas(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	n := startReplNode(t, 1, t.TempDir(), state(1, 1, 1, 1), nodeOptions{clock: clock, minIS: 2})
	if err := n.p.CheckEnoughReplicas(); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("ISR [1], min 2: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	// An append that went through anyway (acks=1) does not commit: the
	// high watermark stays while the ISR is below min.insync.replicas
	// (Kafka 4's strict min ISR), so an acks=all wait times out.
	r := mustAppend(t, n.p, plainBatch(1, clock.Now().UnixMilli()))
	wantHW(t, n.p, 0)
	wctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := n.p.WaitCommitted(wctx, r.LastOffset); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("WaitCommitted with ISR [1], min 2: %v, want REQUEST_TIMED_OUT", err)
	}
	n.ensure(t, state(1, 1, 2, 1, 2), 2)
	if err := n.p.CheckEnoughReplicas(); err != nil {
		t.Fatalf("ISR [1 2], min 2: %v", err)
	}
}

func TestISRShrinkAfterLag(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ctrl := &fakeController{}
	st := state(1, 1, 1, 1, 2, 3)
	leader := startReplNode(t, 1, t.TempDir(), st, nodeOptions{clock: clock, alter: ctrl.alter})
	f2 := startReplNode(t, 2, t.TempDir(), st, nodeOptions{clock: clock})
	mustAppend(t, leader.p, plainBatch(4, clock.Now().UnixMilli()))

	clock.Advance(5 * time.Second)
	fetchOnce(t, leader, f2) // offset 0: not caught up, no progress either
	leader.p.maybeShrinkISR()
	if reqs := ctrl.requests(); len(reqs) != 0 {
		t.Fatalf("shrink within replica.lag.time.max.ms: %+v", reqs)
	}
	clock.Advance(3 * time.Second)
	fetchOnce(t, leader, f2) // offset 4 = leader's end: caught up now
	wantHW(t, leader.p, 0)   // 3 has not fetched
	clock.Advance(8 * time.Second)
	leader.p.maybeShrinkISR() // 3: 16 s since it was last caught up; 2: 8 s
	leader.m.wg.Wait()
	reqs := ctrl.requests()
	if len(reqs) != 1 || !slices.Equal(reqs[0].NewISR, []int32{1, 2}) || reqs[0].LeaderEpoch != 1 || reqs[0].PartitionEpoch != 1 {
		t.Fatalf("AlterPartition requests: %+v", reqs)
	}
	if s := leader.p.State(); !slices.Equal(s.ISR, []int32{1, 2}) || s.PartitionEpoch != 2 {
		t.Fatalf("state after the shrink: %+v", s)
	}
	wantHW(t, leader.p, 4)
}

func TestISRExpansion(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ctrl := &fakeController{block: make(chan struct{}), seen: make(chan struct{}, 4)}
	st := state(1, 1, 1, 1)
	leader := startReplNode(t, 1, t.TempDir(), st, nodeOptions{clock: clock, alter: ctrl.alter})
	f2 := startReplNode(t, 2, t.TempDir(), st, nodeOptions{clock: clock})
	mustAppend(t, leader.p, plainBatch(3, clock.Now().UnixMilli()))
	wantHW(t, leader.p, 3) // ISR [1]

	fetchOnce(t, leader, f2) // offset 0 < high watermark: not in sync
	if reqs := ctrl.requests(); len(reqs) != 0 {
		t.Fatalf("expansion of a follower behind the high watermark: %+v", reqs)
	}
	fetchOnce(t, leader, f2) // offset 3: in sync
	<-ctrl.seen
	if reqs := ctrl.requests(); len(reqs) != 1 || !slices.Equal(reqs[0].NewISR, []int32{1, 2}) {
		t.Fatalf("AlterPartition requests: %+v", reqs)
	}
	// While the expansion is pending, 2 counts for the high watermark,
	// also after the same state is published again.
	leader.ensure(t, st, 0)
	mustAppend(t, leader.p, plainBatch(2, clock.Now().UnixMilli()))
	wantHW(t, leader.p, 3)
	close(ctrl.block)
	leader.m.wg.Wait()
	if s := leader.p.State(); !slices.Equal(s.ISR, []int32{1, 2}) || s.PartitionEpoch != 2 {
		t.Fatalf("state after the expansion: %+v", s)
	}
	wantHW(t, leader.p, 3)
	fetchOnce(t, leader, f2)
	fetchOnce(t, leader, f2)
	wantHW(t, leader.p, 5)
	if err := leader.p.CheckEnoughReplicas(); err != nil {
		t.Fatal(err)
	}
}

func TestAlterPartitionErrorDropsPendingChange(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ctrl := &fakeController{err: kerr.InvalidUpdateVersion}
	leader := startReplNode(t, 1, t.TempDir(), state(1, 1, 1, 1), nodeOptions{clock: clock, alter: ctrl.alter})
	f2 := startReplNode(t, 2, t.TempDir(), state(1, 1, 1, 1), nodeOptions{clock: clock})
	fetchOnce(t, leader, f2)
	leader.m.wg.Wait()
	if s := leader.p.State(); !slices.Equal(s.ISR, []int32{1}) || s.PartitionEpoch != 1 {
		t.Fatalf("state after a failed expansion: %+v", s)
	}
	// Nothing pending any more: the next fetch proposes again.
	fetchOnce(t, leader, f2)
	leader.m.wg.Wait()
	if n := len(ctrl.requests()); n != 2 {
		t.Fatalf("%d AlterPartition requests, want 2", n)
	}
}

// TestDivergingFollowerTruncates: node 1 led epoch 1 and wrote records
// that node 2 never got; node 2 leads epoch 2. Node 1 must drop exactly
// that tail and then take epoch 2's records.
func TestDivergingFollowerTruncates(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ts := clock.Now().UnixMilli()
	st1 := state(1, 1, 1, 1, 2)
	n1 := startReplNode(t, 1, t.TempDir(), st1, nodeOptions{clock: clock})
	n2 := startReplNode(t, 2, t.TempDir(), st1, nodeOptions{clock: clock})
	mustAppend(t, n1.p, plainBatch(3, ts))
	fetchOnce(t, n1, n2)
	fetchOnce(t, n1, n2)
	wantHW(t, n1.p, 3)
	mustAppend(t, n1.p, plainBatch(2, ts)) // offsets 3-4, never replicated

	st2 := state(2, 2, 2, 2, 1)
	n2.ensure(t, st2, 0)
	n1.ensure(t, st2, 0)
	newer := record.Build(record.BuildOptions{}, []record.Record{{Timestamp: ts, Value: []byte("epoch-2")}})
	if r := mustAppend(t, n2.p, newer); r.BaseOffset != 3 {
		t.Fatalf("epoch 2 append at %d", r.BaseOffset)
	}
	if got := n2.p.EndOffsetForEpoch(1); got != (EpochEndOffset{1, 3}) {
		t.Fatalf("new leader's end of epoch 1: %+v", got)
	}

	res := fetchOnce(t, n2, n1)
	if res.Diverging == nil || *res.Diverging != (EpochEndOffset{1, 3}) || len(res.Records) != 0 {
		t.Fatalf("fetch of the diverged follower: diverging %v, %d bytes", res.Diverging, len(res.Records))
	}
	if s := n1.p.Offsets(); s.LogEndOffset != 3 || s.HighWatermark != 3 {
		t.Fatalf("follower after truncation: %+v", s)
	}
	res = fetchOnce(t, n2, n1)
	if got := batchOffsets(t, res.Records); !slices.Equal(got, []int64{3}) {
		t.Fatalf("records after truncation: %v", got)
	}
	b, err := n1.p.Log().Read(3, 1<<20, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := record.Records(b)
	if err != nil || len(recs) != 1 || string(recs[0].Value) != "epoch-2" {
		t.Fatalf("follower's offset 3: %v, %v", recs, err)
	}
	want := []storage.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 3}}
	if got := n1.p.Log().LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("follower's epoch cache %v, want %v", got, want)
	}
	fetchOnce(t, n2, n1)
	wantHW(t, n2.p, 4)
	wantHW(t, n1.p, 4)
}

// TestIdempotenceSurvivesFailover: a batch replicated to a follower is a
// duplicate when the producer retries it on the follower turned leader.
func TestIdempotenceSurvivesFailover(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ts := clock.Now().UnixMilli()
	st1 := state(1, 1, 1, 1, 2)
	n1 := startReplNode(t, 1, t.TempDir(), st1, nodeOptions{clock: clock})
	n2 := startReplNode(t, 2, t.TempDir(), st1, nodeOptions{clock: clock})
	mustAppend(t, n1.p, plainBatch(2, ts))
	first := mustAppend(t, n1.p, idemBatch(7, 0, 0, 3, ts))
	fetchOnce(t, n1, n2)

	st2 := state(2, 2, 2, 2)
	n2.ensure(t, st2, 0)
	again := mustAppend(t, n2.p, idemBatch(7, 0, 0, 3, ts))
	if again.BaseOffset != first.BaseOffset || again.LastOffset != first.LastOffset {
		t.Fatalf("retried batch got %+v, first %+v", again, first)
	}
	if leo := n2.p.Offsets().LogEndOffset; leo != 5 {
		t.Fatalf("log end offset %d after a duplicate, want 5", leo)
	}
	if _, err := n2.p.Append(idemBatch(7, 0, 5, 1, ts)); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("sequence gap on the new leader: %v", err)
	}
	if r := mustAppend(t, n2.p, idemBatch(7, 0, 3, 1, ts)); r.BaseOffset != 5 {
		t.Fatalf("next sequence at %d", r.BaseOffset)
	}
}

// TestTransactionsReplicate: open and aborted transactions give the
// follower the leader's last stable offset and aborted list.
func TestTransactionsReplicate(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ts := clock.Now().UnixMilli()
	st := state(1, 1, 1, 1, 2)
	n1 := startReplNode(t, 1, t.TempDir(), st, nodeOptions{clock: clock})
	n2 := startReplNode(t, 2, t.TempDir(), st, nodeOptions{clock: clock})
	mustAppend(t, n1.p, txnBatch(9, 0, 0, 2, ts))  // 0-1, aborted below
	mustAppend(t, n1.p, plainBatch(1, ts))         // 2
	mustAppend(t, n1.p, txnBatch(10, 0, 0, 1, ts)) // 3, stays open
	mustMarker(t, n1.p, 9, 0, 5, false)            // 4
	mustAppend(t, n1.p, txnBatch(9, 1, 0, 1, ts))  // 5, producer bumped
	for range 3 {
		fetchOnce(t, n1, n2)
	}
	ls, fs := n1.p.Offsets(), n2.p.Offsets()
	if ls.HighWatermark != 6 || fs.HighWatermark != 6 || ls.LastStableOffset != 3 || fs.LastStableOffset != 3 {
		t.Fatalf("leader %+v, follower %+v; want high watermark 6, LSO 3", ls, fs)
	}
	_, _, la, err := n1.p.ReadIsolated(0, 1<<20, true, true)
	if err != nil {
		t.Fatal(err)
	}
	_, _, fa, err := n2.p.ReadIsolated(0, 1<<20, true, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []AbortedTxn{{ProducerID: 9, FirstOffset: 0}}
	if !slices.Equal(la, want) || !slices.Equal(fa, want) {
		t.Fatalf("aborted: leader %v, follower %v; want %v", la, fa, want)
	}
	if got, want := n2.p.Log().AbortedTxns(), n1.p.Log().AbortedTxns(); !slices.Equal(got, want) {
		t.Fatalf(".txnindex: follower %v, leader %v", got, want)
	}
	// The follower becomes leader: the coordinator ends 10's transaction
	// and 9's new epoch is known.
	n2.ensure(t, state(2, 2, 2, 2), 0)
	if _, err := n2.p.WriteTxnMarker(9, 0, 5, true, 0); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("marker with 9's old epoch: %v", err)
	}
	mustMarker(t, n2.p, 10, 0, 5, true)
	if s := n2.p.Offsets(); s.LastStableOffset != 5 {
		t.Fatalf("LSO after commit of 10 on the new leader: %+v (9's transaction at 5 is open)", s)
	}
}

// TestHighWatermarkCheckpoint: a restarted follower starts from its
// checkpointed high watermark, not from its log end offset.
func TestHighWatermarkCheckpoint(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	st := state(1, 1, 1, 1, 2)
	n1 := startReplNode(t, 1, t.TempDir(), st, nodeOptions{clock: clock})
	dir := t.TempDir()
	n2 := startReplNode(t, 2, dir, st, nodeOptions{clock: clock})
	mustAppend(t, n1.p, plainBatch(3, clock.Now().UnixMilli()))
	fetchOnce(t, n1, n2)
	fetchOnce(t, n1, n2)
	fetchOnce(t, n1, n2) // follower high watermark 3
	mustAppend(t, n1.p, plainBatch(2, clock.Now().UnixMilli()))
	fetchOnce(t, n1, n2) // follower log end 5, high watermark 3
	if s := n2.p.Offsets(); s.LogEndOffset != 5 || s.HighWatermark != 3 {
		t.Fatalf("follower before restart: %+v", s)
	}
	n2.close()
	n2 = startReplNode(t, 2, dir, st, nodeOptions{clock: clock})
	if s := n2.p.Offsets(); s.LogEndOffset != 5 || s.HighWatermark != 3 {
		t.Fatalf("follower after restart: %+v", s)
	}
	if got, want := n2.p.Log().LeaderEpochs(), []storage.EpochEntry{{Epoch: 1, StartOffset: 0}}; !slices.Equal(got, want) {
		t.Fatalf("epoch cache after restart: %v", got)
	}
	// Sole leader after restart: the high watermark catches up at once.
	n2.ensure(t, state(2, 2, 2, 2), 0)
	wantHW(t, n2.p, 5)
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	st := state(1, 1, 1, 1, 2)
	n2 := startReplNode(t, 2, t.TempDir(), st, nodeOptions{clock: clock})
	b := idemBatch(3, 0, 0, 2, clock.Now().UnixMilli())
	if err := n2.p.AppendAsFollower(b, 2, 0); err != nil {
		t.Fatal(err)
	}
	if err := n2.p.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if s := n2.p.Offsets(); s.LogStartOffset != 100 || s.LogEndOffset != 100 || s.HighWatermark != 100 {
		t.Fatalf("offsets: %+v", s)
	}
	if off, epoch := n2.p.FetchPosition(); off != 100 || epoch != -1 {
		t.Fatalf("fetch position %d, %d", off, epoch)
	}
	if ps := n2.p.ActiveProducers(); len(ps) != 0 {
		t.Fatalf("producers after full truncation: %+v", ps)
	}
}

// TestFollowerDropsEmptyEpochItLed: a replica that led epoch 2 without
// writing anything, then follows the leader of epoch 3 who never knew
// epoch 2, must forget epoch 2 after one divergence answer and go on
// fetching (a live cluster once looped on this forever).
func TestFollowerDropsEmptyEpochItLed(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ts := clock.Now().UnixMilli()
	st1 := state(1, 1, 1, 1, 2)
	n1 := startReplNode(t, 1, t.TempDir(), st1, nodeOptions{clock: clock})
	n2 := startReplNode(t, 2, t.TempDir(), st1, nodeOptions{clock: clock})
	mustAppend(t, n1.p, plainBatch(3, ts))
	fetchOnce(t, n1, n2)
	fetchOnce(t, n1, n2)

	// Node 2 leads epoch 2 but nothing is written; node 1 never hears of
	// it (it was down) and leads epoch 3.
	n2.ensure(t, state(2, 2, 2, 2, 1), 0)
	st3 := state(1, 3, 3, 1, 2)
	n1.ensure(t, st3, 0)
	n2.ensure(t, st3, 0)
	mustAppend(t, n1.p, plainBatch(1, ts)) // offset 3, epoch 3

	res := fetchOnce(t, n1, n2)
	if res.Diverging == nil {
		t.Fatalf("first fetch: want a divergence answer for epoch 2, got %d bytes", len(res.Records))
	}
	if s := n2.p.Offsets(); s.LogEndOffset != 3 {
		t.Fatalf("nothing to cut, but log end is now %d", s.LogEndOffset)
	}
	res = fetchOnce(t, n1, n2)
	if res.Diverging != nil {
		t.Fatalf("second fetch diverges again at %+v: epoch 2 was kept", *res.Diverging)
	}
	if got := batchOffsets(t, res.Records); !slices.Equal(got, []int64{3}) {
		t.Fatalf("records after the divergence: %v", got)
	}
}

// TestFencedFollowerIsNotProposed: a caught-up follower the metadata says
// is fenced is not proposed for the ISR (the controller would refuse it);
// once eligible it is.
func TestFencedFollowerIsNotProposed(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ctrl := &fakeController{seen: make(chan struct{}, 4)}
	var fenced sync.Map
	fenced.Store(int32(2), true)
	eligible := func(id int32) bool { _, f := fenced.Load(id); return !f }
	st := state(1, 1, 1, 1)
	leader := startReplNode(t, 1, t.TempDir(), st, nodeOptions{clock: clock, alter: ctrl.alter, eligible: eligible})
	f2 := startReplNode(t, 2, t.TempDir(), st, nodeOptions{clock: clock})
	mustAppend(t, leader.p, plainBatch(3, clock.Now().UnixMilli()))
	fetchOnce(t, leader, f2)
	fetchOnce(t, leader, f2)
	if reqs := ctrl.requests(); len(reqs) != 0 {
		t.Fatalf("proposed a fenced follower: %+v", reqs)
	}
	fenced.Delete(int32(2))
	fetchOnce(t, leader, f2)
	<-ctrl.seen
	if reqs := ctrl.requests(); len(reqs) != 1 || !slices.Equal(reqs[0].NewISR, []int32{1, 2}) {
		t.Fatalf("AlterPartition requests once eligible: %+v", reqs)
	}
}

func TestCheckLeaderEpoch(t *testing.T) {
	for _, c := range []struct {
		requested, current int32
		want               error
	}{
		{-1, 5, nil}, {-1, 0, nil}, {5, 5, nil},
		{4, 5, kerr.FencedLeaderEpoch}, {0, 5, kerr.FencedLeaderEpoch},
		{6, 5, kerr.UnknownLeaderEpoch}, {0, -1, kerr.UnknownLeaderEpoch},
	} {
		if err := CheckLeaderEpoch(c.requested, c.current); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("CheckLeaderEpoch(%d, %d) = %v, want %v", c.requested, c.current, err, c.want)
		}
	}
}
