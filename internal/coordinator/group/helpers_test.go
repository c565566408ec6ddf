package group_test

import (
	"context"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/coordinator/coordtest"
	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLog is an in-memory __consumer_offsets partition.
type memLog = coordtest.MemLog

const testGroup = "g"

type env struct {
	t   *testing.T
	c   *group.Coordinator
	log *memLog
	ctx context.Context
}

// newEnv starts a coordinator with testGroup's partition loaded; call it
// inside synctest.Test.
func newEnv(t *testing.T, cfg group.Config, log *memLog) *env {
	t.Helper()
	if cfg.NumPartitions == 0 {
		cfg.NumPartitions = 4
	}
	if log == nil {
		log = &memLog{}
	}
	c := group.New(cfg)
	t.Cleanup(c.Close)
	c.Load(c.PartitionFor(testGroup), 0, log)
	e := &env{t: t, c: c, log: log, ctx: group.WithClient(t.Context(), "client", "/127.0.0.1")}
	e.waitLoaded()
	return e
}

func (e *env) waitLoaded() {
	e.t.Helper()
	for range 100 {
		r := e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Group: testGroup})
		if r.ErrorCode != 14 { // COORDINATOR_LOAD_IN_PROGRESS
			return
		}
		time.Sleep(time.Millisecond)
	}
	e.t.Fatal("partition never loaded")
}

func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func joinReq(memberID string, instance *string, meta []byte) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = testGroup
	r.MemberID = memberID
	r.InstanceID = instance
	r.SessionTimeoutMillis = 10_000
	r.RebalanceTimeoutMillis = 30_000
	r.ProtocolType = "consumer"
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta}}
	return r
}

// joinAsync sends JoinGroup on its own goroutine.
func (e *env) joinAsync(req *kmsg.JoinGroupRequest) chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- e.c.JoinGroup(e.ctx, req) }()
	return ch
}

func (e *env) syncAsync(gen int32, memberID string, assign map[string]string) chan *kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.Generation, req.MemberID = testGroup, gen, memberID
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for id, a := range assign {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(a)})
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- e.c.SyncGroup(e.ctx, req) }()
	return ch
}

func (e *env) heartbeat(gen int32, memberID string, instance *string) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.Generation, req.MemberID, req.InstanceID = testGroup, gen, memberID, instance
	return e.c.Heartbeat(e.ctx, req).ErrorCode
}

// memberID does the KIP-394 dance's first step and returns the assigned id.
func (e *env) memberID() string {
	e.t.Helper()
	r := e.c.JoinGroup(e.ctx, joinReq("", nil, consumerMeta("t")))
	if r.ErrorCode != 79 {
		e.t.Fatalf("first join: error %d, want MEMBER_ID_REQUIRED (79)", r.ErrorCode)
	}
	return r.MemberID
}

// stableGroup forms a Stable group of n members (generation 1), members[0]
// being the leader, each assigned "a-<index>".
func (e *env) stableGroup(n int) (members []string, gen int32) {
	e.t.Helper()
	var chans []chan *kmsg.JoinGroupResponse
	for range n {
		id := e.memberID()
		members = append(members, id)
		chans = append(chans, e.joinAsync(joinReq(id, nil, consumerMeta("t"))))
		time.Sleep(time.Millisecond) // fix join order: the first joiner leads
	}
	var leader string
	for i, ch := range chans {
		r := <-ch
		if r.ErrorCode != 0 {
			e.t.Fatalf("join %d: error %d", i, r.ErrorCode)
		}
		gen, leader = r.Generation, r.LeaderID
	}
	if leader != members[0] {
		e.t.Fatalf("leader %q, want first joiner %q", leader, members[0])
	}
	assign := map[string]string{}
	for i, id := range members {
		assign[id] = "a-" + string(rune('0'+i))
	}
	var syncs []chan *kmsg.SyncGroupResponse
	for i := n - 1; i >= 0; i-- { // followers first: they must wait for the leader
		var a map[string]string
		if i == 0 {
			a = assign
		}
		syncs = append(syncs, e.syncAsync(gen, members[i], a))
	}
	for _, ch := range syncs {
		if r := <-ch; r.ErrorCode != 0 {
			e.t.Fatalf("sync: error %d", r.ErrorCode)
		}
	}
	return members, gen
}

// commitReq commits offsets[i] for partition i of topic.
func commitReq(gen int32, memberID, topic string, offsets ...int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 9
	r.Group, r.Generation, r.MemberID = testGroup, gen, memberID
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	for i, o := range offsets {
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = int32(i), o, 5, kmsg.StringPtr("md")
		t.Partitions = append(t.Partitions, p)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func commitCodes(r *kmsg.OffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// fetchAll returns "topic-partition" -> offset of every committed offset.
func (e *env) fetchAll() map[string]int64 {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: testGroup}}
	r := e.c.OffsetFetch(e.ctx, req)
	out := map[string]int64{}
	if r.Groups[0].ErrorCode != 0 {
		e.t.Fatalf("fetch: error %d", r.Groups[0].ErrorCode)
	}
	for _, t := range r.Groups[0].Topics {
		for _, p := range t.Partitions {
			out[t.Topic+"-"+string(rune('0'+p.Partition))] = p.Offset
		}
	}
	return out
}
