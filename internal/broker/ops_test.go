package broker_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// Cluster operations end to end on one node through kadm: log dirs,
// DescribeQuorum, elections and reassignments (forwarded to the
// controller, which is this node).

func TestDescribeLogDirs(t *testing.T) {
	dir := t.TempDir()
	s := servertest.StartIn(t, dir)
	c := connect(t, servertest.Addr(s))
	if _, err := c.adm.CreateTopic(tctx(t), 2, 1, nil, "dirs"); err != nil {
		t.Fatal(err)
	}
	res := c.cl.ProduceSync(tctx(t), &kgo.Record{Topic: "dirs", Value: []byte("some value")})
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	written := res[0].Record.Partition
	all, err := c.adm.DescribeAllLogDirs(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("brokers: %v", all)
	}
	for _, dirs := range all {
		d, ok := dirs[filepath.Clean(dir)]
		if !ok || d.Err != nil || len(dirs) != 1 {
			t.Fatalf("dirs %v, want only %s", dirs, dir)
		}
		full, ok0 := d.Topics.Lookup("dirs", written)
		empty, ok1 := d.Topics.Lookup("dirs", 1-written)
		if !ok0 || !ok1 || full.Size <= int64(len("some value")) || empty.Size != 0 || full.OffsetLag != 0 {
			t.Fatalf("partitions: written %+v, empty %+v", full, empty)
		}
		if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
			t.Fatalf("disk: total %d usable %d", d.TotalBytes, d.UsableBytes)
		}
	}
	// A filter: only what was asked for.
	var set kadm.TopicsSet
	set.Add("dirs", 1)
	some, err := c.adm.DescribeAllLogDirs(tctx(t), set)
	if err != nil {
		t.Fatal(err)
	}
	for _, dirs := range some {
		d := dirs[filepath.Clean(dir)]
		if _, ok := d.Topics.Lookup("dirs", 0); ok || len(d.Topics) != 1 || len(d.Topics["dirs"]) != 1 {
			t.Fatalf("filtered: %+v", d.Topics)
		}
	}
}

func TestDescribeQuorum(t *testing.T) {
	s := servertest.Start(t)
	c := connect(t, servertest.Addr(s))
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(tctx(t), c.cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response: %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch < 1 || p.HighWatermark <= 1 || len(p.CurrentVoters) != 1 {
		t.Fatalf("partition: %+v", p)
	}
	if v := p.CurrentVoters[0]; v.ReplicaID != 1 || v.LogEndOffset < p.HighWatermark || v.LastFetchTimestamp <= 0 {
		t.Fatalf("voter: %+v", v)
	}
}

func TestElectLeadersAndReassignmentsForwarded(t *testing.T) {
	s := servertest.Start(t)
	c := connect(t, servertest.Addr(s))
	if _, err := c.adm.CreateTopic(tctx(t), 2, 1, nil, "ops"); err != nil {
		t.Fatal(err)
	}
	// All partitions: every leader is already preferred, so nothing is
	// listed; a named partition says why.
	all, err := c.adm.ElectLeaders(tctx(t), kadm.ElectPreferredReplica, nil)
	if err != nil || len(all) != 0 {
		t.Fatalf("elect all: %v %v", all, err)
	}
	var set kadm.TopicsSet
	set.Add("ops", 1)
	one, err := c.adm.ElectLeaders(tctx(t), kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	if r := one["ops"][1]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("elect ops-1: %+v", one)
	}

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("ops", 0, []int32{1})
	req.Assign("ops", 1, []int32{7})
	req.Assign("nope", 0, []int32{1})
	res, err := c.adm.AlterPartitionAssignments(tctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["ops"][0]; r.Err != nil {
		t.Errorf("same assignment: %v", r.Err)
	}
	if r := res["ops"][1]; !errors.Is(r.Err, kerr.InvalidReplicaAssignment) {
		t.Errorf("unregistered broker: %+v", r)
	}
	if r := res["nope"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %+v", r)
	}
	var cancel kadm.AlterPartitionAssignmentsReq
	cancel.CancelAssign("ops", 0)
	res, err = c.adm.AlterPartitionAssignments(tctx(t), cancel)
	if err != nil || !errors.Is(res["ops"][0].Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	listed, err := c.adm.ListPartitionReassignments(tctx(t), nil)
	if err != nil || len(listed) != 0 {
		t.Fatalf("list: %+v %v", listed, err)
	}
}
