package replica

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
)

// appendAcksAll appends b to p as an acks=all produce does, joining w at
// index i.
func appendAcksAll(t *testing.T, p *Partition, b []byte, w *CommitWait, i int) AppendResult {
	t.Helper()
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.AppendProduce(b, h, AppendOptions{Commit: w, CommitIndex: i})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// replicate makes follower fetch p's records from leader, as fetchOnce
// does for partition 0.
func replicate(t *testing.T, leader, follower *Partition, followerID int32) {
	t.Helper()
	off, epoch := follower.FetchPosition()
	res, err := leader.FetchForFollower(FollowerFetch{ReplicaID: followerID, FetchOffset: off,
		LastFetchedEpoch: epoch, CurrentLeaderEpoch: leader.Offsets().LeaderEpoch, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) > 0 {
		if err := follower.AppendAsFollower(res.Records, res.Offsets.HighWatermark, res.Offsets.LogStartOffset); err != nil {
			t.Fatal(err)
		}
	}
}

func commitsQueued(p *Partition) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.commits)
}

// TestCommitWaitAcrossPartitions parks one acks=all request on two
// partitions: it is answered once one has committed and the other lost
// its leadership, each with its own answer, and no waiter is left behind.
func TestCommitWaitAcrossPartitions(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	st := state(1, 1, 1, 1, 2)
	leader := startReplNode(t, 1, t.TempDir(), st, nodeOptions{clock: clock})
	follower := startReplNode(t, 2, t.TempDir(), st, nodeOptions{clock: clock})
	second := func(n *replNode, st PartitionState) *Partition {
		p, err := n.m.Ensure("orders", [16]byte{1}, 1, st, PartitionConfig{MaxMessageBytes: 1 << 20,
			TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: math.MaxInt64})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	leader1, follower1 := second(leader, st), second(follower, st)

	w := NewCommitWait(3) // index 1 is a partition that failed before its append
	r0 := appendAcksAll(t, leader.p, plainBatch(3, clock.Now().UnixMilli()), w, 0)
	appendAcksAll(t, leader1, plainBatch(2, clock.Now().UnixMilli()), w, 2)
	done := make(chan []error, 1)
	go func() { done <- w.Wait(context.Background()) }()

	replicate(t, leader.p, follower.p, 2)
	replicate(t, leader.p, follower.p, 2) // the second fetch moves the high watermark
	wantHW(t, leader.p, r0.LastOffset+1)
	select {
	case errs := <-done:
		t.Fatalf("answered %v while partition 1 has not committed", errs)
	default:
	}
	replicate(t, leader1, follower1, 2) // carries the records, commits nothing yet
	second(leader, state(2, 2, 2, 2, 1))
	errs := <-done
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], kerr.NotLeaderForPartition) {
		t.Fatalf("answers %v, want [nil nil NOT_LEADER_OR_FOLLOWER]", errs)
	}
	if n, n1 := commitsQueued(leader.p), commitsQueued(leader1); n != 0 || n1 != 0 {
		t.Fatalf("waiters left: %d and %d", n, n1)
	}
}

// TestCommitWaitTimeout: a request that times out answers
// REQUEST_TIMED_OUT and leaves nothing queued; a later commit of its
// batch answers nothing.
func TestCommitWaitTimeout(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	st := state(1, 1, 1, 1, 2)
	leader := startReplNode(t, 1, t.TempDir(), st, nodeOptions{clock: clock})
	follower := startReplNode(t, 2, t.TempDir(), st, nodeOptions{clock: clock})
	w := NewCommitWait(1)
	r := appendAcksAll(t, leader.p, plainBatch(1, clock.Now().UnixMilli()), w, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if errs := w.Wait(ctx); !errors.Is(errs[0], kerr.RequestTimedOut) {
		t.Fatalf("answer %v, want REQUEST_TIMED_OUT", errs[0])
	}
	if n := commitsQueued(leader.p); n != 0 {
		t.Fatalf("%d waiters left after the timeout", n)
	}
	replicate(t, leader.p, follower.p, 2)
	replicate(t, leader.p, follower.p, 2)
	wantHW(t, leader.p, r.LastOffset+1)

	// Already committed when it joins: answered at once.
	w = NewCommitWait(1)
	appendAcksAll(t, leader.p, plainBatch(1, clock.Now().UnixMilli()), w, 0)
	replicate(t, leader.p, follower.p, 2)
	replicate(t, leader.p, follower.p, 2)
	if errs := w.Wait(context.Background()); errs[0] != nil {
		t.Fatalf("committed append answered %v", errs[0])
	}
}

// TestAppendProduceChecksISR: with acks=all an ISR below
// min.insync.replicas refuses the batch before it is appended.
func TestAppendProduceChecksISR(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	n := startReplNode(t, 1, t.TempDir(), state(1, 1, 1, 1), nodeOptions{clock: clock, minIS: 2})
	b := plainBatch(1, clock.Now().UnixMilli())
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	w := NewCommitWait(1)
	if _, err := n.p.AppendProduce(b, h, AppendOptions{Commit: w}); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all append with ISR [1], min 2: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if leo := n.p.Offsets().LogEndOffset; leo != 0 {
		t.Fatalf("log end offset %d after a refused append", leo)
	}
	if errs := w.Wait(context.Background()); errs[0] != nil {
		t.Fatalf("a partition never added answered %v", errs[0])
	}
}
