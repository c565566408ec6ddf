package controller

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

// elr renders a partition's leadership and KIP-966 lists.
func (cl *cluster) elr(name string) string {
	cl.t.Helper()
	ti, ok := cl.loader.Image().Topic(name)
	if !ok {
		cl.t.Fatalf("no topic %s", name)
	}
	p := ti.Partitions[0]
	return fmt.Sprintf("leader=%d isr=%v elr=%v lke=%v", p.Leader, p.ISR, p.ELR, p.LastKnownELR)
}

// reregister registers a new incarnation of broker id naming prev as its
// epoch before the restart (-1: it did not shut down cleanly).
func (cl *cluster) reregister(id int32, inc metadata.Uuid, prev int64) {
	cl.t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 4
	req.BrokerID, req.ClusterID, req.IncarnationID, req.PreviousBrokerEpoch = id, "test-cluster", inc, prev
	req.Features = supportedFeatures()
	resp := cl.c.BrokerRegistration(ctx(cl.t), req)
	if resp.ErrorCode != 0 {
		cl.t.Fatalf("register %d: %d", id, resp.ErrorCode)
	}
	cl.epoch[id] = resp.BrokerEpoch
}

// The controller's eligible leader replicas (KIP-966), as Kafka's
// PartitionChangeBuilder keeps them on a topic with min.insync.replicas
// 2 and three replicas: replicas leaving an ISR below min ISR join the
// ELR, an empty ISR leaves the partition leaderless with the last leader
// remembered, an unclean shutdown takes a broker out of the ELR, a clean
// one keeps it there, an ELR member that comes back leads, and an ISR
// back at min ISR clears the ELR.
func TestEligibleLeaderReplicas(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "")
	id := cl.createManual("e", []int32{1, 2, 3})
	if r := cl.harness.incr(t, false, incr(kmsg.ConfigResourceTypeTopic, "e", set("min.insync.replicas", "2"))); r[0].ErrorCode != 0 {
		t.Fatalf("set min.insync.replicas: %+v", r[0])
	}
	step := func(what, want string) {
		t.Helper()
		if got := cl.elr("e"); got != want {
			t.Fatalf("%s: %s, want %s", what, got, want)
		}
	}
	cl.heartbeat(3, true, false)
	step("3 fenced: the ISR is still at min ISR", "leader=1 isr=[1 2] elr=[] lke=[]")
	cl.heartbeat(2, true, false)
	step("2 fenced: below min ISR, 2 is eligible", "leader=1 isr=[1] elr=[2] lke=[]")
	cl.heartbeat(1, true, false)
	step("the last ISR member fenced", "leader=-1 isr=[] elr=[1 2] lke=[1]")

	// 3 left while the ISR was at min ISR: it may have missed committed
	// records, so it does not lead.
	cl.heartbeat(3, false, false)
	step("3 back", "leader=-1 isr=[] elr=[1 2] lke=[1]")
	// 1 restarts after a crash (no previous epoch): it leaves the ELR.
	// 2 restarts cleanly (its previous epoch): it stays.
	cl.reregister(1, metadata.Uuid{11}, -1)
	step("1 back uncleanly", "leader=-1 isr=[] elr=[2] lke=[1]")
	cl.reregister(2, metadata.Uuid{12}, cl.epoch[2])
	step("2 back cleanly", "leader=-1 isr=[] elr=[2] lke=[1]")
	cl.heartbeat(1, false, false)
	step("1 unfenced", "leader=-1 isr=[] elr=[2] lke=[1]")
	cl.heartbeat(2, false, false)
	step("2 unfenced: elected from the ELR", "leader=2 isr=[2] elr=[] lke=[]")

	ti, _ := cl.loader.Image().Topic("e")
	p := ti.Partitions[0]
	if rp := cl.alter(3, 2, id, p.LeaderEpoch, p.PartitionEpoch, 2, 3).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
		t.Fatalf("expand: %+v", rp)
	}
	step("ISR back at min ISR", "leader=2 isr=[2 3] elr=[] lke=[]")
}

// A new min.insync.replicas and turning eligible.leader.replicas.version
// off clear the ELR, as Kafka's controller does.
func TestELRClearedByMinISRAndDowngrade(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "")
	cl.createManual("e", []int32{1, 2, 3})
	if r := cl.harness.incr(t, false, incr(kmsg.ConfigResourceTypeTopic, "e", set("min.insync.replicas", "3"))); r[0].ErrorCode != 0 {
		t.Fatalf("set min.insync.replicas: %+v", r[0])
	}
	cl.heartbeat(3, true, false)
	if got := cl.elr("e"); got != "leader=1 isr=[1 2] elr=[3] lke=[]" {
		t.Fatalf("3 fenced: %s", got)
	}
	if r := cl.harness.incr(t, false, incr(kmsg.ConfigResourceTypeTopic, "e", set("min.insync.replicas", "2"))); r[0].ErrorCode != 0 {
		t.Fatalf("set min.insync.replicas: %+v", r[0])
	}
	if got := cl.elr("e"); got != "leader=1 isr=[1 2] elr=[] lke=[]" {
		t.Fatalf("after the min ISR change: %s", got)
	}
	cl.heartbeat(2, true, false)
	if got := cl.elr("e"); got != "leader=1 isr=[1] elr=[2] lke=[]" {
		t.Fatalf("2 fenced: %s", got)
	}
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = metadata.ELRVersionFeature, 0, upgradeSafeDowngrade
	if r := cl.harness.updateFeatures(t, 1, false, u); r.ErrorCode != 0 {
		t.Fatalf("downgrade: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if got := cl.elr("e"); got != "leader=1 isr=[1] elr=[] lke=[]" {
		t.Fatalf("after the downgrade: %s", got)
	}
	// Without ELR the last ISR member stays in the ISR.
	cl.heartbeat(1, true, false)
	if got := cl.elr("e"); got != "leader=-1 isr=[1] elr=[] lke=[]" {
		t.Fatalf("1 fenced without ELR: %s", got)
	}
}
