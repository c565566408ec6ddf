package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

// unclean.leader.election.enable, as Kafka's controller applies it: a
// topic that allows it gets an out-of-sync leader the moment its last
// in-sync replica goes (the ISR reset to the new leader); one that does
// not stays leaderless; and when the cluster default is turned on later,
// the background check elects the leaderless partitions within one
// interval, not before.
func TestUncleanLeaderElection(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	h := startWith(t, t.TempDir(), 0, func(c *Config) {
		c.Now, c.UncleanLeaderElectionCheckInterval, c.SessionTimeout = clock.Now, time.Minute, time.Hour
	})
	cl := &cluster{harness: h, t: t, clock: clock, epoch: map[int32]int64{}}
	for id := int32(1); id <= 2; id++ {
		cl.register(id, metadata.Uuid{byte(id)}, nil)
		cl.heartbeat(id, false, false)
	}
	cl.createManual("dirty", []int32{1, 2})
	cl.createManual("clean", []int32{1, 2})
	if r := h.incr(t, false, incr(kmsg.ConfigResourceTypeTopic, "dirty", set("unclean.leader.election.enable", "true"))); r[0].ErrorCode != 0 {
		t.Fatalf("set the topic config: %+v", r[0])
	}
	leaderISR := func(topic string) string {
		t.Helper()
		ti, _ := h.loader.Image().Topic(topic)
		return fmt.Sprintf("%d %v", ti.Partitions[0].Leader, ti.Partitions[0].ISR)
	}
	check := func(when, dirty, clean string) {
		t.Helper()
		if got := leaderISR("dirty"); got != dirty {
			t.Errorf("%s: dirty is %q, want %q", when, got, dirty)
		}
		if got := leaderISR("clean"); got != clean {
			t.Errorf("%s: clean is %q, want %q", when, got, clean)
		}
	}

	// Broker 2 leaves the ISRs (controlled shutdown) and comes back out
	// of sync.
	cl.heartbeat(2, false, true)
	cl.register(2, metadata.Uuid{2}, nil)
	cl.heartbeat(2, false, false)
	check("broker 2 back, out of sync", "1 [1]", "1 [1]")

	// The last in-sync replica goes.
	cl.heartbeat(1, false, true)
	check("broker 1 shut down", "2 [2]", "-1 []") // 1 moved to the ELR

	// The cluster default turns it on: nothing until the check is due.
	if r := h.incr(t, false, incr(kmsg.ConfigResourceTypeBroker, "", set("unclean.leader.election.enable", "true"))); r[0].ErrorCode != 0 {
		t.Fatalf("set the cluster default: %+v", r[0])
	}
	cl.tick()
	check("cluster default on, check not due", "2 [2]", "-1 []")
	clock.Advance(time.Minute)
	cl.tick()
	check("check due", "2 [2]", "2 [2]")
}

// A topic's own false wins over a cluster default of true.
func TestUncleanLeaderElectionTopicOverride(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	if r := h.c.CreateTopics(ctx(t), createReq(topic("strict", 1, 1))).Topics[0]; r.ErrorCode != 0 {
		t.Fatalf("create: %d", r.ErrorCode)
	}
	for _, r := range h.incr(t, false, incr(kmsg.ConfigResourceTypeBroker, "", set("unclean.leader.election.enable", "true")),
		incr(kmsg.ConfigResourceTypeTopic, "strict", set("unclean.leader.election.enable", "false"))) {
		if r.ErrorCode != 0 {
			t.Fatalf("alter configs: %+v", r)
		}
	}
	enabled := h.c.uncleanEnabled(h.loader.Image())
	if enabled("strict") || !enabled("other") {
		t.Fatalf("strict %v other %v, want false true", enabled("strict"), enabled("other"))
	}
}
