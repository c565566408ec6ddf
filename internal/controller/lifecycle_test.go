package controller

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// cluster is a controller with a fake clock and brokers registered through
// BrokerRegistration and unfenced through BrokerHeartbeat.
type cluster struct {
	*harness
	t     *testing.T
	clock *fakeClock
	epoch map[int32]int64
}

func newCluster(t *testing.T, dir string, clock *fakeClock, racks ...string) *cluster {
	t.Helper()
	if clock == nil {
		clock = &fakeClock{t: time.Unix(1000, 0)}
	}
	h := startWith(t, dir, 0, func(c *Config) { c.Now = clock.Now })
	cl := &cluster{harness: h, t: t, clock: clock, epoch: map[int32]int64{}}
	for i, rack := range racks {
		id := int32(i + 1)
		var r *string
		if rack != "" {
			r = str(rack)
		}
		if code := cl.register(id, metadata.Uuid{byte(id)}, r); code != 0 {
			t.Fatalf("register %d: %d", id, code)
		}
		if hb := cl.heartbeat(id, false, false); hb.ErrorCode != 0 || hb.IsFenced {
			t.Fatalf("unfence %d: %+v", id, hb)
		}
	}
	return cl
}

func (cl *cluster) register(id int32, inc metadata.Uuid, rack *string) int16 {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 4
	req.BrokerID, req.ClusterID, req.IncarnationID, req.Rack = id, "test-cluster", inc, rack
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9000+id)
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	req.Features = supportedFeatures()
	resp := cl.c.BrokerRegistration(ctx(cl.t), req)
	if resp.Version != 4 {
		cl.t.Fatalf("response version %d", resp.Version)
	}
	if resp.ErrorCode == 0 {
		cl.epoch[id] = resp.BrokerEpoch
	}
	return resp.ErrorCode
}

// heartbeat sends a heartbeat of a broker caught up with the image.
func (cl *cluster) heartbeat(id int32, fence, shutdown bool) *kmsg.BrokerHeartbeatResponse {
	return cl.heartbeatAt(id, int64(cl.loader.Image().Offset), fence, shutdown)
}

func (cl *cluster) heartbeatAt(id int32, offset int64, fence, shutdown bool) *kmsg.BrokerHeartbeatResponse {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = id, cl.epoch[id], offset
	req.WantFence, req.WantShutdown = fence, shutdown
	return cl.c.BrokerHeartbeat(ctx(cl.t), req)
}

func (cl *cluster) broker(id int32) metadata.BrokerImage {
	b, ok := cl.loader.Image().Broker(id)
	if !ok {
		cl.t.Fatalf("broker %d not registered", id)
	}
	return b
}

// createManual creates a topic with an explicit replica assignment.
func (cl *cluster) createManual(name string, assignment ...[]int32) metadata.Uuid {
	cl.t.Helper()
	tp := topic(name, -1, -1)
	for i, a := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), a
		tp.ReplicaAssignment = append(tp.ReplicaAssignment, ra)
	}
	r := cl.c.CreateTopics(ctx(cl.t), createReq(tp)).Topics[0]
	if r.ErrorCode != 0 {
		cl.t.Fatalf("create %s: %d %v", name, r.ErrorCode, r.ErrorMessage)
	}
	return r.TopicID
}

// part renders a partition as "leader/leaderEpoch/partitionEpoch isr".
func (cl *cluster) part(name string, p int32) string {
	cl.t.Helper()
	ti, ok := cl.loader.Image().Topic(name)
	if !ok {
		cl.t.Fatalf("no topic %s", name)
	}
	pi := ti.Partitions[p]
	s := fmt.Sprintf("%d/%d/%d %v", pi.Leader, pi.LeaderEpoch, pi.PartitionEpoch, pi.ISR)
	if len(pi.ELR) > 0 || len(pi.LastKnownELR) > 0 {
		s += fmt.Sprintf(" elr=%v lke=%v", pi.ELR, pi.LastKnownELR)
	}
	return s
}

func (cl *cluster) tick() {
	cl.t.Helper()
	if err := cl.c.tick(ctx(cl.t)); err != nil {
		cl.t.Fatal(err)
	}
}

func TestRegistrationFencedUntilCaughtUp(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil)
	if code := cl.register(1, metadata.Uuid{1}, str("r1")); code != 0 {
		t.Fatalf("register: %d", code)
	}
	b := cl.broker(1)
	if !b.Fenced || b.Epoch != cl.epoch[1] || b.Epoch <= 0 || *b.Rack != "r1" ||
		fmt.Sprint(b.Endpoints) != "[{PLAINTEXT 127.0.0.1 9001 0}]" || b.RegistrationOffset != cl.loader.Image().Offset {
		t.Fatalf("registered %+v", b)
	}
	// Behind its registration record: stays fenced.
	if hb := cl.heartbeatAt(1, int64(b.RegistrationOffset)-1, false, false); hb.ErrorCode != 0 || !hb.IsFenced || hb.IsCaughtUp || hb.Version != 1 {
		t.Fatalf("behind: %+v", hb)
	}
	if !cl.broker(1).Fenced {
		t.Fatal("unfenced while behind")
	}
	// WantFence keeps it fenced even when caught up.
	if hb := cl.heartbeat(1, true, false); !hb.IsFenced {
		t.Fatalf("want fence: %+v", hb)
	}
	if hb := cl.heartbeatAt(1, int64(b.RegistrationOffset), false, false); hb.ErrorCode != 0 || hb.IsFenced || !hb.IsCaughtUp || hb.ShouldShutdown {
		t.Fatalf("caught up: %+v", hb)
	}
	if cl.broker(1).Fenced {
		t.Fatal("image: still fenced")
	}

	// Errors.
	if hb := cl.heartbeat(7, false, false); hb.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unknown broker: %+v", hb)
	}
	good := cl.epoch[1]
	cl.epoch[1] = good - 1
	if hb := cl.heartbeat(1, false, false); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch: %+v", hb)
	}
	cl.epoch[1] = good
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID = 2, "other-cluster"
	if r := cl.c.BrokerRegistration(ctx(t), req); r.ErrorCode != kerr.InconsistentClusterID.Code || r.BrokerEpoch != -1 {
		t.Fatalf("cluster id: %+v", r)
	}
	if _, ok := cl.loader.Image().Broker(2); ok {
		t.Fatal("broker of another cluster registered")
	}

	// The same incarnation may re-register: new epoch, fenced again, and
	// the old epoch is stale.
	if code := cl.register(1, metadata.Uuid{1}, nil); code != 0 {
		t.Fatalf("re-register: %d", code)
	}
	if b2 := cl.broker(1); !b2.Fenced || b2.Epoch <= good {
		t.Fatalf("re-registered %+v (old epoch %d)", b2, good)
	}
	cl.epoch[1], good = good, cl.epoch[1]
	if hb := cl.heartbeat(1, false, false); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("old epoch after re-register: %+v", hb)
	}
	cl.epoch[1] = good
	if hb := cl.heartbeat(1, false, false); hb.IsFenced {
		t.Fatalf("new epoch: %+v", hb)
	}
}

func TestDuplicateBrokerRegistration(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "")
	// Broker 1 has a live session: another incarnation is refused.
	if code := cl.register(1, metadata.Uuid{0xee}, nil); code != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("duplicate: %d", code)
	}
	if b := cl.broker(1); b.IncarnationID != (metadata.Uuid{1}) || b.Fenced {
		t.Fatalf("duplicate changed the broker: %+v", b)
	}
	// Once the session expired (fenced by the loop), the new one wins.
	cl.clock.Advance(5 * time.Second)
	cl.heartbeat(2, false, false)
	cl.clock.Advance(5 * time.Second)
	cl.tick()
	if !cl.broker(1).Fenced || cl.broker(2).Fenced {
		t.Fatalf("after expiry: 1 %+v 2 %+v", cl.broker(1), cl.broker(2))
	}
	if code := cl.register(1, metadata.Uuid{0xee}, nil); code != 0 {
		t.Fatalf("register after expiry: %d", code)
	}
	// A fenced broker holds no session: replacing it at once is fine.
	if code := cl.register(1, metadata.Uuid{0xef}, nil); code != 0 {
		t.Fatalf("replace fenced: %d", code)
	}
	if b := cl.broker(1); b.IncarnationID != (metadata.Uuid{0xef}) {
		t.Fatalf("incarnation %v", b.IncarnationID)
	}
}

func TestSessionExpiryMovesLeadershipAndShrinksISR(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "")
	cl.createManual("t", []int32{1, 2, 3}, []int32{2, 1, 3})
	cl.createManual("solo", []int32{1})

	keepAlive := func() { cl.heartbeat(2, false, false); cl.heartbeat(3, false, false) }
	cl.clock.Advance(8 * time.Second)
	keepAlive()
	cl.tick() // 8 s < 9 s: nobody expired
	if cl.broker(1).Fenced {
		t.Fatal("fenced before the session timeout")
	}
	off := cl.loader.Image().Offset
	cl.clock.Advance(2 * time.Second)
	keepAlive()
	cl.tick()
	if !cl.broker(1).Fenced || cl.broker(2).Fenced || cl.broker(3).Fenced {
		t.Fatalf("fencing: %+v %+v %+v", cl.broker(1), cl.broker(2), cl.broker(3))
	}
	if cl.loader.Image().Offset != off+1 {
		t.Fatalf("fencing took %d batches, want 1", cl.loader.Image().Offset-off)
	}
	// Leader 1 → next ISR member in replica order; follower 1 leaves the
	// ISR; the last ISR member leaves it for the ELR (KIP-966), with no
	// leader, and is the last known leader.
	for _, c := range []struct{ name, want string }{
		{cl.part("t", 0), "2/1/1 [2 3]"},
		{cl.part("t", 1), "2/0/1 [2 3]"},
		{cl.part("solo", 0), "-1/1/1 [] elr=[1] lke=[1]"},
	} {
		if c.name != c.want {
			t.Errorf("got %s, want %s", c.name, c.want)
		}
	}
	// Nothing left to fence: no more records.
	off = cl.loader.Image().Offset
	cl.tick()
	if cl.loader.Image().Offset != off {
		t.Fatal("idle tick wrote records")
	}
	// Broker 1 comes back: unfenced, and re-elected where it is the only
	// ISR member; not in t (it must first catch up via AlterPartition).
	if hb := cl.heartbeat(1, false, false); hb.IsFenced {
		t.Fatalf("unfence: %+v", hb)
	}
	if got := cl.part("solo", 0); got != "1/2/2 [1]" {
		t.Errorf("solo after unfence: %s", got)
	}
	if got := cl.part("t", 0); got != "2/1/1 [2 3]" {
		t.Errorf("t-0 after unfence: %s", got)
	}
}

func TestFailoverGivesFreshSessions(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Unix(1000, 0)}
	cl := newCluster(t, dir, clock, "")
	cl.node.Close()
	cl.c.Close()
	// A new controller term long after the last heartbeat.
	clock.Advance(time.Minute)
	cl2 := newCluster(t, dir, clock)
	cl2.tick()
	if b, _ := cl2.loader.Image().Broker(1); b.Fenced {
		t.Fatal("new controller fenced a broker before giving it a session")
	}
	clock.Advance(10 * time.Second)
	cl2.tick()
	if b, _ := cl2.loader.Image().Broker(1); !b.Fenced {
		t.Fatal("silent broker not fenced after a full session")
	}
}

func TestControlledShutdown(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "")
	cl.createManual("a", []int32{1, 2, 3}, []int32{2, 1, 3}, []int32{3, 2, 1})
	cl.createManual("b", []int32{1})
	// Leadership moves where another ISR member can take it and goes
	// where none can, so the broker leads nothing and may stop at once.
	hb := cl.heartbeat(1, false, true)
	if hb.ErrorCode != 0 || !hb.ShouldShutdown || hb.IsFenced {
		t.Fatalf("first shutdown heartbeat: %+v", hb)
	}
	if b := cl.broker(1); !b.InControlledShutdown || b.Fenced {
		t.Fatalf("broker %+v", b)
	}
	for _, c := range []struct{ got, want string }{
		{cl.part("a", 0), "2/1/1 [2 3]"},
		{cl.part("a", 1), "2/0/1 [2 3]"},
		{cl.part("a", 2), "3/0/1 [3 2]"},
		{cl.part("b", 0), "-1/1/1 [] elr=[1] lke=[1]"}, // nobody else: offline until 1 returns
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	// A broker in controlled shutdown is not placed on.
	r := cl.c.CreateTopics(ctx(t), createReq(topic("x", 1, 3))).Topics[0]
	if r.ErrorCode != kerr.InvalidReplicationFactor.Code || *r.ErrorMessage != "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 2 broker(s) are registered." {
		t.Fatalf("placement on a shutting-down broker: %d %v", r.ErrorCode, *r.ErrorMessage)
	}
}

// Unregistering a broker (kafka-cluster unregister) takes it out of its
// partitions as fencing does, removes its registration, and lets it
// register again later; an unknown id is BROKER_ID_NOT_REGISTERED.
func TestUnregisterBroker(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "")
	cl.createManual("a", []int32{1, 2, 3}, []int32{2, 1, 3})
	cl.createManual("b", []int32{1})
	unregister := func(id int32) int16 {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		return cl.c.UnregisterBroker(ctx(t), req).ErrorCode
	}
	if code := unregister(1); code != 0 {
		t.Fatalf("unregister 1: %d", code)
	}
	if _, ok := cl.loader.Image().Broker(1); ok {
		t.Fatal("broker 1 still registered")
	}
	for _, c := range []struct{ got, want string }{
		{cl.part("a", 0), "2/1/1 [2 3]"},
		{cl.part("a", 1), "2/0/1 [2 3]"},
		{cl.part("b", 0), "-1/1/1 [] elr=[1] lke=[1]"}, // the last ISR member moves to the ELR
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	if code := unregister(1); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("second unregister: %d, want BROKER_ID_NOT_REGISTERED", code)
	}
	if code := unregister(7); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregister 7: %d, want BROKER_ID_NOT_REGISTERED", code)
	}
	// The old session's heartbeat is refused; a new registration works
	// and, once caught up, is unfenced and leads b-0 again.
	if hb := cl.heartbeat(1, false, false); hb.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("heartbeat after unregister: %+v", hb)
	}
	if code := cl.register(1, metadata.Uuid{9}, nil); code != 0 {
		t.Fatalf("register again: %d", code)
	}
	if hb := cl.heartbeat(1, false, false); hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("heartbeat after registering again: %+v", hb)
	}
	if got := cl.part("b", 0); got != "1/2/2 [1]" {
		t.Errorf("b-0 after 1 returned: %s", got)
	}
}

// alter sends an AlterPartition for t-0 from broker id.
func (cl *cluster) alter(version int16, id int32, topicID metadata.Uuid, leaderEpoch, partEpoch int32, isr ...int32) *kmsg.AlterPartitionResponse {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = version, id, cl.epoch[id]
	tp := kmsg.NewAlterPartitionRequestTopic()
	tp.TopicID = topicID
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.LeaderEpoch, p.PartitionEpoch = leaderEpoch, partEpoch
	if version >= 3 {
		for _, r := range isr {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = r, cl.epoch[r]
			p.NewEpochISR = append(p.NewEpochISR, e)
		}
	} else {
		p.NewISR = isr
	}
	tp.Partitions = []kmsg.AlterPartitionRequestTopicPartition{p}
	req.Topics = []kmsg.AlterPartitionRequestTopic{tp}
	return cl.c.AlterPartition(ctx(cl.t), req)
}

func TestAlterPartition(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "", "")
	id := cl.createManual("t", []int32{1, 2, 3})

	r := cl.alter(3, 1, id, 0, 0, 1, 2)
	rp := r.Topics[0].Partitions[0]
	if r.ErrorCode != 0 || rp.ErrorCode != 0 || rp.LeaderID != 1 || rp.LeaderEpoch != 0 || rp.PartitionEpoch != 1 ||
		fmt.Sprint(rp.ISR) != "[1 2]" || r.Topics[0].TopidID != id || r.Version != 3 {
		t.Fatalf("shrink: %+v", r)
	}
	if got := cl.part("t", 0); got != "1/0/1 [1 2]" {
		t.Fatalf("image after shrink: %s", got)
	}
	// Expansion with v2 (plain ISR).
	if rp := cl.alter(2, 1, id, 0, 1, 1, 2, 3).Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.PartitionEpoch != 2 || fmt.Sprint(rp.ISR) != "[1 2 3]" {
		t.Fatalf("expand: %+v", rp)
	}
	// A no-op answers the current state and writes nothing.
	off := cl.loader.Image().Offset
	if rp := cl.alter(3, 1, id, 0, 2, 1, 2, 3).Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.PartitionEpoch != 2 || fmt.Sprint(rp.ISR) != "[1 2 3]" || cl.loader.Image().Offset != off {
		t.Fatalf("no-op: %+v (offset %d → %d)", rp, off, cl.loader.Image().Offset)
	}

	code := func(r *kmsg.AlterPartitionResponse) int16 {
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	good := cl.epoch[1]
	cl.epoch[1] = good + 100
	if c := code(cl.alter(3, 1, id, 0, 2, 1, 2)); c != kerr.StaleBrokerEpoch.Code {
		t.Errorf("stale broker epoch: %d", c)
	}
	cl.epoch[1] = good
	cases := []struct {
		name             string
		broker           int32
		topic            metadata.Uuid
		leaderEp, partEp int32
		isr              []int32
		want             *kerr.Error
	}{
		{"unknown topic id", 1, metadata.Uuid{9}, 0, 2, []int32{1}, kerr.UnknownTopicID},
		{"not the leader", 2, id, 0, 2, []int32{2}, kerr.NotLeaderForPartition},
		{"old leader epoch", 1, id, 1, 2, []int32{1}, kerr.FencedLeaderEpoch},
		{"old partition epoch", 1, id, 0, 1, []int32{1}, kerr.InvalidUpdateVersion},
		{"not a replica", 1, id, 0, 2, []int32{1, 4}, kerr.IneligibleReplica},
		{"without the leader", 1, id, 0, 2, []int32{2, 3}, kerr.InvalidRequest},
		{"duplicate member", 1, id, 0, 2, []int32{1, 2, 2}, kerr.InvalidRequest},
	}
	for _, c := range cases {
		if got := code(cl.alter(3, c.broker, c.topic, c.leaderEp, c.partEp, c.isr...)); got != c.want.Code {
			t.Errorf("%s: got %d, want %s", c.name, got, c.want.Message)
		}
	}
	// Unknown partition of a known topic.
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 2, 1, cl.epoch[1]
	tp := kmsg.NewAlterPartitionRequestTopic()
	tp.TopicID = id
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.Partition, p.NewISR = 5, []int32{1}
	tp.Partitions = []kmsg.AlterPartitionRequestTopicPartition{p}
	req.Topics = []kmsg.AlterPartitionRequestTopic{tp}
	if c := code(cl.c.AlterPartition(ctx(t), req)); c != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partition: %d", c)
	}
	// A stale epoch for an ISR member (v3).
	cl.epoch[2]--
	if c := code(cl.alter(3, 1, id, 0, 2, 1, 2)); c != kerr.IneligibleReplica.Code {
		t.Errorf("stale member epoch: %d", c)
	}
	cl.epoch[2]++
	// Fenced broker 3 leaves the ISR; adding it back is refused.
	if hb := cl.heartbeat(3, true, false); !hb.IsFenced {
		t.Fatalf("want fence: %+v", hb)
	}
	if got := cl.part("t", 0); got != "1/0/3 [1 2]" {
		t.Fatalf("after fencing 3: %s", got)
	}
	if c := code(cl.alter(3, 1, id, 0, 3, 1, 2, 3)); c != kerr.IneligibleReplica.Code {
		t.Errorf("fenced member: %d", c)
	}
	if got := cl.part("t", 0); got != "1/0/3 [1 2]" {
		t.Fatalf("rejected changes were written: %s", got)
	}
}

func TestPlacementSpreadsReplicasAndLeaders(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "")
	r := cl.c.CreateTopics(ctx(t), createReq(topic("p", 6, 3))).Topics[0]
	if r.ErrorCode != 0 {
		t.Fatalf("create: %+v", r)
	}
	ti, _ := cl.loader.Image().Topic("p")
	leaders := map[int32]int{}
	for _, p := range ti.Partitions {
		set := slices.Sorted(slices.Values(p.Replicas))
		if fmt.Sprint(set) != "[1 2 3]" || p.Leader != p.Replicas[0] || !slices.Equal(p.ISR, p.Replicas) {
			t.Fatalf("partition %+v", p)
		}
		leaders[p.Leader]++
	}
	if leaders[1] != 2 || leaders[2] != 2 || leaders[3] != 2 {
		t.Fatalf("leaders not balanced: %v", leaders)
	}
	// A fenced broker does not count.
	cl.heartbeat(3, true, false)
	r = cl.c.CreateTopics(ctx(t), createReq(topic("q", 1, 3))).Topics[0]
	if r.ErrorCode != kerr.InvalidReplicationFactor.Code || *r.ErrorMessage != "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 2 broker(s) are registered." {
		t.Fatalf("rf 3 over 2 live brokers: %d %v", r.ErrorCode, *r.ErrorMessage)
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	ct := kmsg.NewCreatePartitionsRequestTopic()
	ct.Topic, ct.Count = "p", 7
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{ct}
	if r := cl.c.CreatePartitions(ctx(t), cp).Topics[0]; r.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("create partitions rf 3 over 2 live brokers: %+v", r)
	}
	// Explicit assignments may name a fenced broker (not in the ISR) but
	// not an unknown one.
	tp := topic("m", -1, -1)
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = []int32{3, 1}
	tp.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{ra}
	if r := cl.c.CreateTopics(ctx(t), createReq(tp)).Topics[0]; r.ErrorCode != 0 {
		t.Fatalf("manual: %+v", r)
	}
	if got := cl.part("m", 0); got != "1/0/0 [1]" {
		t.Fatalf("manual with fenced broker: %s", got)
	}
	ra.Replicas = []int32{9}
	tp.Topic, tp.ReplicaAssignment = "m2", []kmsg.CreateTopicsRequestTopicReplicaAssignment{ra}
	if r := cl.c.CreateTopics(ctx(t), createReq(tp)).Topics[0]; r.ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("manual with unknown broker: %+v", r)
	}
}

func TestPlacementRackAware(t *testing.T) {
	racks := []string{"r1", "r1", "r2", "r2", "r3", "r3"}
	cl := newCluster(t, t.TempDir(), nil, racks...)
	for _, rf := range []int16{2, 3} {
		name := fmt.Sprint("rf", rf)
		if r := cl.c.CreateTopics(ctx(t), createReq(topic(name, 12, rf))).Topics[0]; r.ErrorCode != 0 {
			t.Fatalf("create: %+v", r)
		}
		ti, _ := cl.loader.Image().Topic(name)
		leaders := map[int32]int{}
		replicas := map[int32]int{}
		for _, p := range ti.Partitions {
			onRack := map[string]bool{}
			for _, b := range p.Replicas {
				onRack[racks[b-1]] = true
				replicas[b]++
			}
			if len(onRack) != int(rf) || len(p.Replicas) != int(rf) || p.Leader != p.Replicas[0] {
				t.Fatalf("rf %d partition %d replicas %v not on %d racks", rf, p.Partition, p.Replicas, rf)
			}
			leaders[p.Leader]++
		}
		for b := int32(1); b <= 6; b++ {
			if leaders[b] != 2 {
				t.Fatalf("rf %d leaders not balanced: %v", rf, leaders)
			}
			if replicas[b] != 2*int(rf) {
				t.Errorf("rf %d replicas not balanced: %v", rf, replicas)
			}
		}
	}
}

func elect(cl *cluster, typ int8, topics map[string][]int32) *kmsg.ElectLeadersResponse {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = 2, typ
	if topics != nil {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
		for _, name := range slices.Sorted(mapsKeys(topics)) {
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic, t.Partitions = name, topics[name]
			req.Topics = append(req.Topics, t)
		}
	}
	return cl.c.ElectLeaders(ctx(cl.t), req)
}

func mapsKeys(m map[string][]int32) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func electCodes(r *kmsg.ElectLeadersResponse) string {
	var out []string
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s-%d:%d", t.Topic, p.Partition, p.ErrorCode))
		}
	}
	return fmt.Sprint(out)
}

func TestElectLeaders(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "")
	id := cl.createManual("t", []int32{1, 2, 3}, []int32{2, 3, 1})
	cl.heartbeat(1, true, false) // fenced: t-0 → leader 2
	if got := cl.part("t", 0); got != "2/1/1 [2 3]" {
		t.Fatalf("after fence: %s", got)
	}
	r := elect(cl, 0, map[string][]int32{"t": {0, 1, 7}, "nope": {0}})
	if got := electCodes(r); got != "[nope-0:3 t-0:80 t-1:84 t-7:3]" || r.Version != 2 {
		t.Fatalf("while 1 is fenced: %s", got)
	}
	cl.heartbeat(1, false, false) // unfenced, but not in the ISR yet
	if got := electCodes(elect(cl, 0, map[string][]int32{"t": {0}})); got != "[t-0:80]" {
		t.Fatalf("1 not in ISR: %s", got)
	}
	if rp := cl.alter(3, 2, id, 1, 1, 2, 3, 1).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
		t.Fatalf("expand: %+v", rp)
	}
	// Null topics: every partition; those needing nothing are left out.
	if got := electCodes(elect(cl, 0, nil)); got != "[t-0:0]" {
		t.Fatalf("all partitions: %s", got)
	}
	if got := cl.part("t", 0); got != "1/2/3 [2 3 1]" {
		t.Fatalf("after preferred election: %s", got)
	}
	if got := electCodes(elect(cl, 0, map[string][]int32{"t": {0}})); got != "[t-0:84]" {
		t.Fatalf("again: %s", got)
	}
	if r := elect(cl, 5, map[string][]int32{"t": {0}}); r.ErrorCode != kerr.InvalidRequest.Code || electCodes(r) != "[t-0:42]" {
		t.Fatalf("bad election type: %d %s", r.ErrorCode, electCodes(r))
	}
}

func TestUncleanElection(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "")
	id := cl.createManual("u", []int32{1, 2})
	cl.alter(3, 1, id, 0, 0, 1)  // ISR [1]
	cl.heartbeat(1, true, false) // last ISR member fenced: no leader
	if got := cl.part("u", 0); got != "-1/1/2 [] elr=[1] lke=[1]" {
		t.Fatalf("offline: %s", got)
	}
	if got := electCodes(elect(cl, 0, map[string][]int32{"u": {0}})); got != "[u-0:80]" {
		t.Fatalf("preferred: %s", got)
	}
	if got := electCodes(elect(cl, 1, map[string][]int32{"u": {0}})); got != "[u-0:0]" {
		t.Fatalf("unclean: %s", got)
	}
	if got := cl.part("u", 0); got != "2/2/3 [2]" {
		t.Fatalf("after unclean: %s", got)
	}
	if got := electCodes(elect(cl, 1, map[string][]int32{"u": {0}})); got != "[u-0:84]" {
		t.Fatalf("unclean with a leader: %s", got)
	}
}

func TestAutoLeaderRebalance(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	h := startWith(t, t.TempDir(), 0, func(c *Config) {
		c.Now, c.AutoLeaderRebalance, c.LeaderImbalanceCheckInterval = clock.Now, true, time.Minute
	})
	cl := &cluster{harness: h, t: t, clock: clock, epoch: map[int32]int64{}}
	for id := int32(1); id <= 2; id++ {
		cl.register(id, metadata.Uuid{byte(id)}, nil)
		cl.heartbeat(id, false, false)
	}
	id := cl.createManual("t", []int32{1, 2})
	cl.heartbeat(1, false, true) // controlled shutdown moves t-0 to 2
	if got := cl.part("t", 0); got != "2/1/1 [2]" {
		t.Fatalf("after shutdown: %s", got)
	}
	// Broker 1 restarts: registers, unfences, rejoins the ISR.
	cl.register(1, metadata.Uuid{1}, nil)
	cl.heartbeat(1, false, false)
	cl.alter(3, 2, id, 1, 1, 2, 1)
	cl.tick() // not due yet
	if got := cl.part("t", 0); got != "2/1/2 [2 1]" {
		t.Fatalf("rebalanced early: %s", got)
	}
	clock.Advance(time.Minute)
	cl.heartbeat(1, false, false)
	cl.heartbeat(2, false, false)
	cl.tick()
	if got := cl.part("t", 0); got != "1/2/3 [2 1]" {
		t.Fatalf("after rebalance: %s", got)
	}
}

func TestBackgroundLoopFencesSilentBroker(t *testing.T) {
	h := startWith(t, t.TempDir(), 1, func(c *Config) { c.SessionTimeout = 300 * time.Millisecond })
	if b, _ := h.loader.Image().Broker(1); b.Fenced {
		t.Fatal("RegisterBroker left the broker fenced")
	}
	h.c.Start()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, _ := h.loader.Image().Broker(1); b.Fenced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("silent broker never fenced")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHeartbeatWhileBusy: a heartbeat that asks for no change is answered
// while another decision holds the controller (a CreateTopics waiting for
// the broker to create its logs), and the session it renews counts at the
// next expiry check.
func TestHeartbeatWhileBusy(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "")
	cl.clock.Advance(8 * time.Second)
	cl.c.mu.Lock() // a decision in flight
	answered := make(chan *kmsg.BrokerHeartbeatResponse, 1)
	go func() { answered <- cl.heartbeat(1, false, false) }()
	select {
	case hb := <-answered:
		if hb.ErrorCode != 0 || hb.IsFenced || !hb.IsCaughtUp {
			t.Errorf("heartbeat while busy: %+v", hb)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("heartbeat queued behind the decision in flight")
	}
	cl.c.mu.Unlock()
	cl.clock.Advance(2 * time.Second) // 10 s since the last heartbeat of 2
	cl.tick()
	if cl.broker(1).Fenced || !cl.broker(2).Fenced {
		t.Fatalf("after expiry: broker 1 fenced %v (want false), broker 2 fenced %v (want true)", cl.broker(1).Fenced, cl.broker(2).Fenced)
	}
	// A fenced broker's heartbeat that would unfence it waits for the
	// decision in flight, and then unfences it.
	cl.c.mu.Lock()
	go func() { answered <- cl.heartbeat(2, false, false) }()
	select {
	case hb := <-answered:
		t.Fatalf("unfencing heartbeat answered while busy: %+v", hb)
	case <-time.After(100 * time.Millisecond):
	}
	cl.c.mu.Unlock()
	if hb := <-answered; hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("unfencing heartbeat: %+v", hb)
	}
}
