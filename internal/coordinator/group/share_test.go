package group_test

import (
	"reflect"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/group"
)

func shareHB(e *env, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	e.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = testGroup, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	return e.c.ShareGroupHeartbeat(e.ctx, req)
}

func shareDescribe(e *env) kmsg.ShareGroupDescribeResponseGroup {
	e.t.Helper()
	r := e.c.ShareGroupDescribe(e.ctx, &kmsg.ShareGroupDescribeRequest{GroupIDs: []string{testGroup}})
	return r.Groups[0]
}

func shareParts(r *kmsg.ShareGroupHeartbeatResponse) []int32 {
	var ps []int32
	if r.Assignment != nil {
		for _, t := range r.Assignment.TopicPartitions {
			ps = append(ps, t.Partitions...)
		}
	}
	slices.Sort(ps)
	return ps
}

// Share members get their target at once; with more members than
// partitions, partitions are shared; a leaving member's partitions go to
// the others; the state survives a reload from the log.
func TestShareGroupHeartbeatAssigns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTopics(map[string]int32{"t": 2})
		log := &memLog{}
		e := newEnv(t, group.Config{Topics: ts.get}, log)
		if r := shareHB(e, "a", 0, "t"); r.ErrorCode != 0 || r.MemberEpoch != 1 || !slices.Equal(shareParts(r), []int32{0, 1}) {
			t.Fatalf("a joins: error %d epoch %d parts %v", r.ErrorCode, r.MemberEpoch, shareParts(r))
		}
		r := shareHB(e, "b", 0, "t")
		if r.MemberEpoch != 2 || len(shareParts(r)) != 1 {
			t.Fatalf("b joins: epoch %d parts %v, want epoch 2 and one partition", r.MemberEpoch, shareParts(r))
		}
		ra := shareHB(e, "a", 1)
		if ra.MemberEpoch != 2 || len(shareParts(ra)) != 1 || shareParts(ra)[0] == shareParts(r)[0] {
			t.Fatalf("a after b joined: epoch %d parts %v (b has %v)", ra.MemberEpoch, shareParts(ra), shareParts(r))
		}
		// A third member shares a partition.
		rc := shareHB(e, "c", 0, "t")
		if rc.MemberEpoch != 3 || len(shareParts(rc)) != 1 {
			t.Fatalf("c joins: epoch %d parts %v", rc.MemberEpoch, shareParts(rc))
		}
		// Stale and unknown epochs are refused.
		if r := shareHB(e, "a", 7); r.ErrorCode != 110 { // FENCED_MEMBER_EPOCH
			t.Fatalf("bad epoch: error %d", r.ErrorCode)
		}
		if r := shareHB(e, "zz", 3); r.ErrorCode != 25 { // UNKNOWN_MEMBER_ID
			t.Fatalf("unknown member: error %d", r.ErrorCode)
		}
		if r := shareHB(e, "d", 0); r.ErrorCode != 42 { // INVALID_REQUEST: no subscription
			t.Fatalf("join without topics: error %d", r.ErrorCode)
		}
		d := shareDescribe(e)
		if d.ErrorCode != 0 || d.GroupState != "Stable" || len(d.Members) != 3 || d.GroupEpoch != 3 || d.Assignor != "simple" {
			t.Fatalf("describe: %+v", d)
		}

		e.c.Close()
		e2 := newEnv(t, group.Config{Topics: ts.get}, log)
		if after := shareDescribe(e2); !reflect.DeepEqual(after, d) {
			t.Fatalf("after replay:\n%+v\nwant\n%+v", after, d)
		}
		if r := shareHB(e2, "b", 2); r.ErrorCode != 0 || r.MemberEpoch != 3 {
			t.Fatalf("b after replay: error %d epoch %d", r.ErrorCode, r.MemberEpoch)
		}
		// b and c leave: a gets both partitions at the next epoch.
		if r := shareHB(e2, "b", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
			t.Fatalf("b leaves: error %d epoch %d", r.ErrorCode, r.MemberEpoch)
		}
		shareHB(e2, "c", -1)
		if r := shareHB(e2, "a", 2); r.MemberEpoch != 5 || !slices.Equal(shareParts(r), []int32{0, 1}) {
			t.Fatalf("a alone: epoch %d parts %v", r.MemberEpoch, shareParts(r))
		}
		// DescribeGroups describes classic groups only.
		dr := e2.c.DescribeGroups(e2.ctx, &kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{testGroup}}).Groups[0]
		if dr.ErrorCode != 69 || dr.State != "Dead" {
			t.Fatalf("DescribeGroups of a share group: error %d state %s", dr.ErrorCode, dr.State)
		}
		// A consumer group of the same id is refused.
		if r := e2.c.ConsumerGroupHeartbeat(e2.ctx, &kmsg.ConsumerGroupHeartbeatRequest{Group: testGroup, MemberID: "x", RebalanceTimeoutMillis: 1000, SubscribedTopicNames: []string{"t"}, Topics: []kmsg.ConsumerGroupHeartbeatRequestTopic{}}); r.ErrorCode != 69 { // GROUP_ID_NOT_FOUND
			t.Fatalf("consumer heartbeat for a share group: error %d", r.ErrorCode)
		}
	})
}

// A member that stops heartbeating is removed after the session timeout.
func TestShareGroupSessionTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{Topics: newTopics(map[string]int32{"t": 2}).get, Share: group.ShareConfig{SessionTimeout: 10 * time.Second}}, nil)
		epoch := shareHB(e, "a", 0, "t").MemberEpoch
		shareHB(e, "b", 0, "t")
		for range 3 {
			time.Sleep(6 * time.Second)
			r := shareHB(e, "a", epoch)
			if r.ErrorCode != 0 {
				t.Fatalf("a's heartbeat: error %d", r.ErrorCode)
			}
			epoch = r.MemberEpoch
		}
		synctest.Wait()
		d := shareDescribe(e)
		if len(d.Members) != 1 || d.Members[0].MemberID != "a" {
			t.Fatalf("members after b's session expired: %+v", d.Members)
		}
	})
}
