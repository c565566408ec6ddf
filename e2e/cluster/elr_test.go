package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// elrState is a partition as DescribeTopicPartitions answers it.
type elrState struct {
	Leader   int32
	ISR, ELR []int32
}

// describeELR asks broker id.
func describeELR(ctx context.Context, cl *kgo.Client, id int32, topic string) (elrState, error) {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	kresp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return elrState{}, err
	}
	resp := kresp.(*kmsg.DescribeTopicPartitionsResponse)
	if err != nil {
		return elrState{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return elrState{}, fmt.Errorf("unexpected answer %+v", resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	return elrState{p.LeaderID, p.ISR, p.EligibleLeaderReplicas}, nil
}

// TestEligibleLeaderReplicas (KIP-966) on four brokers and one
// controller, min.insync.replicas=2, replication factor 3 (the broker
// outside the partition answers DescribeTopicPartitions): with both
// followers stopped in turn the ISR falls below min ISR and the second
// one is kept as an eligible leader replica; when the leader dies too the
// partition has no leader, and once the ELR member comes back it leads,
// with every record acknowledged with acks=all (read once the first
// follower has caught up from it and the ISR is at min ISR again).
func TestEligibleLeaderReplicas(t *testing.T) {
	const topic = "elr"
	c := startClusterWith(t, devcluster.Config{Controllers: 1, Brokers: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm := kadm.NewClient(client(t, c))
	minISR := "2"
	if resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	p := waitFullISR(t, adm, topic, 60*time.Second)[0]
	leader := p.Leader
	var followers []int32
	for _, r := range p.Replicas {
		if r != leader {
			followers = append(followers, r)
		}
	}
	all := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
		kgo.RecordRetries(3), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	var acked []string
	produce := func(v string) {
		t.Helper()
		if err := all.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("acks=all %q: %v", v, err)
		}
		acked = append(acked, v)
	}
	produce("full isr")

	// Node 1 is the controller, 2-5 the brokers.
	observer := int32(-1)
	for id := int32(2); id <= 5; id++ {
		if !slices.Contains(p.Replicas, id) {
			observer = id
		}
	}
	probe := client(t, c)
	waitState := func(what string, ok func(elrState) bool) {
		t.Helper()
		waitFor(t, 90*time.Second, what, func() (bool, string) {
			rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			s, err := describeELR(rctx, probe, observer, topic)
			if err != nil {
				return false, err.Error()
			}
			return ok(s), fmt.Sprintf("%+v", s)
		})
	}
	// The first follower stops answering: the ISR shrinks to min ISR,
	// and acks=all still commits.
	first, second := followers[0], followers[1]
	c.Node(first).Pause()
	t.Cleanup(c.Node(first).Resume)
	waitState("first follower out of the ISR", func(s elrState) bool { return len(s.ISR) == 2 && !slices.Contains(s.ISR, first) })
	produce("isr at min")
	// The second one stops: below min ISR, it is an eligible leader.
	c.Node(second).Pause()
	t.Cleanup(c.Node(second).Resume)
	waitState("second follower in the ELR", func(s elrState) bool {
		return s.Leader == leader && slices.Equal(s.ISR, []int32{leader}) && slices.Contains(s.ELR, second) && !slices.Contains(s.ELR, first)
	})
	// The leader dies: no leader, no ISR; the ELR holds it and the second
	// follower.
	c.Node(leader).Kill()
	waitState("leaderless with the ELR", func(s elrState) bool {
		return s.Leader == -1 && len(s.ISR) == 0 && slices.Contains(s.ELR, second)
	})
	// The ELR member comes back and leads.
	c.Node(second).Resume()
	waitState("the ELR member elected", func(s elrState) bool {
		return s.Leader == second && slices.Equal(s.ISR, []int32{second})
	})
	// Its high watermark may lag what the old leader committed, and it
	// stays while the ISR is below min ISR (as in Kafka 4): the first
	// follower comes back to bring the ISR to min ISR before reading.
	c.Node(first).Resume()
	waitState("the ISR back at min ISR", func(s elrState) bool {
		return s.Leader == second && len(s.ISR) == 2 && len(s.ELR) == 0
	})

	consumer := client(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(acked) && ctx.Err() == nil {
		fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
		fs := consumer.PollFetches(fctx)
		fcancel()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, acked) {
		t.Fatalf("read %q from the ELR leader, want every acknowledged record %q", got, acked)
	}
}
