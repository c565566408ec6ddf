package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// shareBatch is a state batch as the share-group state RPCs carry it.
type shareBatch struct {
	First, Last int64
	State       int8
	Count       int16
}

// shareRPC sends share-group state RPCs for one group and topic over a
// franz-go client, as a broker's share partitions do.
type shareRPC struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	topic [16]byte
}

func (s shareRPC) do(ctx context.Context, req kmsg.Request) kmsg.Response {
	s.t.Helper()
	resp, err := s.cl.Request(ctx, req)
	if err != nil {
		s.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func (s shareRPC) initialize(ctx context.Context, partition, stateEpoch int32, start int64) int16 {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = s.group
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = s.topic
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.StartOffset = partition, stateEpoch, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return s.do(ctx, req).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}

func (s shareRPC) write(ctx context.Context, partition, leaderEpoch int32, start int64, dcc int32, batches ...shareBatch) int16 {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = s.group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = s.topic
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.StartOffset, rp.DeliveryCompleteCount = partition, leaderEpoch, start, dcc
	for _, b := range batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Count
		rp.StateBatches = append(rp.StateBatches, sb)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return s.do(ctx, req).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}

func (s shareRPC) read(ctx context.Context, partition, leaderEpoch int32) (code int16, start int64, batches []shareBatch) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = s.group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = s.topic
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = partition, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := s.do(ctx, req).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
	for _, b := range p.StateBatches {
		batches = append(batches, shareBatch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
	}
	return p.ErrorCode, p.StartOffset, batches
}

func (s shareRPC) summary(ctx context.Context, partition int32) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = s.group
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = s.topic
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition = partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return s.do(ctx, req).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]
}

func (s shareRPC) delete(ctx context.Context, partition int32) int16 {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = s.group
	rt := kmsg.NewDeleteShareGroupStateRequestTopic()
	rt.TopicID = s.topic
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return s.do(ctx, req).(*kmsg.DeleteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}

// shareKey is the FindCoordinator key of a share partition.
func shareKey(group string, topic [16]byte, partition int32) string {
	return group + ":" + base64.RawURLEncoding.EncodeToString(topic[:]) + ":" + strconv.Itoa(int(partition))
}

func wantShareCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var wc int16
	if want != nil {
		wc = want.Code
	}
	if got != wc {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// TestShareCoordinatorRPCs drives the share coordinator of a single node
// through the five share-group state RPCs and FindCoordinator's share
// keys, over TCP with franz-go, and checks that the state survives a
// SIGKILL of the node.
func TestShareCoordinatorRPCs(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	addr, kill := startKillable(t, dir)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cl.Close() }()
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "queue")
	if err != nil || created.Err != nil {
		t.Fatalf("create topic: %v %v", err, created.Err)
	}
	s := shareRPC{t: t, cl: cl, group: "workers", topic: created.ID}

	// FindCoordinator v6 finds this node for a share key (creating
	// __share_group_state); malformed keys are INVALID_REQUEST.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorType = 6, 2
	fc.CoordinatorKeys = []string{shareKey("workers", created.ID, 0), "workers:not-a-topic-id:0", "no-colons"}
	// (franz-go sends each key in a request of its own and merges the
	// answers in any order.)
	fcr := s.do(ctx, fc).(*kmsg.FindCoordinatorResponse)
	_, port, _ := net.SplitHostPort(addr)
	if len(fcr.Coordinators) != 3 {
		t.Fatalf("FindCoordinator answered %d keys of 3", len(fcr.Coordinators))
	}
	for _, co := range fcr.Coordinators {
		if co.Key != fc.CoordinatorKeys[0] {
			wantShareCode(t, "malformed key "+co.Key, co.ErrorCode, kerr.InvalidRequest)
		} else if co.ErrorCode != 0 || co.NodeID != 1 || strconv.Itoa(int(co.Port)) != port {
			t.Fatalf("share coordinator: %+v", co)
		}
	}

	// __share_group_state is internal and has Kafka's configs.
	topics, err := kadm.NewClient(cl).ListTopicsWithInternal(ctx, "__share_group_state")
	if err != nil {
		t.Fatal(err)
	}
	if d := topics["__share_group_state"]; !d.IsInternal || len(d.Partitions) != 50 {
		t.Errorf("__share_group_state: internal %v, %d partitions; want internal, 50", d.IsInternal, len(d.Partitions))
	}
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, "__share_group_state")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "min.insync.replicas": "1", "segment.bytes": "104857600"} {
		if v, err := rcs.On("__share_group_state", nil); err != nil {
			t.Fatal(err)
		} else if got := configValue(v.Configs, key); got != want {
			t.Errorf("__share_group_state %s=%q, want %q", key, got, want)
		}
	}

	// The coordinator of the new __share_group_state partition may still
	// be loading it (retriable, as for Kafka's clients).
	first := s.write(ctx, 0, 0, 0, -1, shareBatch{0, 0, 2, 1})
	for first == kerr.CoordinatorLoadInProgress.Code && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		first = s.write(ctx, 0, 0, 0, -1, shareBatch{0, 0, 2, 1})
	}
	wantShareCode(t, "write before initialize", first, kerr.InvalidRequest)
	wantShareCode(t, "initialize 0", s.initialize(ctx, 0, 0, 0), nil)
	wantShareCode(t, "initialize 1", s.initialize(ctx, 1, 0, 100), nil)
	if code, start, batches := s.read(ctx, 0, 1); code != 0 || start != 0 || len(batches) != 0 {
		t.Fatalf("first read: %v start %d batches %v", kerr.ErrorForCode(code), start, batches)
	}
	wantShareCode(t, "write 1", s.write(ctx, 0, 1, 0, 0, shareBatch{0, 9, 2, 1}, shareBatch{10, 19, 0, 2}), nil)
	wantShareCode(t, "write 2", s.write(ctx, 0, 1, -1, 0, shareBatch{5, 14, 4, 2}), nil)
	wantShareCode(t, "write 3", s.write(ctx, 0, 1, 5, 10), nil)
	want := []shareBatch{{5, 14, 4, 2}, {15, 19, 0, 2}}
	if code, start, batches := s.read(ctx, 0, 1); code != 0 || start != 5 || !reflect.DeepEqual(batches, want) {
		t.Fatalf("read after writes: %v start %d batches %v, want start 5 %v", kerr.ErrorForCode(code), start, batches, want)
	}
	if sum := s.summary(ctx, 0); sum.ErrorCode != 0 || sum.StartOffset != 5 || sum.LeaderEpoch != 1 || sum.DeliveryCompleteCount != 10 {
		t.Fatalf("summary: %+v", sum)
	}
	wantShareCode(t, "write from an older leader", s.write(ctx, 0, 0, -1, -1, shareBatch{15, 19, 2, 2}), kerr.FencedLeaderEpoch)
	wantShareCode(t, "read by an older leader", func() int16 { c, _, _ := s.read(ctx, 0, 0); return c }(), kerr.FencedLeaderEpoch)
	wantShareCode(t, "partition past the topic", s.initialize(ctx, 7, 0, 0), kerr.UnknownTopicOrPartition)
	other := s
	other.topic = [16]byte{1, 2, 3}
	wantShareCode(t, "unknown topic", other.initialize(ctx, 0, 0, 0), kerr.UnknownTopicOrPartition)
	empty := kmsg.NewPtrReadShareGroupStateRequest()
	if resp := s.do(ctx, empty).(*kmsg.ReadShareGroupStateResponse); len(resp.Topics) != 0 {
		t.Fatalf("a request with no group is answered with results: %+v", resp)
	}

	// Everything acknowledged survives a crash.
	cl.Close()
	kill()
	addr, _ = startKillable(t, dir)
	if cl, err = kgo.NewClient(kgo.SeedBrokers(addr)); err != nil {
		t.Fatal(err)
	}
	s.cl = cl
	var code int16
	var start int64
	var batches []shareBatch
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, start, batches = s.read(ctx, 0, 2)
		if !loadingCode(code) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != 0 || start != 5 || !reflect.DeepEqual(batches, want) {
		t.Fatalf("read after restart: %v start %d batches %v, want start 5 %v", kerr.ErrorForCode(code), start, batches, want)
	}
	if sum := s.summary(ctx, 1); sum.StartOffset != 100 || sum.StateEpoch != 0 {
		t.Fatalf("summary of partition 1 after restart: %+v", sum)
	}
	wantShareCode(t, "delete", s.delete(ctx, 0), nil)
	if sum := s.summary(ctx, 0); sum.ErrorCode != 0 || sum.StartOffset != -1 || sum.DeliveryCompleteCount != -1 {
		t.Fatalf("summary after delete: %+v", sum)
	}
}

// loadingCode reports a share coordinator that is not ready yet.
func loadingCode(code int16) bool {
	return code == kerr.CoordinatorLoadInProgress.Code || code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code
}

func configValue(configs []kadm.Config, key string) string {
	for _, c := range configs {
		if c.Key == key && c.Value != nil {
			return *c.Value
		}
	}
	return fmt.Sprintf("<%s unset>", key)
}

// TestShareStatePruned checks that __share_group_state does not grow
// without bound: its redundant records are deleted (the log start offset
// moves) while the share partition keeps its state, across a restart.
func TestShareStatePruned(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	prune := "share.coordinator.state.topic.prune.interval.ms=100"
	srv := servertest.StartIn(t, dir, prune)
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "queue")
	if err != nil || created.Err != nil {
		t.Fatalf("create topic: %v %v", err, created.Err)
	}
	s := shareRPC{t: t, cl: cl, group: "workers", topic: created.ID}
	// The first FindCoordinator for a share key creates the topic.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 2, []string{shareKey("workers", created.ID, 0)}
	if co := s.do(ctx, fc).(*kmsg.FindCoordinatorResponse).Coordinators[0]; co.ErrorCode != 0 {
		t.Fatalf("find coordinator: %v", kerr.ErrorForCode(co.ErrorCode))
	}
	code := s.initialize(ctx, 0, 0, 0)
	for deadline := time.Now().Add(10 * time.Second); loadingCode(code) && time.Now().Before(deadline); code = s.initialize(ctx, 0, 0, 0) {
		time.Sleep(50 * time.Millisecond)
	}
	wantShareCode(t, "initialize", code, nil)
	for off := range int64(40) {
		wantShareCode(t, "write", s.write(ctx, 0, 0, -1, -1, shareBatch{off, off, 2, 1}), nil)
	}
	want := []shareBatch{{0, 39, 2, 1}}
	deadline := time.Now().Add(15 * time.Second)
	for {
		starts, err := adm.ListStartOffsets(ctx, "__share_group_state")
		if err != nil {
			t.Fatal(err)
		}
		pruned := int64(0)
		starts.Each(func(o kadm.ListedOffset) { pruned += o.Offset })
		if pruned >= 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("__share_group_state not pruned: log start offsets sum to %d", pruned)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, start, batches := s.read(ctx, 0, 0); code != 0 || start != 0 || !reflect.DeepEqual(batches, want) {
		t.Fatalf("read after pruning: %v start %d batches %v", kerr.ErrorForCode(code), start, batches)
	}
	cl.Close()
	srv.Close()

	srv = servertest.StartIn(t, dir, prune)
	if s.cl, err = kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv))); err != nil {
		t.Fatal(err)
	}
	defer s.cl.Close()
	var batches []shareBatch
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, _, batches = s.read(ctx, 0, 0); !loadingCode(code) || time.Now().After(deadline) {
			break
		}
	}
	if code != 0 || !reflect.DeepEqual(batches, want) {
		t.Fatalf("read after a restart on the pruned log: %v batches %v", kerr.ErrorForCode(code), batches)
	}
}
