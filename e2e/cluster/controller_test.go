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
)

// TestControllerFailover kills the active controller with SIGKILL and
// requires a topic to be created through a surviving broker within 10 s,
// then checks the new topic works (acks=all produce and read back) and the
// killed node rejoins.
func TestControllerFailover(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round := 1; round <= 2; round++ {
		adm := kadm.NewClient(client(t, c))
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		controller := md.Controller
		if controller <= 0 {
			t.Fatalf("no active controller reported")
		}
		var survivors []string
		for _, n := range c.Nodes {
			if n.ID != controller {
				survivors = append(survivors, n.ClientAddr)
			}
		}
		t.Logf("round %d: killing the active controller, node %d", round, controller)
		c.Node(controller).Kill()
		killed := time.Now()

		cl, err := kgo.NewClient(kgo.SeedBrokers(survivors...), kgo.RetryTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		sadm := kadm.NewClient(cl)
		sadm.SetTimeoutMillis(3000) // the broker forwards for as long as each try waits
		topic := fmt.Sprintf("after-failover-%d", round)
		var created time.Duration
		for tries := 1; ; tries++ {
			cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := sadm.CreateTopic(cctx, 3, 2, nil, topic)
			ccancel()
			// A try that timed out may still have been applied: the next
			// one then finds the topic, as any client retrying would.
			if err == nil || tries > 1 && errors.Is(err, kerr.TopicAlreadyExists) {
				created = time.Since(killed)
				break
			}
			if time.Since(killed) > 10*time.Second {
				t.Fatalf("round %d: no topic creation within 10 s of killing the controller: %v", round, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("round %d: topic created %v after the controller was killed", round, created.Round(time.Millisecond))

		prod, err := kgo.NewClient(kgo.SeedBrokers(survivors...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
			t.Fatalf("produce to the new topic: %v", err)
		}
		prod.Close()
		cl.Close()

		if err := c.Node(controller).Start(); err != nil {
			t.Fatal(err)
		}
		waitFullISR(t, adm, topic, 60*time.Second)
	}
}
