package group_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicSet is a mutable cluster topic list for Config.Topics.
type topicSet struct {
	mu sync.Mutex
	m  map[string]group.TopicInfo
}

func newTopics(parts map[string]int32) *topicSet {
	ts := &topicSet{m: map[string]group.TopicInfo{}}
	for n, p := range parts {
		ts.set(n, p)
	}
	return ts
}

func (ts *topicSet) set(name string, partitions int32) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.m[name] = group.TopicInfo{ID: topicID(name), Partitions: partitions}
}

func (ts *topicSet) get() map[string]group.TopicInfo {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return maps.Clone(ts.m)
}

func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	id[15] = 1
	return id
}

// client simulates a KIP-848 consumer: it owns exactly what the last
// assignment it received said, revoking anything dropped at once, and
// reports what it owns on every heartbeat.
type client struct {
	id       string
	instance *string
	epoch    int32
	owned    map[[16]byte][]int32
	topics   []string
	regex    *string
	assignor *string
}

func hbReq(c *client) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch, r.InstanceID = testGroup, c.id, c.epoch, c.instance
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, id := range slices.SortedFunc(maps.Keys(c.owned), func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) }) {
		r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: c.owned[id]})
	}
	if c.epoch == 0 {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		r.RebalanceTimeoutMillis = 30_000
		r.SubscribedTopicNames, r.SubscribedTopicRegex, r.ServerAssignor = c.topics, c.regex, c.assignor
		if r.SubscribedTopicNames == nil && r.SubscribedTopicRegex == nil {
			r.SubscribedTopicNames = []string{"t"}
		}
	} else {
		r.RebalanceTimeoutMillis = -1
	}
	return r
}

// hb sends one heartbeat for c and applies the answer.
func (e *env) hb(c *client) *kmsg.ConsumerGroupHeartbeatResponse {
	e.t.Helper()
	r := e.c.ConsumerGroupHeartbeat(e.ctx, hbReq(c))
	if r.ErrorCode != 0 {
		return r
	}
	if r.HeartbeatIntervalMillis != 5000 {
		e.t.Fatalf("heartbeat interval %d, want 5000", r.HeartbeatIntervalMillis)
	}
	c.id, c.epoch = *r.MemberID, r.MemberEpoch
	if r.Assignment != nil {
		c.owned = map[[16]byte][]int32{}
		for _, t := range r.Assignment.Topics {
			c.owned[t.TopicID] = t.Partitions
		}
	}
	return r
}

// checkExclusive fails if two clients own one partition.
func checkExclusive(t *testing.T, cs ...*client) {
	t.Helper()
	seen := map[string]string{}
	for _, c := range cs {
		for id, ps := range c.owned {
			for _, p := range ps {
				k := fmt.Sprintf("%x-%d", id, p)
				if o, ok := seen[k]; ok {
					t.Fatalf("partition %s owned by %s and %s", k, o, c.id)
				}
				seen[k] = c.id
			}
		}
	}
}

func count(c *client) int {
	n := 0
	for _, ps := range c.owned {
		n += len(ps)
	}
	return n
}

// converge heartbeats every client in turn until the group is Stable,
// checking after each heartbeat that no partition has two owners.
func (e *env) converge(cs ...*client) *kmsg.ConsumerGroupDescribeResponseGroup {
	e.t.Helper()
	for range 20 {
		for _, c := range cs {
			if r := e.hb(c); r.ErrorCode != 0 {
				e.t.Fatalf("heartbeat of %s: error %d %v", c.id, r.ErrorCode, r.ErrorMessage)
			}
			checkExclusive(e.t, cs...)
		}
		if d := e.describe(); d.State == "Stable" {
			return d
		}
	}
	e.t.Fatalf("group never became Stable: %+v", e.describe())
	return nil
}

func (e *env) describe() *kmsg.ConsumerGroupDescribeResponseGroup {
	r := e.c.ConsumerGroupDescribe(e.ctx, &kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{testGroup}})
	return &r.Groups[0]
}

func newConsumerEnv(t *testing.T, ts *topicSet, log *memLog) *env {
	return newEnv(t, group.Config{Topics: ts.get}, log)
}

func TestConsumerGroupJoinRevokeFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t, newTopics(map[string]int32{"t": 6}), nil)
		a := &client{id: "a"}
		if r := e.hb(a); r.MemberEpoch != 1 || count(a) != 6 {
			t.Fatalf("first member: epoch %d owns %d, want epoch 1 owning 6", r.MemberEpoch, count(a))
		}
		// b joins: a must give up 3 partitions before b may have them.
		b := &client{id: "b"}
		if r := e.hb(b); r.MemberEpoch != 2 || count(b) != 0 {
			t.Fatalf("b's join: epoch %d owns %d, want epoch 2 and nothing while a still owns all", r.MemberEpoch, count(b))
		}
		if d := e.describe(); d.State != "Reconciling" || d.Epoch != 2 || d.AssignmentEpoch != 2 {
			t.Fatalf("after b joined: state %s epoch %d assignment epoch %d", d.State, d.Epoch, d.AssignmentEpoch)
		}
		if r := e.hb(a); r.MemberEpoch != 1 || count(a) != 3 {
			t.Fatalf("a asked to revoke: epoch %d owns %d, want epoch 1 (unrevoked) owning 3", r.MemberEpoch, count(a))
		}
		if e.hb(b); count(b) != 0 {
			t.Fatalf("b got partitions before a acknowledged the revocation")
		}
		if r := e.hb(a); r.MemberEpoch != 2 {
			t.Fatalf("a after revoking: epoch %d, want 2", r.MemberEpoch)
		}
		if e.hb(b); count(b) != 3 {
			t.Fatalf("b owns %d after a revoked, want 3", count(b))
		}
		checkExclusive(t, a, b)

		c := &client{id: "c"}
		d := e.converge(a, b, c)
		if count(a) != 2 || count(b) != 2 || count(c) != 2 || d.Epoch != 3 || d.AssignmentEpoch != 3 {
			t.Fatalf("three members: owned %d/%d/%d, epochs %d/%d", count(a), count(b), count(c), d.Epoch, d.AssignmentEpoch)
		}
		for _, m := range d.Members {
			if m.MemberEpoch != 3 || m.MemberType != 1 || len(m.TargetAssignment.TopicPartitions) != 1 ||
				m.TargetAssignment.TopicPartitions[0].Topic != "t" || len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
				t.Fatalf("described member %+v", m)
			}
		}

		// c leaves: its partitions go to a and b.
		leave := hbReq(c)
		leave.MemberEpoch = -1
		if r := e.c.ConsumerGroupHeartbeat(e.ctx, leave); r.ErrorCode != 0 || r.MemberEpoch != -1 || *r.MemberID != "c" {
			t.Fatalf("leave: %+v", r)
		}
		d = e.converge(a, b)
		if count(a) != 3 || count(b) != 3 || d.Epoch != 4 || len(d.Members) != 2 {
			t.Fatalf("after leave: owned %d/%d epoch %d members %d", count(a), count(b), d.Epoch, len(d.Members))
		}
	})
}

func TestConsumerGroupErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{Topics: newTopics(map[string]int32{"t": 2}).get, ConsumerMaxGroupSize: 2}, nil)
		a := &client{id: "a"}
		e.hb(a)
		for _, tc := range []struct {
			name   string
			mutate func(r *kmsg.ConsumerGroupHeartbeatRequest)
			code   int16
		}{
			{"epoch ahead", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 5 }, 110},
			{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "zz" }, 25},
			{"empty member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, 42},
			{"join without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "n", 0 }, 42},
			{"join owning partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
				r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis, r.SubscribedTopicNames = "n", 0, 1, []string{"t"}
			}, 42},
			{"join without subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
				r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis, r.Topics = "n", 0, 1, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			}, 42},
			{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, 42},
			{"bad epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, 42},
			{"unsupported assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, 112},
			{"invalid regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("(") }, 128},
		} {
			r := hbReq(a)
			tc.mutate(r)
			if got := e.c.ConsumerGroupHeartbeat(e.ctx, r); got.ErrorCode != tc.code {
				t.Errorf("%s: error %d, want %d", tc.name, got.ErrorCode, tc.code)
			}
		}
		e.hb(&client{id: "b"})
		if r := e.hb(&client{id: "c"}); r.ErrorCode != 81 {
			t.Fatalf("third member of a group of max 2: error %d, want GROUP_MAX_SIZE_REACHED (81)", r.ErrorCode)
		}
		// The previous epoch is accepted while the member owns no more than
		// its assignment: the answer that bumped it may have been lost.
		prev := *a
		if r := e.hb(a); r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %d", r.ErrorCode)
		}
		e.hb(a)
		if a.epoch == prev.epoch {
			t.Fatalf("a's epoch did not move: %d", a.epoch)
		}
		if r := e.c.ConsumerGroupHeartbeat(e.ctx, hbReq(&prev)); r.ErrorCode != 0 && prev.epoch != a.epoch-1 {
			t.Fatalf("heartbeat at previous epoch: error %d", r.ErrorCode)
		}
		// A member that was a member before its epoch moved twice is fenced.
		stale := prev
		stale.epoch = 0
		stale.owned = nil
		if r := e.c.ConsumerGroupHeartbeat(e.ctx, hbReq(&stale)); a.epoch >= 2 && r.ErrorCode != 110 {
			t.Fatalf("rejoin at epoch 0 of a member at epoch %d: error %d, want FENCED_MEMBER_EPOCH", a.epoch, r.ErrorCode)
		}
		other := "other0"
		for i := 1; e.c.PartitionFor(other) != e.c.PartitionFor(testGroup); i++ {
			other = fmt.Sprintf("other%d", i)
		}
		if r := e.c.ConsumerGroupHeartbeat(e.ctx, &kmsg.ConsumerGroupHeartbeatRequest{Version: 1, Group: other, MemberID: "x", MemberEpoch: 3}); r.ErrorCode != 25 {
			t.Fatalf("heartbeat to unknown group: error %d, want UNKNOWN_MEMBER_ID", r.ErrorCode)
		}
	})
}

func TestConsumerGroupSessionAndRebalanceTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t, newTopics(map[string]int32{"t": 4}), nil)
		a, b := &client{id: "a"}, &client{id: "b"}
		e.converge(a, b)
		// Only a heartbeats; b's session (45 s) expires.
		for range 10 {
			time.Sleep(5 * time.Second)
			e.hb(a)
		}
		synctest.Wait()
		d := e.converge(a)
		if len(d.Members) != 1 || count(a) != 4 {
			t.Fatalf("after b's session expired: members %d, a owns %d", len(d.Members), count(a))
		}
		if r := e.hb(b); r.ErrorCode != 25 {
			t.Fatalf("expired member: error %d, want UNKNOWN_MEMBER_ID", r.ErrorCode)
		}

		// c joins; a keeps heartbeating but never revokes: after its
		// rebalance timeout (30 s) it is fenced and c gets everything.
		c := &client{id: "c"}
		e.hb(c)
		stubborn := *a
		for range 7 {
			time.Sleep(5 * time.Second)
			e.c.ConsumerGroupHeartbeat(e.ctx, hbReq(&stubborn))
			e.hb(c)
		}
		synctest.Wait()
		if r := e.c.ConsumerGroupHeartbeat(e.ctx, hbReq(&stubborn)); r.ErrorCode != 25 {
			t.Fatalf("member that never revoked: error %d, want UNKNOWN_MEMBER_ID", r.ErrorCode)
		}
		if d := e.converge(c); count(c) != 4 || len(d.Members) != 1 {
			t.Fatalf("c owns %d", count(c))
		}
	})
}

func TestConsumerGroupRegexAndMetadataChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTopics(map[string]int32{"orders-eu": 2, "orders-us": 2, "payments": 3})
		e := newConsumerEnv(t, ts, nil)
		a := &client{id: "a", regex: kmsg.StringPtr("orders-.*")}
		d := e.converge(a)
		if count(a) != 4 || len(a.owned[topicID("payments")]) != 0 || d.Members[0].SubscribedTopicRegex == nil {
			t.Fatalf("regex member owns %v", a.owned)
		}
		epoch := d.Epoch
		// A new matching topic and new partitions bump the group epoch.
		ts.set("orders-asia", 1)
		ts.set("orders-eu", 3)
		d = e.converge(a)
		if d.Epoch != epoch+1 || count(a) != 6 {
			t.Fatalf("after topic changes: epoch %d (was %d), owns %d", d.Epoch, epoch, count(a))
		}
		// A deleted topic is taken away.
		ts.mu.Lock()
		delete(ts.m, "orders-us")
		ts.mu.Unlock()
		if d = e.converge(a); count(a) != 4 || d.Epoch != epoch+2 {
			t.Fatalf("after deletion: owns %d epoch %d", count(a), d.Epoch)
		}
	})
}

func TestConsumerGroupRangeAssignor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t, newTopics(map[string]int32{"t": 5}), nil)
		a := &client{id: "a", assignor: kmsg.StringPtr("range")}
		b := &client{id: "b", assignor: kmsg.StringPtr("range")}
		d := e.converge(a, b)
		id := topicID("t")
		if d.AssignorName != "range" || !slices.Equal(a.owned[id], []int32{0, 1, 2}) || !slices.Equal(b.owned[id], []int32{3, 4}) {
			t.Fatalf("range: assignor %s a=%v b=%v", d.AssignorName, a.owned[id], b.owned[id])
		}
	})
}

func TestConsumerGroupStaticMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t, newTopics(map[string]int32{"t": 4}), nil)
		s1 := &client{id: "s1", instance: kmsg.StringPtr("inst")}
		b := &client{id: "b"}
		e.converge(s1, b)
		owned := slices.Clone(s1.owned[topicID("t")])
		epoch := e.describe().Epoch

		// The same instance id cannot join while its member is active.
		if r := e.hb(&client{id: "s2", instance: kmsg.StringPtr("inst")}); r.ErrorCode != 111 {
			t.Fatalf("duplicate instance: error %d, want UNRELEASED_INSTANCE_ID (111)", r.ErrorCode)
		}
		leave := hbReq(s1)
		leave.MemberEpoch = -2
		if r := e.c.ConsumerGroupHeartbeat(e.ctx, leave); r.ErrorCode != 0 || r.MemberEpoch != -2 {
			t.Fatalf("static leave: %+v", r)
		}
		// The restarted instance takes over its partitions at once, without
		// a new group epoch.
		s2 := &client{id: "s2", instance: kmsg.StringPtr("inst")}
		r := e.hb(s2)
		if r.ErrorCode != 0 || !slices.Equal(s2.owned[topicID("t")], owned) || r.MemberEpoch != epoch {
			t.Fatalf("static rejoin: error %d owns %v (want %v) epoch %d (want %d)", r.ErrorCode, s2.owned, owned, r.MemberEpoch, epoch)
		}
		d := e.describe()
		if d.Epoch != epoch || len(d.Members) != 2 || d.State != "Stable" {
			t.Fatalf("after static rejoin: %+v", d)
		}
		if r := e.hb(s1); r.ErrorCode != 82 {
			t.Fatalf("replaced static member: error %d, want FENCED_INSTANCE_ID (82)", r.ErrorCode)
		}
	})
}

func TestConsumerGroupReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTopics(map[string]int32{"t": 6})
		log := &memLog{}
		e := newConsumerEnv(t, ts, log)
		a, b := &client{id: "a", instance: kmsg.StringPtr("ia")}, &client{id: "b"}
		e.converge(a, b)
		c := &client{id: "c"}
		e.hb(c) // mid-rebalance: a and b must revoke
		e.hb(a)
		before := e.describe()
		commit := commitReq(a.epoch, "a", "t", 10, 20)
		if codes := commitCodes(e.c.OffsetCommit(e.ctx, commit)); !slices.Equal(codes, []int16{0, 0}) {
			t.Fatalf("commit at member epoch: %v", codes)
		}
		e.c.Close()

		e2 := newConsumerEnv(t, ts, log)
		after := e2.describe()
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("after replay:\n%+v\nwant\n%+v", after, before)
		}
		if got := e2.fetchAll(); got["t-0"] != 10 || got["t-1"] != 20 {
			t.Fatalf("offsets after replay: %v", got)
		}
		d := e2.converge(a, b, c)
		if count(a) != 2 || count(b) != 2 || count(c) != 2 || d.Epoch != before.Epoch {
			t.Fatalf("after replay and convergence: %d/%d/%d epoch %d", count(a), count(b), count(c), d.Epoch)
		}
	})
}

func TestConsumerGroupClassicNamespace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t, newTopics(map[string]int32{"t": 2}), nil)
		a := &client{id: "a"}
		e.converge(a)
		if r := e.c.JoinGroup(e.ctx, joinReq("", nil, consumerMeta("t"))); r.ErrorCode != 23 {
			t.Fatalf("JoinGroup of a consumer group: error %d, want INCONSISTENT_GROUP_PROTOCOL (23)", r.ErrorCode)
		}
		dg := e.c.DescribeGroups(e.ctx, &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{testGroup}}).Groups[0]
		if dg.State != "Stable" || dg.ProtocolType != "consumer" || dg.Protocol != "uniform" || len(dg.Members) != 1 {
			t.Fatalf("DescribeGroups of a consumer group: %+v", dg)
		}
		var as kmsg.ConsumerMemberAssignment
		if err := as.ReadFrom(dg.Members[0].MemberAssignment); err != nil || len(as.Topics) != 1 || as.Topics[0].Topic != "t" || len(as.Topics[0].Partitions) != 2 {
			t.Fatalf("assignment %+v: %v", as, err)
		}
		l := e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"Consumer"}})
		if len(l.Groups) != 1 || l.Groups[0].GroupType != "consumer" || l.Groups[0].GroupState != "Stable" || l.Groups[0].ProtocolType != "consumer" {
			t.Fatalf("ListGroups: %+v", l.Groups)
		}

		// Offsets: the generation field carries the member epoch.
		if codes := commitCodes(e.c.OffsetCommit(e.ctx, commitReq(a.epoch+1, "a", "t", 5))); codes[0] != 113 {
			t.Fatalf("commit at a wrong epoch: %v, want STALE_MEMBER_EPOCH (113)", codes)
		}
		if codes := commitCodes(e.c.OffsetCommit(e.ctx, commitReq(-1, "", "t", 5))); codes[0] != 25 {
			t.Fatalf("simple commit to a live consumer group: %v, want UNKNOWN_MEMBER_ID", codes)
		}
		fetch := &kmsg.OffsetFetchRequest{Version: 9, Groups: []kmsg.OffsetFetchRequestGroup{{Group: testGroup, MemberID: kmsg.StringPtr("a"), MemberEpoch: a.epoch - 1}}}
		if r := e.c.OffsetFetch(e.ctx, fetch); r.Groups[0].ErrorCode != 113 {
			t.Fatalf("fetch at a stale epoch: %d", r.Groups[0].ErrorCode)
		}
		if r := e.c.DeleteGroups(e.ctx, &kmsg.DeleteGroupsRequest{Groups: []string{testGroup}}); r.Groups[0].ErrorCode != 68 {
			t.Fatalf("deleting a live consumer group: %d, want NON_EMPTY_GROUP", r.Groups[0].ErrorCode)
		}

		// Once empty, JoinGroup converts the group to classic...
		leave := hbReq(a)
		leave.MemberEpoch = -1
		e.c.ConsumerGroupHeartbeat(e.ctx, leave)
		if r := e.c.JoinGroup(e.ctx, joinReq("", nil, consumerMeta("t"))); r.ErrorCode != 79 {
			t.Fatalf("JoinGroup of an empty consumer group: %d, want MEMBER_ID_REQUIRED", r.ErrorCode)
		}
		if d := e.describe(); d.ErrorCode != 69 {
			t.Fatalf("ConsumerGroupDescribe of a classic group: %d, want GROUP_ID_NOT_FOUND", d.ErrorCode)
		}
		// ...and a live classic group refuses consumer heartbeats.
		members, _ := e.stableGroup(1)
		_ = members
		if r := e.hb(&client{id: "x"}); r.ErrorCode != 69 {
			t.Fatalf("consumer heartbeat to a classic group: %d, want GROUP_ID_NOT_FOUND", r.ErrorCode)
		}
	})
}
