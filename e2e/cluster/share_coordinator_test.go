package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareStateSurvivesCoordinatorKill writes a share partition's state
// through its share coordinator with the share-group state RPCs, as a
// share partition leader does, SIGKILLs the leader of the partition of
// __share_group_state that holds it, and reads the same state from the
// new coordinator: every acknowledged write survives, and writes go on.
func TestShareStateSurvivesCoordinatorKill(t *testing.T) {
	c := startCluster(t, 3, "share.coordinator.state.topic.replication.factor=3", "share.coordinator.state.topic.min.isr=2",
		"share.coordinator.state.topic.num.partitions=3", "share.coordinator.snapshot.update.records.per.snapshot=4")
	cl := client(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "queue")
	if err != nil || created.Err != nil {
		t.Fatalf("create topic: %v %v", err, created.Err)
	}
	key := "workers:" + base64.RawURLEncoding.EncodeToString(created.ID[:]) + ":0"

	// coordinator finds the share coordinator of key, waiting while it
	// has none.
	coordinator := func() int32 {
		t.Helper()
		var last string
		for ctx.Err() == nil {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType, req.CoordinatorKeys = 2, []string{key}
			resp, err := req.RequestWith(ctx, cl)
			switch {
			case err != nil:
				last = err.Error()
			case resp.Coordinators[0].ErrorCode != 0:
				last = kerr.ErrorForCode(resp.Coordinators[0].ErrorCode).Error()
			default:
				return resp.Coordinators[0].NodeID
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("no share coordinator for %s: %s", key, last)
		return -1
	}
	// send sends req to the coordinator until it answers with something
	// other than "not (yet) the coordinator"; code reads the answer.
	send := func(req kmsg.Request, code func(kmsg.Response) int16) kmsg.Response {
		t.Helper()
		var last string
		for ctx.Err() == nil {
			node := coordinator()
			resp, err := cl.Broker(int(node)).Request(ctx, req)
			if err == nil && !coordinatorMoved(code(resp)) {
				return resp
			}
			last = fmt.Sprintf("node %d: %v %v", node, err, resp)
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("%s: %s", kmsg.NameForKey(req.Key()), last)
		return nil
	}

	initReq := kmsg.NewPtrInitializeShareGroupStateRequest()
	initReq.GroupID = "workers"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = created.ID
	ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	ip.StartOffset = 0
	it.Partitions = append(it.Partitions, ip)
	initReq.Topics = append(initReq.Topics, it)
	if code := send(initReq, initCode).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("initialize: %v", kerr.ErrorForCode(code))
	}
	read := func(leaderEpoch int32) (int64, [][4]int64) {
		t.Helper()
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = "workers"
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = created.ID
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.LeaderEpoch = leaderEpoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		p := send(req, readCode).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("read: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		var out [][4]int64
		for _, b := range p.StateBatches {
			out = append(out, [4]int64{b.FirstOffset, b.LastOffset, int64(b.DeliveryState), int64(b.DeliveryCount)})
		}
		return p.StartOffset, out
	}
	// write acknowledges offset off (as one record's acknowledgement is
	// written), moving the start offset past the first 5 every 10.
	write := func(leaderEpoch int32, off int64) {
		t.Helper()
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = "workers"
		wt := kmsg.NewWriteShareGroupStateRequestTopic()
		wt.TopicID = created.ID
		wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		wp.LeaderEpoch, wp.StartOffset = leaderEpoch, -1
		if off%10 == 9 {
			wp.StartOffset = off - 4
		}
		b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = off, off, 2, 1
		wp.StateBatches = append(wp.StateBatches, b)
		wt.Partitions = append(wt.Partitions, wp)
		req.Topics = append(req.Topics, wt)
		if code := send(req, writeCode).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("write %d: %v", off, kerr.ErrorForCode(code))
		}
	}

	if start, batches := read(1); start != 0 || len(batches) != 0 {
		t.Fatalf("first read: start %d batches %v", start, batches)
	}
	for off := range int64(20) {
		write(1, off)
	}
	want := [][4]int64{{15, 19, 2, 1}}
	if start, batches := read(1); start != 15 || !reflect.DeepEqual(batches, want) {
		t.Fatalf("before the kill: start %d batches %v, want 15 %v", start, batches, want)
	}

	victim := coordinator()
	t.Logf("killing share coordinator node %d", victim)
	c.Node(victim).Kill()
	if start, batches := read(2); start != 15 || !reflect.DeepEqual(batches, want) {
		t.Fatalf("after the kill: start %d batches %v, want 15 %v", start, batches, want)
	}
	if now := coordinator(); now == victim {
		t.Fatalf("node %d still the coordinator after its kill", now)
	}
	for off := int64(20); off < 30; off++ {
		write(2, off)
	}
	want = [][4]int64{{25, 29, 2, 1}}
	if start, batches := read(2); start != 25 || !reflect.DeepEqual(batches, want) {
		t.Fatalf("writes after the failover: start %d batches %v, want 25 %v", start, batches, want)
	}
}

// coordinatorMoved reports an answer that means "ask the coordinator
// again": it moved, is loading, or is not available.
func coordinatorMoved(code int16) bool {
	return code == kerr.NotCoordinator.Code || code == kerr.CoordinatorLoadInProgress.Code || code == kerr.CoordinatorNotAvailable.Code
}

func initCode(r kmsg.Response) int16 {
	return r.(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}

func readCode(r kmsg.Response) int16 {
	return r.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}

func writeCode(r kmsg.Response) int16 {
	return r.(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}
