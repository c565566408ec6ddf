package group_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestSimpleCommitAndFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := group.Config{OffsetMetadataMaxBytes: 4, PartitionExists: func(topic string, p int32) bool { return p < 2 }}
		e := newEnv(t, cfg, nil)
		r := commitReq(-1, "", "t", 10, 20, 30)
		r.Topics[0].Partitions[1].Metadata = kmsg.StringPtr("12345")
		if got := commitCodes(e.c.OffsetCommit(e.ctx, r)); fmt.Sprint(got) != "[0 12 3]" {
			t.Fatalf("codes %v, want [0 12 3] (ok, OFFSET_METADATA_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION)", got)
		}
		recs := e.log.Records()
		if len(recs) != 1 {
			t.Fatalf("%d records, want 1", len(recs))
		}
		var k kmsg.OffsetCommitKey
		var v kmsg.OffsetCommitValue
		if err := k.ReadFrom(recs[0].Key); err != nil || k.Version != 1 || k.Group != testGroup || k.Topic != "t" || k.Partition != 0 {
			t.Fatalf("key %+v %v", k, err)
		}
		if err := v.ReadFrom(recs[0].Value); err != nil || v.Version != 3 || v.Offset != 10 || v.LeaderEpoch != 5 ||
			v.Metadata != "md" || v.CommitTimestamp != time.Now().UnixMilli() {
			t.Fatalf("value %+v %v", v, err)
		}

		// v1 fetch of listed partitions: -1 for none, per-partition fields.
		f := kmsg.NewPtrOffsetFetchRequest()
		f.Version = 1
		f.Group = testGroup
		f.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
		fr := e.c.OffsetFetch(e.ctx, f)
		p := fr.Topics[0].Partitions
		if p[0].Offset != 10 || *p[0].Metadata != "md" || p[1].Offset != -1 || *p[1].Metadata != "" || p[1].ErrorCode != 0 {
			t.Fatalf("fetch v1 %+v", p)
		}
		// v5 carries the leader epoch.
		f.Version = 5
		if fr := e.c.OffsetFetch(e.ctx, f); fr.Topics[0].Partitions[0].LeaderEpoch != 5 || fr.ErrorCode != 0 {
			t.Fatalf("fetch v5 %+v", fr)
		}
		// v8 batches groups; an unknown group has no offsets and no error.
		f8 := kmsg.NewPtrOffsetFetchRequest()
		f8.Version = 8
		f8.Groups = []kmsg.OffsetFetchRequestGroup{{Group: testGroup}, {Group: "nope"}, {Group: ""}}
		f8r := e.c.OffsetFetch(e.ctx, f8)
		if len(f8r.Groups) != 3 || len(f8r.Groups[0].Topics) != 1 || f8r.Groups[0].Topics[0].Partitions[0].Offset != 10 ||
			f8r.Groups[2].ErrorCode != 24 {
			t.Fatalf("fetch v8 %+v", f8r)
		}
		if f8r.Groups[1].ErrorCode != 0 && f8r.Groups[1].ErrorCode != 16 {
			t.Fatalf("unknown group: %d", f8r.Groups[1].ErrorCode)
		}
		// A generation for a group that does not exist is stale.
		r2 := commitReq(3, "m", "t", 1)
		r2.Group = "g2"
		for e.c.PartitionFor(r2.Group) != e.c.PartitionFor(testGroup) {
			r2.Group += "x"
		}
		if got := commitCodes(e.c.OffsetCommit(e.ctx, r2)); got[0] != 22 {
			t.Fatalf("commit to unknown group with generation: %v, want ILLEGAL_GENERATION", got)
		}
		// A failed append answers COORDINATOR_NOT_AVAILABLE (NOT_COORDINATOR
		// when leadership moved) and changes nothing.
		e.log.FailNext(errors.New("disk on fire"))
		if got := commitCodes(e.c.OffsetCommit(e.ctx, commitReq(-1, "", "t", 99))); got[0] != 15 {
			t.Fatalf("failed append: %v", got)
		}
		e.log.FailNext(fmt.Errorf("moved: %w", coordinator.ErrNotLeader))
		if got := commitCodes(e.c.OffsetCommit(e.ctx, commitReq(-1, "", "t", 99))); got[0] != 16 {
			t.Fatalf("lost leadership: %v", got)
		}
		if got := e.fetchAll(); got["t-0"] != 10 {
			t.Fatalf("after failed commits: %v", got)
		}
	})
}

func TestCommitChecksMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		ids, gen := e.stableGroup(2)
		for _, tc := range []struct {
			gen    int32
			member string
			want   int16
		}{
			{gen, ids[1], 0},
			{gen + 1, ids[1], 22},
			{gen, "stranger", 25},
			{-1, "", 25}, // simple commits need an empty group
		} {
			if got := commitCodes(e.c.OffsetCommit(e.ctx, commitReq(tc.gen, tc.member, "t", 42))); got[0] != tc.want {
				t.Errorf("commit gen %d member %q: %v, want %d", tc.gen, tc.member, got, tc.want)
			}
		}
	})
}

func TestReplayAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		e := newEnv(t, group.Config{}, log)
		ids, gen := e.stableGroup(2)
		e.c.OffsetCommit(e.ctx, commitReq(gen, ids[0], "t", 5, 6))
		e.c.OffsetCommit(e.ctx, commitReq(gen, ids[0], "t", 7)) // overwrites t-0
		e.c.Close()

		e2 := newEnv(t, group.Config{}, log)
		if got := e2.fetchAll(); got["t-0"] != 7 || got["t-1"] != 6 || len(got) != 2 {
			t.Fatalf("replayed offsets %v, want t-0=7 t-1=6", got)
		}
		d := e2.c.DescribeGroups(e2.ctx, &kmsg.DescribeGroupsRequest{Groups: []string{testGroup}}).Groups[0]
		if d.State != "Stable" || len(d.Members) != 2 || string(d.Members[0].MemberAssignment) != "a-0" || d.Protocol != "range" {
			t.Fatalf("replayed group %+v", d)
		}
		// Members resume where they were, without a rebalance.
		if code := e2.heartbeat(gen, ids[0], nil); code != 0 {
			t.Fatalf("heartbeat after restart: %d", code)
		}
		if got := commitCodes(e2.c.OffsetCommit(e2.ctx, commitReq(gen, ids[1], "t", 8))); got[0] != 0 {
			t.Fatalf("commit after restart: %v", got)
		}
		// ids[1] never heartbeats: its fresh session runs out and it is removed.
		for range 4 {
			time.Sleep(3 * time.Second)
			e2.heartbeat(gen, ids[0], nil)
		}
		if code := e2.heartbeat(gen, ids[1], nil); code != 25 {
			t.Fatalf("silent member after restart: %d, want UNKNOWN_MEMBER_ID", code)
		}
	})
}

func TestDeleteGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		ids, gen := e.stableGroup(1)
		e.c.OffsetCommit(e.ctx, commitReq(gen, ids[0], "t", 1, 2))
		del := func() int16 {
			return e.c.DeleteGroups(e.ctx, &kmsg.DeleteGroupsRequest{Groups: []string{testGroup}}).Groups[0].ErrorCode
		}
		if code := del(); code != 68 {
			t.Fatalf("delete active group: %d, want NON_EMPTY_GROUP", code)
		}
		e.c.LeaveGroup(e.ctx, &kmsg.LeaveGroupRequest{Group: testGroup, MemberID: ids[0]})
		n := len(e.log.Records())
		if code := del(); code != 0 {
			t.Fatalf("delete empty group: %d", code)
		}
		recs := e.log.Records()[n:]
		if len(recs) != 3 || recs[0].Value != nil || recs[1].Value != nil || recs[2].Value != nil {
			t.Fatalf("want 2 offset tombstones and a group tombstone, got %d records", len(recs))
		}
		var gk kmsg.GroupMetadataKey
		if err := gk.ReadFrom(recs[2].Key); err != nil || gk.Version != 2 || gk.Group != testGroup {
			t.Fatalf("group tombstone key %+v %v", gk, err)
		}
		if code := del(); code != 69 {
			t.Fatalf("delete again: %d, want GROUP_ID_NOT_FOUND", code)
		}
		if got := e.fetchAll(); len(got) != 0 {
			t.Fatalf("offsets after delete: %v", got)
		}
		d := e.c.DescribeGroups(e.ctx, &kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{testGroup}}).Groups[0]
		if d.ErrorCode != 69 || d.State != "Dead" {
			t.Fatalf("describe deleted group v6: %+v", d)
		}
		// The deletion survives a restart.
		e.c.Close()
		e2 := newEnv(t, group.Config{}, e.log)
		if got := e2.fetchAll(); len(got) != 0 {
			t.Fatalf("offsets after replaying delete: %v", got)
		}
	})
}

func TestOffsetExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := group.Config{OffsetsRetention: time.Hour, RetentionCheckInterval: time.Minute}
		e := newEnv(t, cfg, nil)
		e.c.OffsetCommit(e.ctx, commitReq(-1, "", "t", 1))
		time.Sleep(30 * time.Minute)
		e.c.OffsetCommit(e.ctx, commitReq(-1, "", "u", 2))
		time.Sleep(31 * time.Minute) // t-0 is 61 min old, u-0 31 min
		if got := e.fetchAll(); len(got) != 1 || got["u-0"] != 2 {
			t.Fatalf("after first expiry: %v", got)
		}
		time.Sleep(30 * time.Minute)
		if got := e.fetchAll(); len(got) != 0 {
			t.Fatalf("after second expiry: %v", got)
		}
		recs := e.log.Records()
		if last := recs[len(recs)-1]; last.Value != nil {
			t.Fatal("last record is not a tombstone")
		}
		var gk kmsg.GroupMetadataKey
		if err := gk.ReadFrom(recs[len(recs)-1].Key); err != nil || gk.Version != 2 {
			t.Fatalf("empty simple group not tombstoned: %+v %v", gk, err)
		}
		if l := e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{}); len(l.Groups) != 0 {
			t.Fatalf("groups after expiry: %+v", l.Groups)
		}
	})
}

func TestOffsetDeleteAndListGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		ids, gen := e.stableGroup(1) // subscribed to "t"
		e.c.OffsetCommit(e.ctx, commitReq(gen, ids[0], "t", 1))
		e.c.OffsetCommit(e.ctx, commitReq(gen, ids[0], "old", 1))
		r := e.c.OffsetDelete(e.ctx, &kmsg.OffsetDeleteRequest{Group: testGroup, Topics: []kmsg.OffsetDeleteRequestTopic{
			{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
			{Topic: "old", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		}})
		if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 86 || r.Topics[1].Partitions[0].ErrorCode != 0 {
			t.Fatalf("offset delete %+v", r)
		}
		if got := e.fetchAll(); len(got) != 1 || got["t-0"] != 1 {
			t.Fatalf("after offset delete: %v", got)
		}
		if r := e.c.OffsetDelete(e.ctx, &kmsg.OffsetDeleteRequest{Group: "missing"}); r.ErrorCode != 69 && r.ErrorCode != 16 {
			t.Fatalf("offset delete of unknown group: %d", r.ErrorCode)
		}
		l := e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{Version: 5})
		if len(l.Groups) != 1 || l.Groups[0].Group != testGroup || l.Groups[0].GroupState != "Stable" ||
			l.Groups[0].ProtocolType != "consumer" || l.Groups[0].GroupType != "classic" {
			t.Fatalf("list %+v", l)
		}
		if l := e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{Version: 5, StatesFilter: []string{"empty"}}); len(l.Groups) != 0 {
			t.Fatalf("states filter: %+v", l.Groups)
		}
		if l := e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{Version: 5, StatesFilter: []string{"stable"}, TypesFilter: []string{"Classic"}}); len(l.Groups) != 1 {
			t.Fatalf("filters: %+v", l.Groups)
		}
		if l := e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"consumer"}}); len(l.Groups) != 0 {
			t.Fatalf("types filter consumer: %+v", l.Groups)
		}
	})
}

// TestConcurrentTraffic runs commits, fetches, heartbeats and joins of many
// groups at once; run with -race.
func TestConcurrentTraffic(t *testing.T) {
	c := group.New(group.Config{NumPartitions: 4, InitialRebalanceDelay: -1})
	defer c.Close()
	logs := make([]*memLog, 4)
	for p := range logs {
		logs[p] = &memLog{}
		c.Load(int32(p), 0, logs[p])
	}
	ctx := t.Context()
	// Loading ends before the traffic starts; after that,
	// COORDINATOR_LOAD_IN_PROGRESS is an error like any other.
	for w := range 8 {
		g := fmt.Sprintf("grp-%d", w)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			if r := c.Heartbeat(ctx, &kmsg.HeartbeatRequest{Group: g}); r.ErrorCode != 14 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("partition of %s still loading after 30 s", g)
			}
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			g := fmt.Sprintf("grp-%d", w)
			for i := range 50 {
				r := commitReq(-1, "", "t", int64(i))
				r.Group = g
				if codes := commitCodes(c.OffsetCommit(ctx, r)); codes[0] != 0 {
					t.Errorf("commit %s: %v", g, codes)
					return
				}
				f := kmsg.NewPtrOffsetFetchRequest()
				f.Version = 8
				f.Groups = []kmsg.OffsetFetchRequestGroup{{Group: g}}
				if got := c.OffsetFetch(ctx, f).Groups[0].Topics[0].Partitions[0].Offset; got != int64(i) {
					t.Errorf("fetch %s: %d, want %d", g, got, i)
					return
				}
				c.Heartbeat(ctx, &kmsg.HeartbeatRequest{Group: g, MemberID: "x"})
				c.ListGroups(ctx, &kmsg.ListGroupsRequest{})
			}
		})
	}
	wg.Wait()
	l := c.ListGroups(ctx, &kmsg.ListGroupsRequest{})
	if len(l.Groups) != 8 {
		t.Fatalf("%d groups, want 8", len(l.Groups))
	}
}
