package share

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/coordtest"
)

var (
	topicA  = [16]byte{0xa}
	unknown = [16]byte{0xff}
)

// newTestCoordinator serves every key from one partition replayed from
// log; topicA has 4 partitions, every other topic is unknown.
func newTestCoordinator(t *testing.T, log *coordtest.MemLog, perSnapshot int) *Coordinator {
	t.Helper()
	c := New(Config{NumPartitions: 1, SnapshotUpdateRecordsPerSnapshot: perSnapshot,
		TopicPartitions: func(id [16]byte) (int32, bool) { return 4, id == topicA },
		Now:             func() time.Time { return time.UnixMilli(1_000_000) }})
	t.Cleanup(c.Close)
	c.Load(0, 7, log)
	p, _ := c.rt.Get(0)
	<-p.Loaded()
	return c
}

func initialize(c *Coordinator, group string, topic [16]byte, partition, stateEpoch int32, start int64) int16 {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.StartOffset = partition, stateEpoch, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.InitializeState(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func write(c *Coordinator, group string, partition, stateEpoch, leaderEpoch int32, start int64, batches ...Batch) int16 {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = topicA
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = partition, stateEpoch, leaderEpoch, start
	for _, b := range batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
		rp.StateBatches = append(rp.StateBatches, sb)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.WriteState(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func read(c *Coordinator, group string, partition, leaderEpoch int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = topicA
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = partition, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.ReadState(context.Background(), req).Topics[0].Partitions[0]
}

func summary(c *Coordinator, group string, partition int32) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version = 1
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = topicA
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition = partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.ReadStateSummary(context.Background(), req).Topics[0].Partitions[0]
}

func del(c *Coordinator, group string, partition int32) int16 {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewDeleteShareGroupStateRequestTopic()
	rt.TopicID = topicA
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.DeleteState(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func batchesOf(p kmsg.ReadShareGroupStateResponseTopicPartition) []Batch {
	var out []Batch
	for _, b := range p.StateBatches {
		out = append(out, Batch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
	}
	return out
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wc := int16(0)
	if want != nil {
		wc = want.Code
	}
	if got != wc {
		t.Fatalf("%s: code %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func TestLifecycleAndMerges(t *testing.T) {
	log := &coordtest.MemLog{}
	c := newTestCoordinator(t, log, 500)

	wantCode(t, "write before initialize", write(c, "g", 0, 0, 0, 0, Batch{0, 1, 2, 1}), kerr.InvalidRequest)
	wantCode(t, "read before initialize", read(c, "g", 0, 1).ErrorCode, kerr.InvalidRequest)
	if s := summary(c, "g", 0); s.ErrorCode != 0 || s.StartOffset != -1 || s.DeliveryCompleteCount != -1 {
		t.Fatalf("summary of nothing: %+v", s)
	}

	wantCode(t, "initialize", initialize(c, "g", topicA, 0, 1, 100), nil)
	r := read(c, "g", 0, 3)
	if r.ErrorCode != 0 || r.StartOffset != 100 || r.StateEpoch != 1 || len(r.StateBatches) != 0 {
		t.Fatalf("read after initialize: %+v", r)
	}
	// The read recorded leader epoch 3: it fences older leaders.
	if s := summary(c, "g", 0); s.LeaderEpoch != 3 || s.StateEpoch != 1 || s.StartOffset != 100 || s.DeliveryCompleteCount != 0 {
		t.Fatalf("summary after read: %+v", s)
	}
	wantCode(t, "write at an older leader epoch", write(c, "g", 0, 1, 2, 100, Batch{100, 101, 2, 1}), kerr.FencedLeaderEpoch)
	wantCode(t, "write at an older state epoch", write(c, "g", 0, 0, 3, 100, Batch{100, 101, 2, 1}), kerr.FencedStateEpoch)
	wantCode(t, "negative leader epoch", write(c, "g", 0, 1, -1, 100), kerr.InvalidRequest)

	wantCode(t, "write 1", write(c, "g", 0, 1, 3, 100, Batch{100, 109, 0, 1}), nil)
	wantCode(t, "write 2", write(c, "g", 0, 1, 3, -1, Batch{100, 104, 2, 1}, Batch{105, 105, 0, 2}), nil)
	want := []Batch{{100, 104, 2, 1}, {105, 105, 0, 2}, {106, 109, 0, 1}}
	if got := batchesOf(read(c, "g", 0, 3)); !reflect.DeepEqual(got, want) {
		t.Fatalf("merged batches %v, want %v", got, want)
	}
	// Moving the start offset drops what lies below it; it never moves back.
	wantCode(t, "advance start", write(c, "g", 0, 1, 3, 105), nil)
	wantCode(t, "start behind", write(c, "g", 0, 1, 3, 50), nil)
	r = read(c, "g", 0, 3)
	if want := []Batch{{105, 105, 0, 2}, {106, 109, 0, 1}}; r.StartOffset != 105 || !reflect.DeepEqual(batchesOf(r), want) {
		t.Fatalf("after moving the start: start %d batches %v, want 105 %v", r.StartOffset, batchesOf(r), want)
	}

	// Re-initializing at a newer state epoch resets; an older one is fenced.
	wantCode(t, "initialize at an older state epoch", initialize(c, "g", topicA, 0, 0, 0), kerr.FencedStateEpoch)
	wantCode(t, "re-initialize", initialize(c, "g", topicA, 0, 2, 200), nil)
	r = read(c, "g", 0, 3)
	if r.StartOffset != 200 || r.StateEpoch != 2 || len(r.StateBatches) != 0 {
		t.Fatalf("after re-initialize: %+v", r)
	}

	wantCode(t, "unknown topic", initialize(c, "g", unknown, 0, 0, 0), kerr.UnknownTopicOrPartition)
	wantCode(t, "partition past the topic", initialize(c, "g", topicA, 9, 0, 0), kerr.UnknownTopicOrPartition)

	wantCode(t, "delete", del(c, "g", 0), nil)
	wantCode(t, "delete again", del(c, "g", 0), nil)
	if s := summary(c, "g", 0); s.StartOffset != -1 || s.StateEpoch != 0 {
		t.Fatalf("summary after delete: %+v", s)
	}
	wantCode(t, "read after delete", read(c, "g", 0, 3).ErrorCode, kerr.InvalidRequest)
}

// TestSnapshotsAndReplay checks that every Nth write is a snapshot, and
// that a coordinator loading the same log has the same state.
func TestSnapshotsAndReplay(t *testing.T) {
	log := &coordtest.MemLog{}
	c := newTestCoordinator(t, log, 2)
	wantCode(t, "initialize", initialize(c, "g", topicA, 1, 0, 0), nil)
	wantCode(t, "initialize other", initialize(c, "h", topicA, 1, 0, 0), nil)
	for i := int64(0); i < 6; i++ {
		wantCode(t, "write", write(c, "g", 1, 0, 0, -1, Batch{i * 10, i*10 + 4, 2, 1}), nil)
	}
	wantCode(t, "write other", write(c, "h", 1, 0, 0, 0, Batch{0, 9, 4, 5}), nil)
	wantCode(t, "delete other", del(c, "h", 1), nil)
	var types []int16
	for _, kv := range log.Records() {
		typ, k, _, err := decodeRecord(kv)
		if err != nil {
			t.Fatal(err)
		}
		if k.GroupID == "g" {
			types = append(types, typ)
		}
	}
	// initialize, then update, update, snapshot (2 updates since the last
	// snapshot), update, update, snapshot.
	if want := []int16{0, 1, 1, 0, 1, 1, 0}; !reflect.DeepEqual(types, want) {
		t.Fatalf("record types %v, want %v", types, want)
	}
	before := read(c, "g", 1, 0)
	c.Close()

	c2 := newTestCoordinator(t, log, 2)
	after := read(c2, "g", 1, 0)
	if !reflect.DeepEqual(batchesOf(before), batchesOf(after)) || before.StartOffset != after.StartOffset || len(after.StateBatches) != 6 {
		t.Fatalf("replayed state differs: before %+v after %+v", before, after)
	}
	wantCode(t, "deleted key stays deleted", read(c2, "h", 1, 0).ErrorCode, kerr.InvalidRequest)
}

func TestCoordinatorErrors(t *testing.T) {
	log := &coordtest.MemLog{}
	c := newTestCoordinator(t, log, 500)
	wantCode(t, "initialize", initialize(c, "g", topicA, 0, 0, 0), nil)
	log.FailNext(errors.New("disk on fire"))
	wantCode(t, "failed append", write(c, "g", 0, 0, 0, 0, Batch{0, 0, 2, 1}), kerr.CoordinatorNotAvailable)
	if r := read(c, "g", 0, 0); len(r.StateBatches) != 0 {
		t.Fatalf("a failed write changed the state: %+v", r)
	}
	c.Unload(0)
	wantCode(t, "unloaded", read(c, "g", 0, 0).ErrorCode, kerr.NotCoordinator)

	// A partition still replaying answers COORDINATOR_LOAD_IN_PROGRESS.
	slow := &coordtest.MemLog{Block: make(chan struct{})}
	c.Load(0, 8, slow)
	wantCode(t, "loading", read(c, "g", 0, 0).ErrorCode, kerr.CoordinatorLoadInProgress)
	close(slow.Block)

	// Requests Kafka answers with no results at all.
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = "g"
	if resp := c.WriteState(context.Background(), req); len(resp.Topics) != 0 {
		t.Fatalf("no topics: %+v", resp)
	}
}

func TestTopicsDeletedDropsTheirState(t *testing.T) {
	log := &coordtest.MemLog{}
	c := newTestCoordinator(t, log, 500)
	wantCode(t, "initialize", initialize(c, "g", topicA, 0, 0, 10), nil)
	wantCode(t, "initialize other group", initialize(c, "h", topicA, 1, 0, 20), nil)
	c.TopicsDeleted([][16]byte{unknown}) // holds nothing
	c.TopicsDeleted([][16]byte{topicA})
	deadline := time.Now().Add(5 * time.Second)
	for summary(c, "g", 0).StartOffset != -1 || summary(c, "h", 1).StartOffset != -1 {
		if time.Now().After(deadline) {
			t.Fatalf("state of the deleted topic still there: %+v %+v", summary(c, "g", 0), summary(c, "h", 1))
		}
		time.Sleep(10 * time.Millisecond)
	}
	tombstones := 0
	for _, kv := range log.Records() {
		if kv.Value == nil {
			tombstones++
		}
	}
	if tombstones != 2 {
		t.Fatalf("%d tombstones in the log, want 2", tombstones)
	}
}

// A partition named twice, in one topic or in two entries of the same
// topic, is answered once, as Kafka's coordinator does.
func TestRepeatedPartitionsAnsweredOnce(t *testing.T) {
	c := newTestCoordinator(t, &coordtest.MemLog{}, 500)
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = "g"
	for _, parts := range [][]int32{{1, 0, 1}, {0, 2}} {
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = topicA
		for _, p := range parts {
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := c.InitializeState(context.Background(), req)
	var got []int32
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			got = append(got, rp.Partition)
		}
	}
	if len(resp.Topics) != 1 || !reflect.DeepEqual(got, []int32{1, 0, 2}) {
		t.Fatalf("answered %d topics, partitions %v; want 1 topic, [1 0 2]", len(resp.Topics), got)
	}
	if len(req.Topics) != 2 {
		t.Fatal("the caller's request was changed")
	}
}
