package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A fenced node keeps its partition states but leads nothing until the
// fence is lifted; acks=all produces waiting for a commit are answered at
// once.
func TestFencedNodeLeadsNothing(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	st := state(1, 1, 1, 1, 2)
	leader := startReplNode(t, 1, t.TempDir(), st, nodeOptions{clock: clock})
	follower := startReplNode(t, 2, t.TempDir(), st, nodeOptions{clock: clock})
	r := mustAppend(t, leader.p, plainBatch(2, clock.Now().UnixMilli()))
	done := waitErr(context.Background(), leader.p, r.LastOffset)

	leader.m.SetFenced(true)
	if !leader.m.Fenced() {
		t.Fatal("Fenced() false after SetFenced(true)")
	}
	select {
	case err := <-done:
		if !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("waiting acks=all produce after the fence: %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiting acks=all produce not answered after the fence")
	}
	if leader.p.IsLeader() {
		t.Fatal("fenced node reports itself leader")
	}
	if _, err := leader.p.Append(plainBatch(1, clock.Now().UnixMilli())); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("Append on a fenced node: %v", err)
	}
	if err := leader.p.CheckEnoughReplicas(); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("CheckEnoughReplicas on a fenced node: %v", err)
	}
	if _, err := leader.p.FetchForFollower(FollowerFetch{ReplicaID: 2, LastFetchedEpoch: -1, CurrentLeaderEpoch: 1, MaxBytes: 1 << 20}); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("FetchForFollower on a fenced node: %v", err)
	}
	if _, err := leader.p.DeleteRecords(-1); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("DeleteRecords on a fenced node: %v", err)
	}
	if got := leader.p.State(); got.Leader != 1 || got.LeaderEpoch != 1 {
		t.Fatalf("fence changed the partition state: %+v", got)
	}

	// Lifted, it leads again where the metadata still says so.
	leader.m.SetFenced(false)
	if !leader.p.IsLeader() {
		t.Fatal("not leader after the fence was lifted")
	}
	fetchOnce(t, leader, follower)
	fetchOnce(t, leader, follower)
	wantHW(t, leader.p, r.LastOffset+1)
	mustAppend(t, leader.p, plainBatch(1, clock.Now().UnixMilli()))
}
