package controller

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassign asks for one partition's reassignment (nil target cancels) and
// returns the partition's error code.
func (cl *cluster) reassign(topic string, part int32, target []int32) int16 {
	cl.t.Helper()
	return cl.reassignV(1, true, topic, part, target)
}

func (cl *cluster) reassignV(version int16, allowRF bool, topic string, part int32, target []int32) int16 {
	cl.t.Helper()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.AllowReplicationFactorChange = version, allowRF
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = part, target
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := cl.c.AlterPartitionReassignments(ctx(cl.t), req)
	if resp.ErrorCode != 0 || resp.Version != version || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		cl.t.Fatalf("reassign %s-%d: %+v", topic, part, resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// moving renders a partition as "replicas +adding -removing leader isr".
func (cl *cluster) moving(name string, p int32) string {
	cl.t.Helper()
	ti, _ := cl.loader.Image().Topic(name)
	pi := ti.Partitions[p]
	return fmt.Sprintf("%v +%v -%v %d %v", pi.Replicas, pi.AddingReplicas, pi.RemovingReplicas, pi.Leader, pi.ISR)
}

// listed renders ListPartitionReassignments for topics (nil: all).
func (cl *cluster) listed(topics map[string][]int32) string {
	cl.t.Helper()
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	if topics != nil {
		req.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{}
		for name, parts := range topics {
			t := kmsg.NewListPartitionReassignmentsRequestTopic()
			t.Topic, t.Partitions = name, parts
			req.Topics = append(req.Topics, t)
		}
	}
	resp := cl.c.ListPartitionReassignments(ctx(cl.t), req)
	if resp.ErrorCode != 0 {
		cl.t.Fatalf("list: %d", resp.ErrorCode)
	}
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s-%d %v +%v -%v", t.Topic, p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas))
		}
	}
	return fmt.Sprint(out)
}

func TestReassignmentCompletesWhenAddingReplicasJoinTheISR(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "", "", "")
	id := cl.createManual("t", []int32{1, 2, 3}, []int32{2, 3, 4})
	if code := cl.reassign("t", 0, []int32{4, 5, 2}); code != 0 {
		t.Fatalf("start: %d", code)
	}
	// Target first, then the leaving replicas; the ISR and leader stay.
	if got := cl.moving("t", 0); got != "[4 5 2 1 3] +[4 5] -[1 3] 1 [1 2 3]" {
		t.Fatalf("during the move: %s", got)
	}
	if got := cl.part("t", 0); got != "1/0/1 [1 2 3]" {
		t.Fatalf("epochs during the move: %s", got)
	}
	if got := cl.listed(nil); got != "[t-0 [4 5 2 1 3] +[4 5] -[1 3]]" {
		t.Fatalf("list all: %s", got)
	}
	if got := cl.listed(map[string][]int32{"t": {1, 0, 9}, "nope": {0}}); got != "[t-0 [4 5 2 1 3] +[4 5] -[1 3]]" {
		t.Fatalf("list some: %s", got)
	}
	// One adding replica in sync is not enough.
	if rp := cl.alter(3, 1, id, 0, 1, 1, 2, 3, 4).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
		t.Fatalf("add 4: %+v", rp)
	}
	if got := cl.moving("t", 0); got != "[4 5 2 1 3] +[4 5] -[1 3] 1 [1 2 3 4]" {
		t.Fatalf("with 4 in sync: %s", got)
	}
	// The last one completes the move in the same batch; leader 1 leaves,
	// so the first target replica in the ISR leads.
	rp := cl.alter(3, 1, id, 0, 2, 1, 2, 3, 4, 5).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || rp.LeaderID != 4 || rp.LeaderEpoch != 1 || fmt.Sprint(rp.ISR) != "[2 4 5]" {
		t.Fatalf("add 5: %+v", rp)
	}
	if got := cl.moving("t", 0); got != "[4 5 2] +[] -[] 4 [2 4 5]" {
		t.Fatalf("after the move: %s", got)
	}
	if got := cl.listed(nil); got != "[]" {
		t.Fatalf("list after: %s", got)
	}
	// Partition 1 was not touched.
	if got := cl.moving("t", 1); got != "[2 3 4] +[] -[] 2 [2 3 4]" {
		t.Fatalf("other partition: %s", got)
	}
}

func TestReassignmentWithoutNewReplicasCompletesAtOnce(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "")
	cl.createManual("t", []int32{1, 2, 3})
	if code := cl.reassign("t", 0, []int32{3, 2}); code != 0 {
		t.Fatalf("shrink: %d", code)
	}
	if got := cl.moving("t", 0); got != "[3 2] +[] -[] 3 [2 3]" {
		t.Fatalf("after shrink: %s", got)
	}
	// Reordering only changes the preferred leader.
	if code := cl.reassign("t", 0, []int32{2, 3}); code != 0 {
		t.Fatalf("reorder: %d", code)
	}
	if got := cl.moving("t", 0); got != "[2 3] +[] -[] 3 [2 3]" {
		t.Fatalf("after reorder: %s", got)
	}
	// The same assignment again writes nothing.
	off := cl.loader.Image().Offset
	if code := cl.reassign("t", 0, []int32{2, 3}); code != 0 || cl.loader.Image().Offset != off {
		t.Fatalf("no-op: %d, offset %d → %d", code, off, cl.loader.Image().Offset)
	}
}

func TestCancelReassignmentRevertsToOriginalReplicas(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "", "")
	id := cl.createManual("t", []int32{1, 2})
	if code := cl.reassign("t", 0, nil); code != kerr.NoReassignmentInProgress.Code {
		t.Fatalf("cancel with none: %d", code)
	}
	if code := cl.reassign("t", 0, []int32{3, 4}); code != 0 {
		t.Fatalf("start: %d", code)
	}
	// 3 catches up, 4 does not: the move stays in progress.
	if rp := cl.alter(3, 1, id, 0, 1, 1, 2, 3).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
		t.Fatalf("add 3: %+v", rp)
	}
	if got := cl.moving("t", 0); got != "[3 4 1 2] +[3 4] -[1 2] 1 [1 2 3]" {
		t.Fatalf("during: %s", got)
	}
	if code := cl.reassign("t", 0, nil); code != 0 {
		t.Fatalf("cancel: %d", code)
	}
	if got := cl.moving("t", 0); got != "[1 2] +[] -[] 1 [1 2]" {
		t.Fatalf("after cancel: %s", got)
	}
	if got := cl.listed(nil); got != "[]" {
		t.Fatalf("list after cancel: %s", got)
	}
}

func TestChangeReassignmentInProgress(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "", "")
	cl.createManual("t", []int32{1, 2})
	if code := cl.reassign("t", 0, []int32{1, 3}); code != 0 {
		t.Fatalf("start: %d", code)
	}
	// A new target while 3 is still catching up: 3 leaves again, 4 is
	// added, and the original replica 2 is still the one leaving.
	if code := cl.reassign("t", 0, []int32{1, 4}); code != 0 {
		t.Fatalf("change: %d", code)
	}
	if got := cl.moving("t", 0); got != "[1 4 3 2] +[4] -[3 2] 1 [1 2]" {
		t.Fatalf("after change: %s", got)
	}
	// Back to the original assignment: nothing to add, so it completes.
	if code := cl.reassign("t", 0, []int32{1, 2}); code != 0 {
		t.Fatalf("back: %d", code)
	}
	if got := cl.moving("t", 0); got != "[1 2] +[] -[] 1 [1 2]" {
		t.Fatalf("back to the start: %s", got)
	}
}

func TestReassignmentErrors(t *testing.T) {
	cl := newCluster(t, t.TempDir(), nil, "", "", "", "")
	cl.createManual("t", []int32{1, 2})
	cl.heartbeat(4, true, false) // fenced
	cases := []struct {
		name   string
		topic  string
		part   int32
		target []int32
		want   *kerr.Error
	}{
		{"unknown topic", "nope", 0, []int32{1}, kerr.UnknownTopicOrPartition},
		{"unknown partition", "t", 3, []int32{1}, kerr.UnknownTopicOrPartition},
		{"empty", "t", 0, []int32{}, kerr.InvalidReplicaAssignment},
		{"duplicate", "t", 0, []int32{1, 3, 1}, kerr.InvalidReplicaAssignment},
		{"unregistered broker", "t", 0, []int32{1, 9}, kerr.InvalidReplicaAssignment},
		{"fenced new broker", "t", 0, []int32{1, 4}, kerr.InvalidReplicaAssignment},
	}
	for _, c := range cases {
		if got := cl.reassign(c.topic, c.part, c.target); got != c.want.Code {
			t.Errorf("%s: got %d, want %s", c.name, got, c.want.Message)
		}
	}
	if got := cl.reassignV(1, false, "t", 0, []int32{1, 2, 3}); got != kerr.InvalidReplicationFactor.Code {
		t.Errorf("rf change not allowed: %d", got)
	}
	if got := cl.reassignV(0, false, "t", 0, []int32{1, 2, 3}); got != 0 {
		t.Errorf("v0 always allows rf changes: %d", got)
	}
	if got := cl.moving("t", 0); got != "[1 2 3] +[3] -[] 1 [1 2]" {
		t.Fatalf("only the valid request applied: %s", got)
	}
}

func TestReassignmentSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cl := newCluster(t, dir, nil, "", "", "")
	cl.createManual("t", []int32{1, 2})
	if code := cl.reassign("t", 0, []int32{2, 3}); code != 0 {
		t.Fatalf("start: %d", code)
	}
	cl.c.Close()
	cl.node.Close()
	h := start(t, dir, 0)
	ti, _ := h.loader.Image().Topic("t")
	p := ti.Partitions[0]
	if got := fmt.Sprintf("%v +%v -%v", p.Replicas, p.AddingReplicas, p.RemovingReplicas); got != "[2 3 1] +[3] -[1]" {
		t.Fatalf("after restart: %s", got)
	}
}
