package server

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/share"
)

// Three combined nodes; share partitions of one group, whose keys live on
// partitions of __share_group_state led by different nodes, are
// initialized, written and read through the nodes' Persisters (local
// shards and remote RPCs in one request), and their state survives the
// shutdown of a coordinator.
func TestSharePersisterAcrossNodes(t *testing.T) {
	addrs := freeAddrs(t, 3)
	voters := fmt.Sprintf("controller.quorum.voters=1@%s,2@%s,3@%s", addrs[0], addrs[1], addrs[2])
	nodes := make([]*Server, 3)
	logs := make([]*syncBuffer, 3)
	t.Cleanup(func() {
		if t.Failed() {
			for i, l := range logs {
				t.Logf("log of node %d:\n%s", i+1, l)
			}
		}
	})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range nodes {
		cfg := loadCluster(t, "node.id="+strconv.Itoa(i+1), voters,
			"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://"+addrs[i],
			"share.coordinator.state.topic.replication.factor=3", "share.coordinator.state.topic.min.isr=2",
			"share.coordinator.state.topic.num.partitions=6", "share.coordinator.snapshot.update.records.per.snapshot=2",
			"replica.lag.time.max.ms=3000", "replica.fetch.backoff.ms=50", "replica.fetch.wait.max.ms=100")
		logs[i] = &syncBuffer{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i], errs[i] = Start(cfg, slog.New(slog.NewTextHandler(logs[i], nil)), nil)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, n := range nodes {
			if n != nil {
				n.Close()
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].Addr("PLAINTEXT"), nodes[1].Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
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
