package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

// TestParkedFollowerFetchAnswersOnNewLeadership: a follower's fetch parked
// on a leader answers when the leader starts leading another partition of
// that follower, not after its max wait, so the follower's next fetch can
// name the new partition.
func TestParkedFollowerFetchAnswersOnNewLeadership(t *testing.T) {
	c := newCluster(t)
	leader := c.nodes[1]
	// Node 2's own fetcher stops reaching node 1, so the only parked
	// fetch of replica 2 is the one sent below.
	c.router.setCut(addr(1), true)
	eventually(t, "node 2's fetches on node 1 to end", func() bool { return leader.parkedFollowers.count(2) == 0 })

	const maxWait = time.Minute
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 12
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait/time.Millisecond), 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", replTopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = c.partition(1).Offsets().LogEndOffset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	answered := make(chan *kmsg.FetchResponse, 1)
	go func() { answered <- c.request(1, req).(*kmsg.FetchResponse) }()
	eventually(t, "the fetch to park", func() bool { return leader.parkedFollowers.count(2) == 1 })

	// A partition of another topic led by node 1 adds nothing to t-0,
	// but node 2 must fetch it.
	uID := metadata.Uuid{7, 7}
	c.apply(&metadata.TopicRecord{Name: "u", TopicID: uID},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: uID, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	select {
	case resp := <-answered:
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("parked fetch answered %+v", resp)
		}
	case <-time.After(maxWait / 2):
		t.Fatal("the parked fetch was not answered when its leader started leading a new partition of the follower")
	}
}
