package server

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/share"
)

// Three combined nodes; share partitions of one group, whose keys live on
// partitions of __share_group_state led by different nodes, are
// initialized, written and read through the nodes' Persisters (local
// shards and remote RPCs in one request), and their state survives the
// shutdown of a coordinator. The nodes talk SCRAM over SASL_PLAINTEXT to
// each other under an authorizer, so a remote RPC is answered only for the
// nodes' own user (a super user, hence CLUSTER_ACTION).
func TestSharePersisterAcrossNodes(t *testing.T) {
	c := startSASLCluster(t, "SASL_PLAINTEXT", func(int) []string {
		return append(saslNodeProps("SCRAM-SHA-512", "broker-secret"),
			"authorizer.class.name="+StandardAuthorizer, "super.users=User:broker;User:alice;User:ANONYMOUS",
			"share.coordinator.state.topic.replication.factor=3", "share.coordinator.state.topic.min.isr=2",
			"share.coordinator.state.topic.num.partitions=6", "share.coordinator.snapshot.update.records.per.snapshot=2")
	})
	nodes := c.nodes
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.client()
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 3, nil, "queue")
	if err != nil || created.Err != nil {
		t.Fatalf("create topic: %v %v", err, created.Err)
	}
	parts := []int32{0, 1, 2, 3, 4, 5}

	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = "workers"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = created.ID
	for _, p := range parts {
		ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		ip.Partition, ip.StartOffset = p, 0
		it.Partitions = append(it.Partitions, ip)
	}
	init.Topics = append(init.Topics, it)
	iresp, err := nodes[0].SharePersister().InitializeState(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range iresp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("initialize partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	// The keys are spread over the coordinators.
	coords := map[int32]bool{}
	img := nodes[0].loader.Image()
	st, _ := img.Topic(share.StateTopic)
	for _, p := range parts {
		k := share.Key{GroupID: "workers", TopicID: created.ID, Partition: p}
		coords[st.Partitions[nodes[0].shares.PartitionFor(k)].Leader] = true
	}
	if len(coords) < 2 {
		t.Fatalf("every key has one coordinator %v: the test covers no remote key", coords)
	}

	// Each partition acknowledges its first p+1 records, in three writes.
	write := func(n *Server, leaderEpoch int32, round int64) {
		t.Helper()
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = "workers"
		wt := kmsg.NewWriteShareGroupStateRequestTopic()
		wt.TopicID = created.ID
		for _, p := range parts {
			wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
			wp.Partition, wp.LeaderEpoch, wp.StartOffset = p, leaderEpoch, -1
			b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = round*10, round*10+int64(p), 2, 1
			wp.StateBatches = append(wp.StateBatches, b)
			wt.Partitions = append(wt.Partitions, wp)
		}
		req.Topics = append(req.Topics, wt)
		resp, err := n.SharePersister().WriteState(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("write round %d partition %d: %v", round, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	read := func(n *Server, leaderEpoch int32) map[int32][]int64 {
		t.Helper()
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = "workers"
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = created.ID
		for _, p := range parts {
			rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
			rp.Partition, rp.LeaderEpoch = p, leaderEpoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := n.SharePersister().ReadState(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32][]int64{}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("read partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
			for _, b := range p.StateBatches {
				out[p.Partition] = append(out[p.Partition], b.FirstOffset, b.LastOffset, int64(b.DeliveryState))
			}
		}
		return out
	}
	for round := range int64(3) {
		write(nodes[0], 0, round)
	}
	want := map[int32][]int64{}
	for _, p := range parts {
		for round := range int64(3) {
			want[p] = append(want[p], round*10, round*10+int64(p), 2)
		}
	}
	if got := read(nodes[1], 1); !reflect.DeepEqual(got, want) {
		t.Fatalf("read through node 2: %v, want %v", got, want)
	}

	// Shut down a coordinator that is not node 3: the keys it held are
	// served by the new leaders of its partitions, from the replicated
	// log.
	var victim int32
	for id := range coords {
		if id != 3 {
			victim = id
		}
	}
	t.Logf("stopping node %d", victim)
	nodes[victim-1].Close()
	nodes[victim-1] = nil
	if got := read(nodes[2], 2); !reflect.DeepEqual(got, want) {
		t.Fatalf("read after node %d stopped: %v, want %v", victim, got, want)
	}
	write(nodes[2], 2, 3)
	for _, p := range parts {
		want[p] = append(want[p], 30, 30+int64(p), 2)
	}
	if got := read(nodes[2], 2); !reflect.DeepEqual(got, want) {
		t.Fatalf("read after a write past the failover: %v, want %v", got, want)
	}
}
