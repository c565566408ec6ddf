package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/raft"
)

type seeded struct{ r *rand.Rand }

func (s seeded) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(s.r.Uint32())
	}
	return len(b), nil
}

type harness struct {
	c      *Controller
	node   *raft.Node
	loader *metadata.Loader
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

// start opens a one-voter quorum on dir, bootstraps and registers brokers
// 1..brokers (a registration survives restarts, so pass 0 on a restart).
func start(t *testing.T, dir string, brokers int) *harness {
	t.Helper()
	return startWith(t, dir, brokers, nil)
}

// startWith is start with a hook to adjust the Config before New.
func startWith(t *testing.T, dir string, brokers int, adjust func(*Config)) *harness {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	loader := metadata.NewLoader("test-cluster", logger)
	node, err := raft.Open(raft.Config{ID: 1, Dir: dir, Logger: logger, Applier: loader, TickInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	cfg := Config{NodeID: 1, Raft: node, Loader: loader, Logger: logger, Rand: seeded{rand.New(rand.NewPCG(1, 2))},
		ValidateTopicConfig: func(name, value string) error {
			if name == "retention.ms" && strings.HasPrefix(value, "-") {
				return fmt.Errorf("invalid value %s for configuration retention.ms", value)
			}
			return nil
		}}
	if adjust != nil {
		adjust(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Bootstrap(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= brokers; i++ {
		if _, err := registerBroker(ctx(t), c, int32(i), metadata.Uuid{byte(i)}, []metadata.Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(9091 + i)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return &harness{c: c, node: node, loader: loader}
}

func createReq(topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	r := kmsg.NewPtrCreateTopicsRequest()
	r.Version = 7
	r.Topics = topics
	return r
}

func topic(name string, parts int32, rf int16) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, parts, rf
	return t
}

func str(s string) *string { return &s }

func TestBootstrapWritesMetadataVersionOnce(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir, 0)
	img := h.loader.Image()
	if img.Features()[metadata.MetadataVersionFeature] != 27 || img.ClusterID != "test-cluster" {
		t.Fatalf("features %v cluster %q", img.Features(), img.ClusterID)
	}
	off := img.Offset
	if err := h.c.Bootstrap(ctx(t)); err != nil || h.loader.Image().Offset != off {
		t.Fatalf("second bootstrap wrote records: %v offset %d -> %d", err, off, h.loader.Image().Offset)
	}
}

func TestCreateDeleteRecreateTopic(t *testing.T) {
	h := start(t, t.TempDir(), 3)
	resp := h.c.CreateTopics(ctx(t), createReq(topic("orders", 4, 2)))
	rt := resp.Topics[0]
	if rt.ErrorCode != 0 || rt.NumPartitions != 4 || rt.ReplicationFactor != 2 || rt.TopicID == [16]byte{} {
		t.Fatalf("create: %+v", rt)
	}
	ti, ok := h.loader.Image().Topic("orders")
	if !ok || ti.ID != rt.TopicID || len(ti.Partitions) != 4 {
		t.Fatalf("image topic %+v", ti)
	}
	leaders := map[int32]int{}
	for i, p := range ti.Partitions {
		if p.Partition != int32(i) || len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] || p.Leader != p.Replicas[0] || len(p.ISR) != 2 {
			t.Fatalf("partition %+v", p)
		}
		leaders[p.Leader]++
	}
	if len(leaders) != 3 { // 4 partitions round-robin over 3 brokers
		t.Fatalf("leaders not spread: %v", leaders)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = rt.TopicID
	del.Topics = []kmsg.DeleteTopicsRequestTopic{dt}
	dr := h.c.DeleteTopics(ctx(t), del)
	if dr.Topics[0].ErrorCode != 0 || dr.Topics[0].Topic == nil || *dr.Topics[0].Topic != "orders" {
		t.Fatalf("delete: %+v", dr.Topics[0])
	}
	if _, ok := h.loader.Image().Topic("orders"); ok {
		t.Fatal("topic still in image")
	}
	again := h.c.CreateTopics(ctx(t), createReq(topic("orders", 1, 1))).Topics[0]
	if again.ErrorCode != 0 || again.TopicID == rt.TopicID || again.NumPartitions != 1 {
		t.Fatalf("recreate: %+v", again)
	}
}

func TestCreateTopicsErrors(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	if r := h.c.CreateTopics(ctx(t), createReq(topic("exists", 1, 1), topic("a.b", 1, 1))); r.Topics[0].ErrorCode != 0 || r.Topics[1].ErrorCode != 0 {
		t.Fatalf("setup: %+v", r.Topics)
	}
	manual := func(name string, parts int32, rf int16, as ...[]int32) kmsg.CreateTopicsRequestTopic {
		tp := topic(name, parts, rf)
		for i, a := range as {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = int32(i), a
			tp.ReplicaAssignment = append(tp.ReplicaAssignment, ra)
		}
		return tp
	}
	withConfig := func(tp kmsg.CreateTopicsRequestTopic, k, v string) kmsg.CreateTopicsRequestTopic {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, &v
		tp.Configs = append(tp.Configs, c)
		return tp
	}
	cases := []struct {
		topic kmsg.CreateTopicsRequestTopic
		code  int16
		msg   string
	}{
		{topic("exists", 1, 1), 36, "Topic 'exists' already exists."},
		{topic("bad/name", 1, 1), 17, `Topic name "bad/name" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`},
		{topic("..", 1, 1), 17, `Topic name cannot be "." or ".."`},
		{topic("", 1, 1), 17, "Topic name is illegal, it can't be empty"},
		{topic(strings.Repeat("x", 250), 1, 1), 17, "Topic name is illegal, it can't be longer than 249 characters, topic name: " + strings.Repeat("x", 250)},
		{topic("a_b", 1, 1), 17, "Topic 'a_b' collides with existing topic: a.b"},
		{topic("zero", 0, 1), 37, "Number of partitions was set to an invalid non-positive value."},
		{topic("neg", -2, 1), 37, "Number of partitions was set to an invalid non-positive value."},
		{topic("rf0", 1, 0), 38, "Replication factor must be larger than 0, or -1 to use the default value."},
		{topic("rf3", 1, 3), 38, "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) are registered."},
		{manual("m1", -1, -1, []int32{7}), 39, "The manual partition assignment includes broker 7, but no such broker is registered."},
		{manual("m2", -1, -1, []int32{1, 1}), 39, "The manual partition assignment includes the broker 1 more than once."},
		{manual("m3", -1, -1, []int32{}), 39, "The manual partition assignment includes an empty replica list."},
		{manual("m4", 2, -1, []int32{1}), 42, "A manual partition assignment was specified, but numPartitions was not set to -1."},
		{withConfig(topic("cfg", 1, 1), "retention.ms", "-5"), 40, "invalid value -5 for configuration retention.ms"},
	}
	for _, tc := range cases {
		r := h.c.CreateTopics(ctx(t), createReq(tc.topic)).Topics[0]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != tc.code || msg != tc.msg || r.NumPartitions != -1 || r.ReplicationFactor != -1 {
			t.Errorf("%.20q: got %d %q (parts %d rf %d), want %d %q", tc.topic.Topic, r.ErrorCode, msg, r.NumPartitions, r.ReplicationFactor, tc.code, tc.msg)
		}
	}
	// Duplicates in one request: both fail, others succeed.
	r := h.c.CreateTopics(ctx(t), createReq(topic("dup", 1, 1), topic("dup", 1, 1), topic("fine", -1, -1)))
	if r.Topics[0].ErrorCode != 42 || r.Topics[1].ErrorCode != 42 || r.Topics[2].ErrorCode != 0 {
		t.Fatalf("duplicates: %+v", r.Topics)
	}
	if _, ok := h.loader.Image().Topic("dup"); ok {
		t.Fatal("duplicate topic created")
	}
	if got := len(h.loader.Image().Topics()); got != 3 {
		t.Fatalf("%d topics, want 3 (exists, a.b, fine)", got)
	}
}

func TestValidateOnlyWritesNothing(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	off := h.loader.Image().Offset
	req := createReq(topic("v", 3, 1))
	req.ValidateOnly = true
	r := h.c.CreateTopics(ctx(t), req).Topics[0]
	if r.ErrorCode != 0 || r.NumPartitions != 3 || r.ReplicationFactor != 1 {
		t.Fatalf("validate-only: %+v", r)
	}
	if _, ok := h.loader.Image().Topic("v"); ok || h.loader.Image().Offset != off {
		t.Fatal("validate-only wrote records")
	}
}

func TestCreateTopicWithConfigsAndManualAssignment(t *testing.T) {
	h := start(t, t.TempDir(), 2)
	tp := topic("m", -1, -1)
	for i, reps := range [][]int32{{2, 1}, {1, 2}} {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), reps
		tp.ReplicaAssignment = append(tp.ReplicaAssignment, ra)
	}
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "cleanup.policy", str("compact")
	tp.Configs = []kmsg.CreateTopicsRequestTopicConfig{c}
	r := h.c.CreateTopics(ctx(t), createReq(tp)).Topics[0]
	if r.ErrorCode != 0 || r.NumPartitions != 2 || r.ReplicationFactor != 2 {
		t.Fatalf("%+v", r)
	}
	ti, _ := h.loader.Image().Topic("m")
	if ti.Partitions[0].Leader != 2 || ti.Partitions[1].Leader != 1 {
		t.Fatalf("leaders %+v", ti.Partitions)
	}
	if got := h.loader.Image().Configs(metadata.ResourceTopic, "m"); got["cleanup.policy"] != "compact" {
		t.Fatalf("configs %v", got)
	}
}

func TestDeleteTopicsErrors(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	h.c.CreateTopics(ctx(t), createReq(topic("a", 1, 1), topic("b", 1, 1)))
	v1 := kmsg.NewPtrDeleteTopicsRequest()
	v1.Version = 1
	v1.TopicNames = []string{"a", "nope"}
	r := h.c.DeleteTopics(ctx(t), v1)
	if r.Topics[0].ErrorCode != 0 || r.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("v1: %+v", r.Topics)
	}
	v6 := kmsg.NewPtrDeleteTopicsRequest()
	v6.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = [16]byte{9, 9}
	v6.Topics = []kmsg.DeleteTopicsRequestTopic{byID}
	if r := h.c.DeleteTopics(ctx(t), v6); r.Topics[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("v6 unknown id: %+v", r.Topics)
	}
	if _, ok := h.loader.Image().Topic("b"); !ok {
		t.Fatal("b deleted")
	}
}

func TestCreatePartitions(t *testing.T) {
	h := start(t, t.TempDir(), 2)
	h.c.CreateTopics(ctx(t), createReq(topic("p", 2, 2)))
	req := func(count int32, validate bool, assign ...[]int32) *kmsg.CreatePartitionsRequest {
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.ValidateOnly = validate
		tp := kmsg.NewCreatePartitionsRequestTopic()
		tp.Topic, tp.Count = "p", count
		for _, a := range assign {
			ca := kmsg.NewCreatePartitionsRequestTopicAssignment()
			ca.Replicas = a
			tp.Assignment = append(tp.Assignment, ca)
		}
		r.Topics = []kmsg.CreatePartitionsRequestTopic{tp}
		return r
	}
	check := func(r *kmsg.CreatePartitionsResponse, code int16, msg string) {
		t.Helper()
		got := ""
		if r.Topics[0].ErrorMessage != nil {
			got = *r.Topics[0].ErrorMessage
		}
		if r.Topics[0].ErrorCode != code || got != msg {
			t.Fatalf("got %d %q, want %d %q", r.Topics[0].ErrorCode, got, code, msg)
		}
	}
	check(h.c.CreatePartitions(ctx(t), req(1, false)), 37, "The topic p currently has 2 partition(s); 1 would not be an increase.")
	check(h.c.CreatePartitions(ctx(t), req(2, false)), 37, "Topic already has 2 partition(s).")
	check(h.c.CreatePartitions(ctx(t), req(4, false, []int32{1, 2})), 39, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.")
	check(h.c.CreatePartitions(ctx(t), req(3, false, []int32{1})), 39, "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).")
	check(h.c.CreatePartitions(ctx(t), req(5, true)), 0, "")
	if ti, _ := h.loader.Image().Topic("p"); len(ti.Partitions) != 2 {
		t.Fatal("validate-only added partitions")
	}
	check(h.c.CreatePartitions(ctx(t), req(3, false, []int32{2, 1})), 0, "")
	check(h.c.CreatePartitions(ctx(t), req(5, false)), 0, "")
	ti, _ := h.loader.Image().Topic("p")
	if len(ti.Partitions) != 5 || ti.Partitions[2].Leader != 2 || len(ti.Partitions[4].Replicas) != 2 {
		t.Fatalf("partitions %+v", ti.Partitions)
	}
}

func TestConcurrentCreateSameNameOneWins(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	var wg sync.WaitGroup
	codes := make([]int16, 8)
	for i := range codes {
		wg.Go(func() { codes[i] = h.c.CreateTopics(ctx(t), createReq(topic("race", 1, 1))).Topics[0].ErrorCode })
	}
	wg.Wait()
	wins := 0
	for _, c := range codes {
		switch c {
		case 0:
			wins++
		case 36:
		default:
			t.Fatalf("unexpected code %d", c)
		}
	}
	if wins != 1 {
		t.Fatalf("%d creates succeeded: %v", wins, codes)
	}
}

func TestRestartKeepsTopicsAndProducerIDBlocks(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir, 1)
	id := h.c.CreateTopics(ctx(t), createReq(topic("keep", 2, 1))).Topics[0].TopicID
	b, _ := h.loader.Image().Broker(1)
	var firsts []int64
	for range 2 {
		first, n, err := h.c.AllocateProducerIDs(ctx(t), 1, b.Epoch)
		if err != nil || n != 1000 {
			t.Fatal(err, n)
		}
		firsts = append(firsts, first)
	}
	if _, _, err := h.c.AllocateProducerIDs(ctx(t), 1, b.Epoch-1); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	if _, _, err := h.c.AllocateProducerIDs(ctx(t), 9, 1); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unknown broker: %v", err)
	}
	h.node.Close()

	h2 := start(t, dir, 0)
	ti, ok := h2.loader.Image().Topic("keep")
	if !ok || ti.ID != metadata.Uuid(id) || len(ti.Partitions) != 2 {
		t.Fatalf("after restart: %+v", ti)
	}
	epoch, err := registerBroker(ctx(t), h2.c, 1, metadata.Uuid{2}, nil, nil)
	if err != nil || epoch <= b.Epoch {
		t.Fatalf("re-register epoch %d (was %d): %v", epoch, b.Epoch, err)
	}
	first, _, err := h2.c.AllocateProducerIDs(ctx(t), 1, epoch)
	if err != nil {
		t.Fatal(err)
	}
	firsts = append(firsts, first)
	if fmt.Sprint(firsts) != "[0 1000 2000]" {
		t.Fatalf("producer id blocks %v, want [0 1000 2000]", firsts)
	}
}

// supportedFeatures are this build's features, as a broker registers
// them.
func supportedFeatures() []kmsg.BrokerRegistrationRequestFeature {
	var fs []kmsg.BrokerRegistrationRequestFeature
	for _, sf := range metadata.SupportedFeatures() {
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = sf.Name, sf.Min, sf.Max
		fs = append(fs, f)
	}
	return fs
}

// registerBroker registers a broker and unfences it at once with one
// heartbeat, as a node's lifecycle does when it starts.
func registerBroker(ctx context.Context, c *Controller, id int32, incarnation metadata.Uuid, endpoints []metadata.Endpoint, rack *string) (int64, error) {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID, req.Rack = id, c.cfg.Loader.Image().ClusterID, incarnation, rack
	for _, e := range endpoints {
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = e.Name, e.Host, e.Port, e.SecurityProtocol
		req.Listeners = append(req.Listeners, l)
	}
	req.Features = supportedFeatures()
	resp := c.BrokerRegistration(ctx, req)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, err
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch = id, resp.BrokerEpoch
	hb.CurrentMetadataOffset = int64(c.cfg.Loader.Image().Offset)
	if err := kerr.ErrorForCode(c.BrokerHeartbeat(ctx, hb).ErrorCode); err != nil {
		return 0, err
	}
	return resp.BrokerEpoch, nil
}

// The metadata log's name is reserved: creating it would give a user
// topic the metadata log's own directory.
func TestCreateTopicRefusesMetadataLogName(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	off := h.loader.Image().Offset
	r := h.c.CreateTopics(ctx(t), createReq(topic("__cluster_metadata", 1, 1))).Topics[0]
	if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil ||
		*r.ErrorMessage != "Creation of internal topic __cluster_metadata is prohibited." {
		t.Fatalf("create __cluster_metadata: code %d message %v", r.ErrorCode, r.ErrorMessage)
	}
	if _, ok := h.loader.Image().Topic("__cluster_metadata"); ok || h.loader.Image().Offset != off {
		t.Fatal("records written for __cluster_metadata")
	}
}

// A request that would write more than MaxRecordsPerUserOp records is
// refused with POLICY_VIOLATION before partitions are placed, validate-only
// or not, whether one topic or several together are too large.
func TestCreateTopicsBoundedPerRequest(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	off := h.loader.Image().Offset
	wantTooLarge := func(what string, code int16, msg *string) {
		t.Helper()
		if code != kerr.PolicyViolation.Code || msg == nil || *msg != "Unable to perform excessively large batch operation." {
			t.Fatalf("%s: code %d message %v, want POLICY_VIOLATION", what, code, msg)
		}
	}
	for _, validate := range []bool{true, false} {
		for _, n := range []int32{2147483647, 1_000_000, MaxRecordsPerUserOp + 1} {
			req := createReq(topic("huge", n, 1))
			req.ValidateOnly = validate
			r := h.c.CreateTopics(ctx(t), req).Topics[0]
			wantTooLarge(fmt.Sprintf("%d partitions, validate %v", n, validate), r.ErrorCode, r.ErrorMessage)
		}
	}
	// Two topics that fit alone but not together: both refused.
	resp := h.c.CreateTopics(ctx(t), createReq(topic("half1", 6000, 1), topic("half2", 6000, 1)))
	for _, r := range resp.Topics {
		wantTooLarge(r.Topic, r.ErrorCode, r.ErrorMessage)
	}
	if h.loader.Image().Offset != off {
		t.Fatal("records written for refused requests")
	}
	// Just under the bound is served.
	if r := h.c.CreateTopics(ctx(t), createReq(topic("big", MaxRecordsPerUserOp-1, 1))).Topics[0]; r.ErrorCode != 0 {
		t.Fatalf("create %d partitions: code %d %v", MaxRecordsPerUserOp-1, r.ErrorCode, r.ErrorMessage)
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	tp := kmsg.NewCreatePartitionsRequestTopic()
	tp.Topic, tp.Count = "big", 2147483647
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{tp}
	r := h.c.CreatePartitions(ctx(t), cp).Topics[0]
	wantTooLarge("CreatePartitions to 2^31-1", r.ErrorCode, r.ErrorMessage)
}
