package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// TestCleanRestartStaysEligible (KIP-966): a broker stopped cleanly
// registers again with the epoch it had (from its .kafka_cleanshutdown
// files), so the controller keeps it an eligible leader replica. Both
// replicas of a partition (min.insync.replicas=2) stop cleanly, follower
// first; when only the follower comes back it leads, with the record
// acknowledged before. A broker that registered as after a crash would
// leave the ELR and the partition would stay without a leader.
func TestCleanRestartStaysEligible(t *testing.T) {
	const topic = "clean-restart"
	c := startClusterWith(t, devcluster.Config{Controllers: 1, Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	adm := kadm.NewClient(client(t, c))
	minISR := "2"
	if resp, err := adm.CreateTopic(ctx, 1, 2, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	p := waitFullISR(t, adm, topic, 60*time.Second)[0]
	leader, follower, observer := p.Leader, int32(-1), int32(-1)
	for id := int32(2); id <= 4; id++ { // node 1 is the controller
		switch {
		case !slices.Contains(p.Replicas, id):
			observer = id
		case id != leader:
			follower = id
		}
	}
	prod := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("acknowledged")}).FirstErr(); err != nil {
		t.Fatal(err)
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

	c.Node(follower).Stop()
	waitState("the follower in the ELR", func(s elrState) bool {
		return s.Leader == leader && slices.Equal(s.ISR, []int32{leader}) && slices.Contains(s.ELR, follower)
	})
	c.Node(leader).Stop()
	waitState("no leader, both in the ELR", func(s elrState) bool {
		return s.Leader == -1 && len(s.ISR) == 0 && slices.Contains(s.ELR, follower)
	})
	if err := c.Node(follower).Start(); err != nil {
		t.Fatal(err)
	}
	waitState("the cleanly restarted follower leads", func(s elrState) bool {
		return s.Leader == follower && slices.Equal(s.ISR, []int32{follower})
	})
	// Back at min ISR the high watermark moves again: the record is there.
	if err := c.Node(leader).Start(); err != nil {
		t.Fatal(err)
	}
	waitState("the ISR back at min ISR", func(s elrState) bool { return len(s.ISR) == 2 })
	cons := client(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cons.PollFetches(ctx)
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "acknowledged" {
		t.Fatalf("after the restarts read %d records (%v), want the acknowledged one", len(recs), fs.Errors())
	}
}
