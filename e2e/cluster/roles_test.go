package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// TestRolesSeparateControllersAndBrokers runs 3 controller-only nodes and
// 2 broker-only nodes. Brokers learn the metadata by fetching it from the
// quorum leader; the test kills the active controller (topic creation
// through a broker must work again within 10 s), then a broker that leads
// a partition (the other takes over, produce goes on), restarts it and
// requires it to catch up and rejoin the ISR with every record.
func TestRolesSeparateControllersAndBrokers(t *testing.T) {
	dir := t.TempDir()
	props := append(append([]string{}, fastFailover...),
		"offsets.topic.replication.factor=2",
		"transaction.state.log.replication.factor=2",
		"transaction.state.log.min.isr=1")
	c, err := devcluster.Start(devcluster.Config{Controllers: 3, Brokers: 2, Dir: dir, Binary: binary, Properties: props})
	if err != nil {
		dumpLogs(t, dir, 5)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			dumpLogs(t, dir, 5)
		}
	})
	if got := c.Bootstrap(); len(got) != 2 {
		t.Fatalf("bootstrap %v, want the two brokers", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := client(t, c, kgo.RetryTimeout(15*time.Second))
	adm := kadm.NewClient(cl)

	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 2 || md.Brokers[0].NodeID < 4 || md.Brokers[1].NodeID < 4 {
		t.Fatalf("brokers %+v: want only nodes 4 and 5 (controllers are not brokers)", md.Brokers)
	}
	const topic = "roles"
	if r, err := adm.CreateTopic(ctx, 1, 2, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v / %v", err, r.Err)
	}
	waitFullISR(t, adm, topic, 30*time.Second)
	prod := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	next := rolesProduce(t, ctx, prod, 0, 20)
	rolesConsume(t, c.Bootstrap(), topic, next)

	// Kill the active controller: a new one is elected and a broker can
	// create a topic through it within 10 s.
	leader := quorumLeader(t, ctx, cl)
	if leader < 1 || leader > 3 {
		t.Fatalf("quorum leader %d, want a controller-only node", leader)
	}
	t.Logf("killing the active controller, node %d", leader)
	c.Node(leader).Kill()
	killed := time.Now()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		r, err := adm.CreateTopic(cctx, 1, 2, nil, "after-failover")
		ccancel()
		if err == nil && (r.Err == nil || r.Err == kerr.TopicAlreadyExists) {
			break
		}
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("no topic creation within 10 s of killing the controller: %v / %v", err, r.Err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("topic created %v after the controller was killed", time.Since(killed).Round(time.Millisecond))
	if nl := quorumLeader(t, ctx, cl); nl == leader || nl < 1 || nl > 3 {
		t.Fatalf("new quorum leader %d", nl)
	}
	if err := c.Node(leader).Start(); err != nil {
		t.Fatal(err)
	}

	// Kill the broker leading the partition: the other takes over.
	parts, _, err := describe(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	victim := parts[0].Leader
	t.Logf("killing broker %d, leader of %s-0", victim, topic)
	c.Node(victim).Kill()
	waitFor(t, 20*time.Second, "the other broker leads", func() (bool, string) {
		dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
		defer dcancel()
		p, _, err := describe(dctx, adm, topic)
		if err != nil {
			return false, err.Error()
		}
		return p[0].Leader >= 0 && p[0].Leader != victim, fmt.Sprintf("%+v", p[0])
	})
	next = rolesProduce(t, ctx, prod, next, 20)

	// Restart it: metadata by fetch, data by replication, back in the ISR.
	if err := c.Node(victim).Start(); err != nil {
		t.Fatal(err)
	}
	waitFullISR(t, adm, topic, 60*time.Second)
	next = rolesProduce(t, ctx, prod, next, 10)
	rolesConsume(t, []string{c.Node(victim).ClientAddr}, topic, next)
}

// quorumLeader asks a broker, which forwards DescribeQuorum, who leads.
func quorumLeader(t *testing.T, ctx context.Context, cl *kgo.Client) int32 {
	t.Helper()
	var last error
	for range 50 {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode == 0 && p.LeaderID > 0 {
				return p.LeaderID
			}
			err = kerr.ErrorForCode(p.ErrorCode)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("DescribeQuorum: %v", last)
	return -1
}

// rolesProduce writes n records v<from>..v<from+n-1> to partition 0 with
// acks=all and returns from+n.
func rolesProduce(t *testing.T, ctx context.Context, cl *kgo.Client, from, n int) int {
	t.Helper()
	for i := from; i < from+n; i++ {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := cl.ProduceSync(pctx, &kgo.Record{Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce v%d: %v", i, err)
		}
	}
	return from + n
}

// rolesConsume reads partition 0 from the start and requires exactly
// v0..v<want-1>, in order.
func rolesConsume(t *testing.T, seeds []string, topic string, want int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", got, want)
		}
		for _, e := range fs.Errors() {
			t.Logf("fetch error: %v", e.Err)
		}
		for _, r := range fs.Records() {
			if v := fmt.Sprintf("v%d", got); string(r.Value) != v {
				t.Fatalf("record %d is %q, want %q", got, r.Value, v)
			}
			got++
		}
	}
	if got != want {
		t.Fatalf("consumed %d records, want %d", got, want)
	}
}
