package group_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/group"
)

// smember is a streams group member as a test drives it: what it owns.
type smember struct {
	id     string
	epoch  int32
	active map[string][]int32
	stand  map[string][]int32
}

func streamsTopo() *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s.SubtopologyID, s.SourceTopics = "0", []string{"in"}
	s.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "app-store-changelog"}}
	t.Subtopologies = append(t.Subtopologies, s)
	return &t
}

// shb heartbeats m, reporting what it owns, and takes in its new tasks.
func (e *env) shb(m *smember) *kmsg.StreamsGroupHeartbeatResponse {
	e.t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = testGroup, m.id, m.epoch
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = toTasks(m.active), toTasks(m.stand), []kmsg.TaskIDs{}
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis, req.ProcessID, req.Topology = 10_000, kmsg.StringPtr("process-"+m.id), streamsTopo()
		req.ActiveTasks, req.StandbyTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	r, _ := e.c.StreamsGroupHeartbeat(e.ctx, req)
	if r.ErrorCode != 0 {
		e.t.Fatalf("heartbeat of %s: code %d %v", m.id, r.ErrorCode, r.ErrorMessage)
	}
	m.epoch = r.MemberEpoch
	if r.ActiveTasks != nil {
		m.active, m.stand = fromTasks(r.ActiveTasks), fromTasks(r.StandbyTasks)
	}
	return r
}

func toTasks(m map[string][]int32) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for s, ps := range m {
		out = append(out, kmsg.TaskIDs{SubtopologyID: s, Partitions: ps})
	}
	return out
}

func fromTasks(ts []kmsg.TaskIDs) map[string][]int32 {
	out := map[string][]int32{}
	for _, t := range ts {
		out[t.SubtopologyID] = t.Partitions
	}
	return out
}

func ntasks(m map[string][]int32) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

func (e *env) sdescribe() kmsg.StreamsGroupDescribeResponseGroup {
	e.t.Helper()
	return e.c.StreamsGroupDescribe(e.ctx, &kmsg.StreamsGroupDescribeRequest{Groups: []string{testGroup}}).Groups[0]
}

func streamsEnv(t *testing.T, standbys int) *env {
	ts := newTopics(map[string]int32{"in": 4, "app-store-changelog": 4})
	return newEnv(t, group.Config{Topics: ts.get, Streams: group.StreamsConfig{NumStandbyReplicas: standbys, InitialRebalanceDelay: -1}}, nil)
}

// TestStreamsGroupTimeouts: a member that does not revoke within its
// rebalance timeout is removed and the other gets its tasks; a member
// that stops heartbeating is removed after the session timeout.
func TestStreamsGroupTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := streamsEnv(t, 0)
		a, b := &smember{id: "a"}, &smember{id: "b"}
		if e.shb(a); a.epoch != 1 || ntasks(a.active) != 4 {
			t.Fatalf("a alone: epoch %d tasks %v, want all 4 at epoch 1", a.epoch, a.active)
		}
		e.shb(b)
		if e.shb(a); ntasks(a.active) != 2 || a.epoch != 1 {
			t.Fatalf("a told to revoke: epoch %d tasks %v", a.epoch, a.active)
		}
		// a goes silent without revoking: b waits for the two tasks.
		for range 2 {
			time.Sleep(4 * time.Second)
			if e.shb(b); ntasks(b.active) != 0 {
				t.Fatalf("b got %v while a still owns them", b.active)
			}
		}
		time.Sleep(4 * time.Second)
		synctest.Wait()
		// 12 s passed: a's 10 s rebalance timeout removed it.
		d := e.sdescribe()
		if len(d.Members) != 1 || d.Members[0].MemberID != "b" {
			t.Fatalf("after a's rebalance timeout: members %+v, want b alone", d.Members)
		}
		if e.shb(b); ntasks(b.active) != 4 {
			t.Fatalf("b after a was removed: %v, want all 4 tasks", b.active)
		}
		// b goes silent: after 45 s (group.streams.session.timeout.ms) the group is empty.
		time.Sleep(46 * time.Second)
		synctest.Wait()
		if d := e.sdescribe(); d.State != "Empty" || len(d.Members) != 0 {
			t.Fatalf("after b's session timeout: %s with %d members, want Empty", d.State, len(d.Members))
		}
	})
}

// TestStreamsGroupStandbys: with streams.num.standby.replicas 1 each task
// has a standby on the member of the other process, never where it is
// active.
func TestStreamsGroupStandbys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := streamsEnv(t, 1)
		a, b := &smember{id: "a"}, &smember{id: "b"}
		e.shb(a)
		e.shb(b)
		for range 4 {
			e.shb(a)
			e.shb(b)
		}
		// Changelog offsets a member reports are described.
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = testGroup, "a", a.epoch
		req.TaskOffsets = []kmsg.TaskOffset{{SubtopologyID: "0", Partition: 1, Offset: 42}}
		if r, _ := e.c.StreamsGroupHeartbeat(e.ctx, req); r.ErrorCode != 0 {
			t.Fatalf("heartbeat with task offsets: %+v", r)
		}
		for _, m := range e.sdescribe().Members {
			if m.MemberID == "a" && (len(m.TaskOffsets) != 1 || m.TaskOffsets[0].Offset != 42) {
				t.Fatalf("a's described task offsets %+v", m.TaskOffsets)
			}
		}
		if ntasks(a.active) != 2 || ntasks(b.active) != 2 || ntasks(a.stand) != 2 || ntasks(b.stand) != 2 {
			t.Fatalf("active %v / %v, standby %v / %v; want 2 of each on each member", a.active, b.active, a.stand, b.stand)
		}
		for _, p := range a.active["0"] {
			for _, q := range a.stand["0"] {
				if p == q {
					t.Fatalf("task 0_%d is both active and standby on a", p)
				}
			}
		}
	})
}

// TestStreamsGroupInitialDelay: a new group's first assignment waits for
// group.streams.initial.rebalance.delay.ms, so members that join meanwhile
// get their share at once instead of one member getting everything.
func TestStreamsGroupInitialDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTopics(map[string]int32{"in": 4, "app-store-changelog": 4})
		e := newEnv(t, group.Config{Topics: ts.get}, nil) // Kafka's 3 s delay
		a, b := &smember{id: "a"}, &smember{id: "b"}
		r := e.shb(a)
		if a.epoch != 1 || ntasks(a.active) != 0 || len(r.Status) != 1 || r.Status[0].StatusCode != 5 {
			t.Fatalf("a's join: epoch %d tasks %v status %+v; want epoch 1, no tasks, ASSIGNMENT_DELAYED", a.epoch, a.active, r.Status)
		}
		time.Sleep(time.Second)
		if r := e.shb(b); b.epoch != 1 || ntasks(b.active) != 0 || len(r.Status) != 1 || r.Status[0].StatusCode != 5 {
			t.Fatalf("b's join during the delay: epoch %d tasks %v status %+v", b.epoch, b.active, r.Status)
		}
		if d := e.sdescribe(); d.State != "Assigning" || d.Epoch != 2 || d.AssignmentEpoch != 1 {
			t.Fatalf("during the delay: %s epoch %d assignment epoch %d; want Assigning 2/1", d.State, d.Epoch, d.AssignmentEpoch)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		e.shb(a)
		if r := e.shb(b); len(r.Status) != 0 || a.epoch != 3 || b.epoch != 3 || ntasks(a.active) != 2 || ntasks(b.active) != 2 {
			t.Fatalf("after the delay: a %v at %d, b %v at %d, status %+v; want 2 tasks each at epoch 3", a.active, a.epoch, b.active, b.epoch, r.Status)
		}
	})
}

// TestStreamsGroupTopologyRedeploy: once every member left, a member with
// a changed topology (same epoch: a redeployed application) replaces the
// stored one, and its tasks are those of the new topology.
func TestStreamsGroupTopologyRedeploy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTopics(map[string]int32{"in": 4, "app-store-changelog": 4, "other": 2})
		e := newEnv(t, group.Config{Topics: ts.get, Streams: group.StreamsConfig{InitialRebalanceDelay: -1}}, nil)
		a := &smember{id: "a"}
		e.shb(a)
		leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		leave.Group, leave.MemberID, leave.MemberEpoch = testGroup, "a", -1
		if r, _ := e.c.StreamsGroupHeartbeat(e.ctx, leave); r.ErrorCode != 0 {
			t.Fatalf("leave: %+v", r)
		}
		topo := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s.SubtopologyID, s.SourceTopics = "other-sub", []string{"other"}
		topo.Subtopologies = append(topo.Subtopologies, s)
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.ProcessID, req.Topology = testGroup, "b", 10_000, kmsg.StringPtr("pb"), &topo
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		r, _ := e.c.StreamsGroupHeartbeat(e.ctx, req)
		if r.ErrorCode != 0 || len(r.ActiveTasks) != 1 || r.ActiveTasks[0].SubtopologyID != "other-sub" || len(r.ActiveTasks[0].Partitions) != 2 {
			t.Fatalf("redeployed member: %+v; want the two tasks of subtopology other-sub", r)
		}
		if d := e.sdescribe(); d.Topology == nil || len(d.Topology.Subtopologies) != 1 || d.Topology.Subtopologies[0].SubtopologyID != "other-sub" {
			t.Fatalf("described topology %+v", d.Topology)
		}
	})
}
