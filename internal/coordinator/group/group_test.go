package group_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinSyncThreeMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		var ids []string
		var chans []chan *kmsg.JoinGroupResponse
		start := time.Now()
		for i := range 3 {
			id := e.memberID()
			if !slices.Contains([]string{"client-"}, id[:7]) || len(id) != len("client-")+36 {
				t.Fatalf("member id %q, want client-<uuid>", id)
			}
			ids = append(ids, id)
			chans = append(chans, e.joinAsync(joinReq(id, nil, consumerMeta("t", string(rune('a'+i))))))
			time.Sleep(time.Second)
		}
		var resps []*kmsg.JoinGroupResponse
		for _, ch := range chans {
			resps = append(resps, <-ch)
		}
		// Joins started at 0s, 1s, 2s: the 3 s initial delay is extended
		// once by 3 s because members joined during it, ending at 6 s.
		if waited := time.Since(start); waited != 6*time.Second {
			t.Errorf("join completed after %v, want 6s", waited)
		}
		for i, r := range resps {
			if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != ids[0] || *r.Protocol != "range" ||
				*r.ProtocolType != "consumer" || r.MemberID != ids[i] {
				t.Fatalf("join %d: %+v", i, r)
			}
			if want := 0; i > 0 && len(r.Members) != want {
				t.Errorf("follower %d got %d members", i, len(r.Members))
			}
		}
		if len(resps[0].Members) != 3 {
			t.Fatalf("leader got %d members, want 3", len(resps[0].Members))
		}
		for i, m := range resps[0].Members {
			if m.MemberID != ids[i] || string(m.ProtocolMetadata) != string(consumerMeta("t", string(rune('a'+i)))) {
				t.Errorf("leader member %d: %q", i, m.MemberID)
			}
		}

		// Followers sync first and wait for the leader.
		f1 := e.syncAsync(1, ids[1], nil)
		f2 := e.syncAsync(1, ids[2], nil)
		synctest.Wait()
		select {
		case r := <-f1:
			t.Fatalf("follower answered before the leader synced: %+v", r)
		default:
		}
		if got := len(e.log.Records()); got != 0 {
			t.Fatalf("%d records before leader sync, want 0", got)
		}
		l := e.syncAsync(1, ids[0], map[string]string{ids[0]: "A0", ids[1]: "A1"}) // ids[2] left out
		for i, ch := range []chan *kmsg.SyncGroupResponse{l, f1, f2} {
			r := <-ch
			want := []string{"A0", "A1", ""}[i]
			if r.ErrorCode != 0 || string(r.MemberAssignment) != want || *r.Protocol != "range" {
				t.Errorf("sync %d: code %d assignment %q, want %q", i, r.ErrorCode, r.MemberAssignment, want)
			}
		}

		// The assignment was stored as Kafka's GroupMetadata record.
		recs := e.log.Records()
		if len(recs) != 1 {
			t.Fatalf("%d records, want 1", len(recs))
		}
		var k kmsg.GroupMetadataKey
		var v kmsg.GroupMetadataValue
		if err := k.ReadFrom(recs[0].Key); err != nil || k.Version != 2 || k.Group != testGroup {
			t.Fatalf("key %+v err %v", k, err)
		}
		if err := v.ReadFrom(recs[0].Value); err != nil {
			t.Fatal(err)
		}
		if v.Version != 3 || v.Generation != 1 || *v.Leader != ids[0] || *v.Protocol != "range" || len(v.Members) != 3 ||
			string(v.Members[1].Assignment) != "A1" || v.Members[0].SessionTimeoutMillis != 10_000 ||
			v.Members[0].RebalanceTimeoutMillis != 30_000 || v.Members[0].ClientHost != "/127.0.0.1" {
			t.Fatalf("group value %+v", v)
		}

		d := e.c.DescribeGroups(e.ctx, &kmsg.DescribeGroupsRequest{Groups: []string{testGroup}}).Groups[0]
		if d.State != "Stable" || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 3 ||
			string(d.Members[1].MemberAssignment) != "A1" || d.Members[0].ClientID != "client" {
			t.Fatalf("describe %+v", d)
		}
		for _, id := range ids {
			if code := e.heartbeat(1, id, nil); code != 0 {
				t.Errorf("heartbeat %s: %d", id, code)
			}
		}
	})
}

func TestMemberIDRequiredOnlyFromV4(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{InitialRebalanceDelay: -1}, nil)
		req := joinReq("", nil, consumerMeta("t"))
		req.Version = 3
		r := e.c.JoinGroup(e.ctx, req)
		if r.ErrorCode != 0 || r.Generation != 1 || r.MemberID == "" || r.LeaderID != r.MemberID || *r.Protocol != "range" {
			t.Fatalf("v3 join: %+v", r)
		}
		// An unknown member id is rejected rather than admitted.
		if r := e.c.JoinGroup(e.ctx, joinReq("bogus", nil, consumerMeta("t"))); r.ErrorCode != 25 {
			t.Fatalf("unknown member join: %d, want UNKNOWN_MEMBER_ID", r.ErrorCode)
		}
	})
}

func TestRejoinBumpsGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		ids, gen := e.stableGroup(2)
		// A third member arrives: a rebalance starts.
		newID := e.memberID()
		c3 := e.joinAsync(joinReq(newID, nil, consumerMeta("t")))
		synctest.Wait()
		for _, id := range ids {
			if code := e.heartbeat(gen, id, nil); code != 27 {
				t.Fatalf("heartbeat during rebalance: %d, want REBALANCE_IN_PROGRESS", code)
			}
		}
		if code := e.heartbeat(gen+1, ids[0], nil); code != 22 {
			t.Fatalf("heartbeat with future generation: %d, want ILLEGAL_GENERATION", code)
		}
		// Commits of the old generation are still accepted while preparing.
		if codes := commitCodes(e.c.OffsetCommit(e.ctx, commitReq(gen, ids[0], "t", 7))); codes[0] != 0 {
			t.Fatalf("commit while preparing: %v", codes)
		}
		c1 := e.joinAsync(joinReq(ids[0], nil, consumerMeta("t")))
		c2 := e.joinAsync(joinReq(ids[1], nil, consumerMeta("t")))
		for _, ch := range []chan *kmsg.JoinGroupResponse{c1, c2, c3} {
			if r := <-ch; r.ErrorCode != 0 || r.Generation != gen+1 || r.LeaderID != ids[0] {
				t.Fatalf("rejoin: %+v", r)
			}
		}
		if codes := commitCodes(e.c.OffsetCommit(e.ctx, commitReq(gen+1, ids[0], "t", 8))); codes[0] != 27 {
			t.Fatalf("commit while completing: %v, want REBALANCE_IN_PROGRESS", codes)
		}
		if r := <-e.syncAsync(gen, ids[0], nil); r.ErrorCode != 22 {
			t.Fatalf("stale sync: %d", r.ErrorCode)
		}
		if r := <-e.syncAsync(gen+1, ids[0], map[string]string{}); r.ErrorCode != 0 {
			t.Fatalf("sync: %d", r.ErrorCode)
		}
		// The old generation is now refused, the new one accepted.
		if codes := commitCodes(e.c.OffsetCommit(e.ctx, commitReq(gen, ids[0], "t", 8))); codes[0] != 22 {
			t.Fatalf("stale commit: %v, want ILLEGAL_GENERATION", codes)
		}
		if codes := commitCodes(e.c.OffsetCommit(e.ctx, commitReq(gen+1, newID, "t", 9))); codes[0] != 0 {
			t.Fatalf("commit: %v", codes)
		}
		if got := e.fetchAll(); got["t-0"] != 9 {
			t.Fatalf("fetched %v, want t-0=9", got)
		}
	})
}

func TestRebalanceWaitsForRebalanceTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		ids, gen := e.stableGroup(2)
		start := time.Now()
		// Only the leader rejoins; the other member is dropped when the 30 s
		// rebalance timeout passes, though its session would last (heartbeats).
		c1 := e.joinAsync(joinReq(ids[0], nil, consumerMeta("t")))
		for range 4 {
			time.Sleep(8 * time.Second)
			select {
			case r := <-c1:
				if r.Generation != gen+1 || len(r.Members) != 1 || time.Since(start) < 30*time.Second {
					t.Fatalf("rejoin after %v: %+v", time.Since(start), r)
				}
				if code := e.heartbeat(gen, ids[1], nil); code != 25 {
					t.Fatalf("dropped member heartbeat: %d, want UNKNOWN_MEMBER_ID", code)
				}
				return
			default:
				e.heartbeat(gen, ids[1], nil)
			}
		}
		t.Fatal("rebalance did not complete")
	})
}

func TestSessionTimeoutRemovesMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		ids, gen := e.stableGroup(2)
		for range 3 { // 9 s: both alive
			time.Sleep(3 * time.Second)
			if code := e.heartbeat(gen, ids[0], nil); code != 0 {
				t.Fatalf("heartbeat: %d", code)
			}
		}
		time.Sleep(2 * time.Second) // ids[1] silent for 11 s > 10 s session
		if code := e.heartbeat(gen, ids[0], nil); code != 27 {
			t.Fatalf("after peer expiry: %d, want REBALANCE_IN_PROGRESS", code)
		}
		r := e.c.JoinGroup(e.ctx, joinReq(ids[0], nil, consumerMeta("t")))
		if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 || r.Members[0].MemberID != ids[0] {
			t.Fatalf("rejoin: %+v", r)
		}
		if code := e.heartbeat(gen+1, ids[1], nil); code != 25 {
			t.Fatalf("expired member: %d, want UNKNOWN_MEMBER_ID", code)
		}
	})
}

func TestLeaveGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		ids, gen := e.stableGroup(3)
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version = 5
		req.Group = testGroup
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ids[2]}, {MemberID: "nobody"}}
		r := e.c.LeaveGroup(e.ctx, req)
		if r.ErrorCode != 0 || len(r.Members) != 2 || r.Members[0].ErrorCode != 0 || r.Members[1].ErrorCode != 25 {
			t.Fatalf("leave v5: %+v", r)
		}
		if code := e.heartbeat(gen, ids[0], nil); code != 27 {
			t.Fatalf("after leave: %d, want REBALANCE_IN_PROGRESS", code)
		}
		// v0 leave reports the member's error at the top level.
		old := kmsg.NewPtrLeaveGroupRequest()
		old.Group, old.MemberID = testGroup, "nobody"
		if r := e.c.LeaveGroup(e.ctx, old); r.ErrorCode != 25 || r.Members != nil {
			t.Fatalf("leave v0: %+v", r)
		}
		// Everyone leaves: the group becomes Empty with the next generation.
		old.MemberID = ids[0]
		e.c.LeaveGroup(e.ctx, old)
		old.MemberID = ids[1]
		e.c.LeaveGroup(e.ctx, old)
		d := e.c.DescribeGroups(e.ctx, &kmsg.DescribeGroupsRequest{Groups: []string{testGroup}}).Groups[0]
		if d.State != "Empty" || len(d.Members) != 0 {
			t.Fatalf("describe after all left: %+v", d)
		}
		synctest.Wait()
		recs := e.log.Records()
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(recs[len(recs)-1].Value); err != nil || v.Generation != gen+1 || len(v.Members) != 0 {
			t.Fatalf("empty group record: %+v %v", v, err)
		}
	})
}

func TestStaticMemberRejoinAndFencing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		inst := kmsg.StringPtr("instance-1")
		j1 := e.joinAsync(joinReq("", inst, consumerMeta("t")))
		synctest.Wait()
		fid := e.memberID()
		j2 := e.joinAsync(joinReq(fid, nil, consumerMeta("t")))
		r1, r2 := <-j1, <-j2
		if r1.ErrorCode != 0 || r2.ErrorCode != 0 || r1.LeaderID != r1.MemberID {
			t.Fatalf("joins %+v %+v", r1, r2)
		}
		if r1.Members[0].InstanceID == nil || *r1.Members[0].InstanceID != "instance-1" {
			t.Fatalf("leader's member list lacks instance id: %+v", r1.Members)
		}
		s1 := e.syncAsync(1, r1.MemberID, map[string]string{r1.MemberID: "S", fid: "F"})
		s2 := e.syncAsync(1, fid, nil)
		<-s1
		<-s2
		nrec := len(e.log.Records())

		// The static member restarts: same instance id, no member id.
		r := e.c.JoinGroup(e.ctx, joinReq("", inst, consumerMeta("t")))
		if r.ErrorCode != 0 || r.Generation != 1 || r.MemberID == r1.MemberID || r.LeaderID != r.MemberID ||
			!r.SkipAssignment || len(r.Members) != 2 {
			t.Fatalf("static rejoin: %+v", r)
		}
		if code := e.heartbeat(1, fid, nil); code != 0 {
			t.Fatalf("follower after static rejoin: %d, want no rebalance", code)
		}
		if code := e.heartbeat(1, r1.MemberID, inst); code != 82 {
			t.Fatalf("old member id: %d, want FENCED_INSTANCE_ID", code)
		}
		if codes := commitCodes(e.c.OffsetCommit(e.ctx, func() *kmsg.OffsetCommitRequest {
			c := commitReq(1, r1.MemberID, "t", 1)
			c.InstanceID = inst
			return c
		}())); codes[0] != 82 {
			t.Fatalf("fenced commit: %v", codes)
		}
		if s := <-e.syncAsync(1, r.MemberID, nil); s.ErrorCode != 0 || string(s.MemberAssignment) != "S" {
			t.Fatalf("sync after static rejoin: %+v", s)
		}
		recs := e.log.Records()
		if len(recs) != nrec+1 {
			t.Fatalf("static replacement not stored: %d records, want %d", len(recs), nrec+1)
		}
		var v kmsg.GroupMetadataValue
		_ = v.ReadFrom(recs[len(recs)-1].Value)
		if *v.Leader != r.MemberID || *v.Members[0].InstanceID != "instance-1" || v.Members[0].MemberID != r.MemberID {
			t.Fatalf("stored group %+v", v)
		}
		// As in Kafka, new metadata that leaves the group's protocol choice
		// unchanged does not rebalance either; the member's metadata is
		// replaced (the group leader sees it at the next rebalance).
		ch := e.joinAsync(joinReq("", inst, consumerMeta("t", "u")))
		synctest.Wait()
		if code := e.heartbeat(1, fid, nil); code != 0 {
			t.Fatalf("changed subscription, same protocol: %d, want no rebalance", code)
		}
		if r := <-ch; r.ErrorCode != 0 || r.Generation != 1 {
			t.Fatalf("static rejoin with new subscription: %+v", r)
		}
		d := e.c.DescribeGroups(e.ctx, &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{testGroup}})
		var meta kmsg.ConsumerMemberMetadata
		for _, m := range d.Groups[0].Members {
			if m.InstanceID != nil && *m.InstanceID == "instance-1" {
				if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(meta.Topics) != 2 || meta.Topics[1] != "u" {
			t.Fatalf("stored subscription %v, want [t u]", meta.Topics)
		}
	})
}

func TestJoinErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{InitialRebalanceDelay: -1}, nil)
		check := func(name string, req *kmsg.JoinGroupRequest, want int16) {
			t.Helper()
			if r := e.c.JoinGroup(e.ctx, req); r.ErrorCode != want {
				t.Errorf("%s: error %d, want %d", name, r.ErrorCode, want)
			}
		}
		r := joinReq("", nil, nil)
		r.Group = ""
		check("empty group id", r, 24)
		r = joinReq("", nil, nil)
		r.SessionTimeoutMillis = 1000
		check("session too short", r, 26)
		r.SessionTimeoutMillis = 31 * 60_000
		check("session too long", r, 26)
		r = joinReq("", nil, nil)
		r.ProtocolType = ""
		check("new group without protocol type", r, 23)
		other := "other-group"
		for e.c.PartitionFor(other) == e.c.PartitionFor(testGroup) {
			other += "x"
		}
		r = joinReq("", nil, nil)
		r.Group = other
		check("partition not loaded", r, 16)

		id := e.memberID()
		if r := e.c.JoinGroup(e.ctx, joinReq(id, nil, consumerMeta("t"))); r.ErrorCode != 0 {
			t.Fatalf("join: %d", r.ErrorCode)
		}
		r = joinReq("", nil, nil)
		r.Protocols[0].Name = "roundrobin"
		check("no common protocol", r, 23)
		r = joinReq("", nil, nil)
		r.ProtocolType = "connect"
		check("other protocol type", r, 23)
		full := group.New(group.Config{NumPartitions: 4, MaxGroupSize: 1, InitialRebalanceDelay: -1})
		defer full.Close()
		full.Load(full.PartitionFor(testGroup), 0, &memLog{})
		synctest.Wait()
		v3 := joinReq("", nil, consumerMeta("t"))
		v3.Version = 3
		if r := full.JoinGroup(e.ctx, v3); r.ErrorCode != 0 {
			t.Fatalf("first member: %d", r.ErrorCode)
		}
		if r := full.JoinGroup(e.ctx, v3); r.ErrorCode != 81 {
			t.Errorf("group full: %d, want GROUP_MAX_SIZE_REACHED", r.ErrorCode)
		}
		s := kmsg.NewPtrSyncGroupRequest()
		s.Version = 5
		s.Group, s.Generation, s.MemberID, s.Protocol = testGroup, 1, id, kmsg.StringPtr("roundrobin")
		if r := e.c.SyncGroup(e.ctx, s); r.ErrorCode != 23 {
			t.Errorf("sync with wrong protocol: %d", r.ErrorCode)
		}
	})
}

func TestLoadInProgressAndUnload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{Block: make(chan struct{})}
		c := group.New(group.Config{NumPartitions: 4})
		defer c.Close()
		p := c.PartitionFor(testGroup)
		c.Load(p, 0, log)
		if r := c.Heartbeat(t.Context(), &kmsg.HeartbeatRequest{Group: testGroup}); r.ErrorCode != 14 {
			t.Fatalf("while loading: %d, want COORDINATOR_LOAD_IN_PROGRESS", r.ErrorCode)
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = testGroup
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		if r := c.OffsetFetch(t.Context(), req); r.Topics[0].Partitions[0].ErrorCode != 14 {
			t.Fatalf("v0 fetch while loading: %+v", r)
		}
		close(log.Block)
		synctest.Wait()
		jr := joinReq("", nil, consumerMeta("t"))
		jr.Version = 3
		ch := make(chan *kmsg.JoinGroupResponse, 1)
		go func() { ch <- c.JoinGroup(t.Context(), jr) }()
		synctest.Wait() // parked in the initial rebalance delay
		c.Unload(p)
		if r := <-ch; r.ErrorCode != 16 {
			t.Fatalf("pending join after unload: %d, want NOT_COORDINATOR", r.ErrorCode)
		}
		if r := c.Heartbeat(t.Context(), &kmsg.HeartbeatRequest{Group: testGroup}); r.ErrorCode != 16 {
			t.Fatalf("after unload: %d", r.ErrorCode)
		}
	})
}

func TestPartitionFor(t *testing.T) {
	c := group.New(group.Config{NumPartitions: 50})
	defer c.Close()
	// Java: "hello".hashCode() = 99162322; "polygenelubricants".hashCode() =
	// Integer.MIN_VALUE, which Kafka's Utils.abs maps to 0.
	for g, want := range map[string]int32{"hello": 99162322 % 50, "polygenelubricants": 0, "": 0} {
		if got := c.PartitionFor(g); got != want {
			t.Errorf("PartitionFor(%q) = %d, want %d", g, got, want)
		}
	}
}
