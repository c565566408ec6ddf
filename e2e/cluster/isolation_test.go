package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/devcluster"
	"github.com/samsa-io/samsa/internal/record"
)

// TestIsolatedBrokerFencesItself cuts the leader of a partition off the
// controller quorum — raft, registration and heartbeats all go through
// proxies the test cuts — while clients (and replica fetchers) still reach
// its client listener. Within broker.session.timeout.ms (plus a margin) it
// must stop acting as leader: its Metadata and DescribeCluster name neither
// itself as the partition's leader nor as the controller, and a Produce to
// it answers NOT_LEADER_OR_FOLLOWER, a retriable error, so clients refresh
// and go to the leader the rest of the cluster elected. After the heal it
// rejoins and serves again, and no record acknowledged with acks=all, before,
// during or after the isolation, is lost.
func TestIsolatedBrokerFencesItself(t *testing.T) {
	const (
		topic          = "isolated"
		sessionTimeout = 3 * time.Second // fastFailover's broker.session.timeout.ms
	)
	qn := newQuorumNet(t)
	c := startClusterWith(t, devcluster.Config{Nodes: 3, VoterAddr: qn.voterAddr})
	adm := kadm.NewClient(client(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	minISR := "2"
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	isolated := waitFullISR(t, adm, topic, 30*time.Second)[0].Leader
	var others []string
	for _, n := range c.Nodes {
		if n.ID != isolated {
			others = append(others, n.ClientAddr)
		}
	}
	toIsolated := seededClient(t, c.Node(isolated).ClientAddr)
	before := partitionMetadata(t, ctx, toIsolated, topic)
	_, controller, _ := describe(ctx, adm, topic)
	t.Logf("node %d leads %s-0 at leader epoch %d; the active controller is %d", isolated, topic, before.LeaderEpoch, controller)

	// A producer writes with acks=all through every node the whole time.
	prod := client(t, c,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5*time.Second),
		kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(200*time.Millisecond),
	)
	var (
		mu     sync.Mutex
		acked  []ack
		failed atomic.Int64
		stop   atomic.Bool
		wg     sync.WaitGroup
	)
	produce := func(seq int) {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(seq))}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				return
			}
			mu.Lock()
			acked = append(acked, ack{r.Offset, seq})
			mu.Unlock()
		})
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for seq := 0; !stop.Load(); seq++ {
			produce(seq)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(500 * time.Millisecond)

	t.Logf("cutting node %d off the quorum", isolated)
	qn.isolate(isolated, true)
	cutAt := time.Now()

	// The isolated node stops naming itself leader and controller.
	var md kmsg.MetadataResponseTopicPartition
	waitFor(t, sessionTimeout+3*time.Second, fmt.Sprintf("node %d stops advertising itself", isolated), func() (bool, string) {
		resp, err := metadataFrom(ctx, toIsolated, topic)
		if err != nil {
			return false, err.Error()
		}
		md = resp.Topics[0].Partitions[0]
		return md.Leader != isolated && resp.ControllerID != isolated,
			fmt.Sprintf("leader %d at epoch %d, controller %d", md.Leader, md.LeaderEpoch, resp.ControllerID)
	})
	if since := time.Since(cutAt); since < sessionTimeout/2 {
		t.Errorf("node %d gave up leadership %v after the cut, well before the session timeout", isolated, since)
	}
	resp2, err := metadataFrom(ctx, toIsolated, topic)
	if err != nil {
		t.Fatal(err)
	}
	p := resp2.Topics[0].Partitions[0]
	if p.Leader != -1 || p.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Errorf("isolated node's metadata: leader %d, error %v; want leader -1, LEADER_NOT_AVAILABLE", p.Leader, kerr.ErrorForCode(p.ErrorCode))
	}
	if !slices.Contains(p.OfflineReplicas, isolated) {
		t.Errorf("isolated node's metadata: offline replicas %v do not include itself", p.OfflineReplicas)
	}
	if resp2.ControllerID != -1 {
		t.Errorf("isolated node's metadata: controller %d; want -1 (no live controller known)", resp2.ControllerID)
	}
	for _, b := range resp2.Brokers {
		if b.NodeID == isolated {
			t.Errorf("isolated node's metadata lists itself as a live broker")
		}
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dcr, err := toIsolated.SeedBrokers()[0].Request(ctx, dc)
	if err != nil {
		t.Fatal(err)
	}
	if id := dcr.(*kmsg.DescribeClusterResponse).ControllerID; id != -1 {
		t.Errorf("isolated node's DescribeCluster: controller %d; want -1", id)
	}

	// A Produce sent to it anyway is refused with a retriable error.
	if code := rawProduce(t, ctx, toIsolated, topic); code != kerr.NotLeaderForPartition.Code {
		t.Errorf("produce to the isolated node: %v; want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}

	// The rest of the cluster elected another leader and serves.
	majority := seededClient(t, others...)
	waitFor(t, 30*time.Second, "a new leader in the majority", func() (bool, string) {
		resp, err := metadataFrom(ctx, majority, topic)
		if err != nil {
			return false, err.Error()
		}
		p := resp.Topics[0].Partitions[0]
		return p.Leader >= 0 && p.Leader != isolated && p.LeaderEpoch > before.LeaderEpoch && !slices.Contains(p.ISR, isolated),
			fmt.Sprintf("leader %d at epoch %d, isr %v", p.Leader, p.LeaderEpoch, p.ISR)
	})
	if err := majorityProduce(ctx, majority, topic); err != nil {
		t.Fatalf("produce to the majority: %v", err)
	}
	time.Sleep(time.Second)

	t.Logf("healing node %d", isolated)
	qn.isolate(isolated, false)
	waitFullISR(t, kadm.NewClient(majority), topic, 60*time.Second)
	waitFor(t, 30*time.Second, fmt.Sprintf("node %d serving again", isolated), func() (bool, string) {
		resp, err := metadataFrom(ctx, toIsolated, topic)
		if err != nil {
			return false, err.Error()
		}
		p := resp.Topics[0].Partitions[0]
		listed := slices.ContainsFunc(resp.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == isolated })
		return listed && p.Leader >= 0 && resp.ControllerID >= 0 && len(p.ISR) == 3,
			fmt.Sprintf("listed %v, leader %d at epoch %d, isr %v, controller %d", listed, p.Leader, p.LeaderEpoch, p.ISR, resp.ControllerID)
	})
	// A client that knows only the healed node produces through it.
	if err := majorityProduce(ctx, seededClient(t, c.Node(isolated).ClientAddr), topic); err != nil {
		t.Fatalf("produce through the healed node: %v", err)
	}

	stop.Store(true)
	wg.Wait()
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	checkAcked(t, ctx, c, topic, acked)
	t.Logf("%d records acknowledged, %d produce attempts failed", len(acked), failed.Load())
}

// seededClient is a client that starts from the given nodes only.
func seededClient(t *testing.T, addrs ...string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// metadataFrom asks cl's first seed broker for topic's metadata.
func metadataFrom(ctx context.Context, cl *kgo.Client, topic string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	kresp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("metadata for %s: %d topics", topic, len(resp.Topics))
	}
	return resp, nil
}

// partitionMetadata is partition 0 of topic as cl's seed broker sees it,
// once that broker knows the partition: a node learns of a new topic from
// the metadata log a moment after the others may already report it.
func partitionMetadata(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	var p kmsg.MetadataResponseTopicPartition
	waitFor(t, 30*time.Second, "the node's own metadata lists "+topic, func() (bool, string) {
		resp, err := metadataFrom(ctx, cl, topic)
		if err != nil {
			return false, err.Error()
		}
		p = resp.Topics[0].Partitions[0]
		return p.ErrorCode == 0, fmt.Sprintf("%+v", p)
	})
	return p
}

// rawProduce sends one record with acks=all to cl's first seed broker and
// returns the partition's error code.
func rawProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	// Produce v13 names the topic by id (KIP-516), which franz-go does
	// not fill in on a raw request.
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("topic id of %s: %v %v", topic, err, td[topic].Err)
	}
	rt.TopicID = td[topic].ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = record.Build(record.BuildOptions{PartitionLeaderEpoch: -1},
		[]record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("to-the-isolated-node")}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	kresp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return kresp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// majorityProduce produces one record through cl with acks=all and waits
// for the acknowledgement.
func majorityProduce(ctx context.Context, cl *kgo.Client, topic string) error {
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("probe")}).FirstErr()
}

// checkAcked reads partition 0 of topic to its end and checks that every
// acknowledged record is there, at the offset it was acknowledged with.
func checkAcked(t *testing.T, ctx context.Context, c *devcluster.Cluster, topic string, acked []ack) {
	t.Helper()
	adm := kadm.NewClient(client(t, c))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	reader := client(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	log := map[int64]string{}
	for int64(len(log)) < end.Offset {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading back: %d of %d records", len(log), end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) { log[r.Offset] = string(r.Value) })
	}
	for _, a := range acked {
		if got, ok := log[a.offset]; !ok || got != strconv.Itoa(a.seq) {
			t.Errorf("acknowledged seq %d at offset %d is lost (found %q, %v)", a.seq, a.offset, got, ok)
		}
	}
	if len(acked) == 0 {
		t.Error("nothing was acknowledged")
	}
}
