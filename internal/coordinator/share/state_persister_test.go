package share

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/coordtest"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
)

// peer is broker 2 as the Persister of broker 1 reaches it: its share
// coordinator served through the RPC methods, as its handlers do.
type peer struct {
	c        *Coordinator
	requests atomic.Int32
}

func (p *peer) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	p.requests.Add(1)
	switch r := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		return p.c.InitializeState(ctx, r), nil
	case *kmsg.WriteShareGroupStateRequest:
		return p.c.WriteState(ctx, r), nil
	case *kmsg.ReadShareGroupStateRequest:
		return p.c.ReadState(ctx, r), nil
	}
	return nil, fmt.Errorf("unexpected %T", req)
}

func (p *peer) Close() error { return nil }

// twoBrokers is an image with brokers 1 and 2, __share_group_state's
// partition 0 led by 1 and partition 1 by 2, and topicA with 4 partitions.
func twoBrokers(t *testing.T) *metadata.Loader {
	l := metadata.NewLoader("c", slog.New(slog.DiscardHandler))
	stateID := metadata.Uuid{7}
	recs := []metadata.Record{
		&metadata.RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 1, Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "node1", Port: 9092}}},
		&metadata.RegisterBrokerRecord{BrokerID: 2, BrokerEpoch: 2, Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "node2", Port: 9092}}},
		&metadata.TopicRecord{Name: StateTopic, TopicID: stateID},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: stateID, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&metadata.PartitionRecord{PartitionID: 1, TopicID: stateID, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2},
		&metadata.TopicRecord{Name: "q", TopicID: metadata.Uuid(topicA)},
	}
	for p := range int32(4) {
		recs = append(recs, &metadata.PartitionRecord{PartitionID: p, TopicID: metadata.Uuid(topicA), Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	}
	data, err := metadata.EncodeBatch(recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(1, data); err != nil {
		t.Fatal(err)
	}
	return l
}

// The Persister of broker 1 serves the keys of partition 0 with its own
// coordinator and sends the others to broker 2, one request for them
// all, waiting while broker 2 loads; the answers come back in the
// request's order.
func TestPersisterSplitsAndRetries(t *testing.T) {
	img := twoBrokers(t)
	cfg := Config{NumPartitions: 2, SnapshotUpdateRecordsPerSnapshot: 500,
		TopicPartitions: func(id [16]byte) (int32, bool) { return 4, id == topicA }}
	local, remote := New(cfg), New(cfg)
	defer local.Close()
	defer remote.Close()
	local.Load(0, 1, &coordtest.MemLog{})
	loading := &coordtest.MemLog{Block: make(chan struct{})}
	remote.Load(1, 1, loading)
	time.AfterFunc(150*time.Millisecond, func() { close(loading.Block) })
	pr := &peer{c: remote}
	p := NewPersister(PersisterConfig{NodeID: 1, Local: local, Image: img.Image, Backoff: 20 * time.Millisecond,
		Dial: func(ctx context.Context, addr string) (replica.PeerConn, error) {
			if addr != "node2:9092" {
				return nil, fmt.Errorf("dialed %s", addr)
			}
			return pr, nil
		}})
	defer p.Close()

	parts := []int32{3, 0, 2, 1}
	coordinators := map[int32]bool{}
	for _, part := range parts {
		coordinators[local.PartitionFor(Key{GroupID: "g", TopicID: topicA, Partition: part})] = true
	}
	if len(coordinators) < 2 {
		t.Fatal("every key on one partition of __share_group_state: nothing is remote")
	}
	ctx := context.Background()
	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = "g"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = topicA
	for _, part := range parts {
		ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		ip.Partition, ip.StartOffset = part, int64(part)*100
		it.Partitions = append(it.Partitions, ip)
	}
	init.Topics = append(init.Topics, it)
	iresp, err := p.InitializeState(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	for i, rp := range iresp.Topics[0].Partitions {
		if rp.Partition != parts[i] || rp.ErrorCode != 0 {
			t.Fatalf("answer %d: partition %d %v, want %d OK", i, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), parts[i])
		}
	}
	if pr.requests.Load() < 2 {
		t.Fatalf("broker 2 got %d requests: the loading coordinator was not asked again", pr.requests.Load())
	}

	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "g"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = topicA
	for _, part := range parts {
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.Partition = part
		rt.Partitions = append(rt.Partitions, rp)
	}
	read.Topics = append(read.Topics, rt)
	rresp, err := p.ReadState(ctx, read)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int64
	for _, rp := range rresp.Topics[0].Partitions {
		starts = append(starts, rp.StartOffset)
	}
	if want := []int64{300, 0, 200, 100}; !reflect.DeepEqual(starts, want) {
		t.Fatalf("start offsets %v, want %v", starts, want)
	}
}

// A coordinator that cannot be reached leaves its keys
// COORDINATOR_NOT_AVAILABLE once the attempts are spent; an ended context
// ends the call.
func TestPersisterGivesUp(t *testing.T) {
	img := twoBrokers(t)
	cfg := Config{NumPartitions: 2, TopicPartitions: func(id [16]byte) (int32, bool) { return 4, true }}
	local := New(cfg)
	defer local.Close()
	p := NewPersister(PersisterConfig{NodeID: 1, Local: local, Image: img.Image, Backoff: time.Millisecond, Attempts: 3,
		Dial: func(context.Context, string) (replica.PeerConn, error) { return nil, errors.New("connection refused") }})
	var remoteKey int32 = -1
	for part := range int32(4) {
		if local.PartitionFor(Key{GroupID: "g", TopicID: topicA, Partition: part}) == 1 {
			remoteKey = part
		}
	}
	if remoteKey < 0 {
		t.Fatal("no key on broker 2")
	}
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = "g"
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = topicA
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition = remoteKey
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := p.ReadStateSummary(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("unreachable coordinator: %v", kerr.ErrorForCode(code))
	}
	p.cfg.Backoff, p.cfg.Attempts = time.Hour, 10
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.ReadStateSummary(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ended context: %v", err)
	}
}
