package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// TestMinInsyncReplicas: with min.insync.replicas=3 on a topic of three
// replicas, losing one broker leaves an ISR of two, and acks=all produce is
// refused with NOT_ENOUGH_REPLICAS while acks=1 still succeeds. When the
// broker returns and catches up, acks=all works again.
func TestMinInsyncReplicas(t *testing.T) {
	const topic = "strict"
	c := startCluster(t, 3)
	adm := kadm.NewClient(client(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	minISR := "3"
	if resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	parts := waitFullISR(t, adm, topic, 30*time.Second)
	all := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
		kgo.RecordRetries(2), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err := all.ProduceSync(ctx, &kgo.Record{Value: []byte("full isr")}).FirstErr(); err != nil {
		t.Fatalf("acks=all with the full ISR: %v", err)
	}

	victim := killFollower(ctx, t, c, adm, topic, parts[0])
	err := all.ProduceSync(ctx, &kgo.Record{Value: []byte("too few")}).FirstErr()
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR 2 < min.insync.replicas 3: got %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one := client(t, c, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic(topic))
	if err := one.ProduceSync(ctx, &kgo.Record{Value: []byte("acks=1")}).FirstErr(); err != nil {
		t.Fatalf("acks=1 with a shrunk ISR: %v", err)
	}

	if err := c.Node(victim).Start(); err != nil {
		t.Fatal(err)
	}
	waitFullISR(t, adm, topic, 60*time.Second)
	if err := all.ProduceSync(ctx, &kgo.Record{Value: []byte("back")}).FirstErr(); err != nil {
		t.Fatalf("acks=all after the broker returned: %v", err)
	}
}

// TestTransactionStateMinISR: __transaction_state is created with Kafka's
// configs for it, min.insync.replicas from transaction.state.log.min.isr
// among them. With min.isr=3 and one broker down, the coordinator refuses
// to write transaction state (a new transactional producer cannot
// initialise: COORDINATOR_NOT_AVAILABLE, retried until the client gives
// up); once the broker is back in sync it can.
func TestTransactionStateMinISR(t *testing.T) {
	c := startCluster(t, 3, "transaction.state.log.min.isr=3", "transaction.state.log.num.partitions=1")
	adm := kadm.NewClient(client(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, 1, 3, nil, "txn-data"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	commitOne := func(id string, retry time.Duration) error {
		cl := client(t, c, kgo.TransactionalID(id), kgo.DefaultProduceTopic("txn-data"), kgo.RetryTimeout(retry),
			kgo.RecordDeliveryTimeout(retry), kgo.TransactionTimeout(10*time.Second))
		defer cl.Close()
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(id)}).FirstErr(); err != nil {
			return err
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	if err := commitOne("first", time.Minute); err != nil {
		t.Fatalf("transaction with every broker up: %v", err)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"min.insync.replicas": "3", "unclean.leader.election.enable": "false", "cleanup.policy": "compact", "compression.type": "uncompressed"}
	for _, r := range rc {
		for _, cfg := range r.Configs {
			if w, ok := want[cfg.Key]; ok {
				if cfg.Value == nil || *cfg.Value != w {
					t.Errorf("__transaction_state %s = %v, want %s", cfg.Key, cfg.MaybeValue(), w)
				}
				delete(want, cfg.Key)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("__transaction_state has no %v", want)
	}

	parts := waitFullISR(t, adm, "__transaction_state", 30*time.Second)
	victim := killFollower(ctx, t, c, adm, "__transaction_state", parts[0])
	if err := commitOne("second", 5*time.Second); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("transaction with ISR 2 < transaction.state.log.min.isr 3: %v, want COORDINATOR_NOT_AVAILABLE", err)
	}

	if err := c.Node(victim).Start(); err != nil {
		t.Fatal(err)
	}
	waitFullISR(t, adm, "__transaction_state", 60*time.Second)
	if err := commitOne("third", time.Minute); err != nil {
		t.Fatalf("transaction after the broker returned: %v", err)
	}
}

// killFollower kills a follower of partition 0 of topic (not the
// controller, so the quorum keeps deciding) and waits for its ISR to
// shrink to two; it returns the node killed.
func killFollower(ctx context.Context, t *testing.T, c *devcluster.Cluster, adm *kadm.Client, topic string, p partitionInfo) int32 {
	t.Helper()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var victim int32 = -1
	for _, id := range p.Replicas {
		if id != p.Leader && id != md.Controller {
			victim = id
		}
	}
	if victim < 0 {
		t.Skipf("leader and controller cover both followers of %+v", p)
	}
	c.Node(victim).Kill()
	waitFor(t, 30*time.Second, "the ISR of "+topic+" shrinks to two", func() (bool, string) {
		parts, _, err := describe(ctx, adm, topic)
		if err != nil {
			return false, err.Error()
		}
		return len(parts[0].ISR) == 2, fmt.Sprintf("%+v", parts[0])
	})
	return victim
}
