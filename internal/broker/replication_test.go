package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
	"github.com/samsa-io/samsa/internal/wire"
)

// Two brokers in one process replicating a partition: the fetchers of one
// reach the other's handlers through an in-memory router instead of TCP,
// and the test drives metadata through a shared loader.

// router connects the fetchers to the brokers; cut isolates a node.
type router struct {
	mu      sync.Mutex
	brokers map[string]*Broker
	cut     map[string]bool
}

func (r *router) dial(_ context.Context, addr string) (replica.PeerConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.brokers[addr]
	if !ok || r.cut[addr] {
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	}
	return &routedConn{r: r, addr: addr, b: b}, nil
}

func (r *router) setCut(addr string, cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut[addr] = cut
}

type routedConn struct {
	r    *router
	addr string
	b    *Broker
}

func (c *routedConn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.r.mu.Lock()
	cut := c.r.cut[c.addr]
	c.r.mu.Unlock()
	if cut {
		return nil, errors.New("connection reset")
	}
	h := c.b.handlers[kmsg.Key(req.Key())]
	req.SetVersion(min(req.MaxVersion(), h.max))
	resp, err := c.b.Handle(ctx, nil, wire.Request{
		Header: wire.RequestHeader{APIKey: req.Key(), APIVersion: req.GetVersion()},
		Body:   req,
	})
	c.r.mu.Lock()
	cut = c.r.cut[c.addr]
	c.r.mu.Unlock()
	if cut { // cut while the request was served: the answer is lost
		return nil, errors.New("connection reset")
	}
	return resp, err
}

func (c *routedConn) Close() error { return nil }

type cluster struct {
	t      *testing.T
	loader *metadata.Loader
	router *router
	nodes  map[int32]*Broker
	index  uint64
}

var replTopicID = metadata.Uuid{9, 9, 9}

func addr(id int32) string { return "node" + strconv.Itoa(int(id)) + ":9092" }

// newCluster starts brokers 1 and 2 hosting topic t, partition 0, led by
// broker 1 with ISR [1 2].
func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, loader: metadata.NewLoader("c", slog.New(slog.DiscardHandler)),
		router: &router{brokers: map[string]*Broker{}, cut: map[string]bool{}}, nodes: map[int32]*Broker{}}
	var recs []metadata.Record
	for _, id := range []int32{1, 2} {
		recs = append(recs, &metadata.RegisterBrokerRecord{BrokerID: id, BrokerEpoch: 10 + int64(id),
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "node" + strconv.Itoa(int(id)), Port: 9092}}})
	}
	recs = append(recs, &metadata.TopicRecord{Name: "t", TopicID: replTopicID},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: replTopicID, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	c.apply(recs...)
	for _, id := range []int32{1, 2} {
		c.start(id)
	}
	return c
}

func (c *cluster) apply(recs ...metadata.Record) {
	c.t.Helper()
	data, err := metadata.EncodeBatch(recs)
	if err != nil {
		c.t.Fatal(err)
	}
	c.index++
	if err := c.loader.Apply(c.index, data); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) start(id int32) {
	t := c.t
	cfg := config.Default("node.id="+strconv.Itoa(int(id)), "process.roles=broker", "controller.quorum.voters=9@localhost:9999", "listeners=PLAINTEXT://:9092", "replica.fetch.backoff.ms=20", "replica.fetch.wait.max.ms=50")
	defaults, err := PartitionConfig(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := storage.NewLogManager(storage.ManagerConfig{Dirs: []string{t.TempDir()}, DefaultLogConfig: defaults.Log,
		CheckpointInterval: -1, RetentionCheckInterval: -1, CleanerThreads: -1})
	if err != nil {
		t.Fatal(err)
	}
	replicas := replica.NewManager(replica.Config{NodeID: id, Logs: logs, HighWatermarkCheckpointInterval: -1})
	// As internal/server wires the fetchers.
	var b *Broker
	fetchers := replica.NewFetcherManager(replica.FetcherConfig{
		NodeID:            id,
		BrokerEpoch:       func() int64 { return b.Epoch() },
		Image:             c.loader.Image,
		Listener:          cfg.InterBrokerListenerName,
		Dial:              c.router.dial,
		Replicas:          replicas,
		MaxWaitMs:         cfg.ReplicaFetchWaitMaxMs,
		MinBytes:          cfg.ReplicaFetchMinBytes,
		MaxBytes:          cfg.ReplicaFetchResponseMaxBytes,
		PartitionMaxBytes: cfg.ReplicaFetchMaxBytes,
		Backoff:           time.Duration(cfg.ReplicaFetchBackoffMs) * time.Millisecond,
		Logger:            slog.New(slog.DiscardHandler),
	})
	b = New(Config{NodeID: id, Static: cfg, Image: c.loader.Image, Replicas: replicas, Fetchers: fetchers,
		Logger: slog.New(slog.DiscardHandler)})
	b.SetEpoch(10 + int64(id))
	c.router.mu.Lock()
	c.router.brokers[addr(id)] = b
	c.router.mu.Unlock()
	c.nodes[id] = b
	t.Cleanup(func() {
		fetchers.Close()
		_ = replicas.Close()
		_ = logs.Close()
	})
	if err := c.loader.Register(b); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) partition(id int32) *replica.Partition {
	c.t.Helper()
	p, ok := c.nodes[id].cfg.Replicas.Partition("t", 0)
	if !ok {
		c.t.Fatalf("node %d does not host t-0", id)
	}
	return p
}

func (c *cluster) request(id int32, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	conn := &routedConn{r: c.router, b: c.nodes[id]}
	resp, err := conn.Request(context.Background(), req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *cluster) produce(id int32, acks int16, timeout time.Duration, values ...string) kmsg.ProduceResponseTopicPartition {
	c.t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Value: []byte(v)}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = int32(timeout.Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	if t, ok := c.loader.Image().Topic("t"); ok {
		rt.TopicID = t.ID // v13 names it by id
	}
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = record.Build(record.BuildOptions{PartitionLeaderEpoch: -1}, recs)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.request(id, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// values reads the partition's records on node id from offset 0 up to its
// log end offset, straight from the log.
func (c *cluster) values(id int32) []string {
	c.t.Helper()
	p := c.partition(id)
	var out []string
	for off := int64(0); off < p.Offsets().LogEndOffset; {
		data, err := p.Log().Read(off, 1<<20, p.Offsets().LogEndOffset)
		if err != nil {
			c.t.Fatal(err)
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 {
			batch, rest, err := record.NextBatch(data)
			if err != nil {
				c.t.Fatal(err)
			}
			data = rest
			recs, err := record.Records(batch)
			if err != nil {
				c.t.Fatal(err)
			}
			for _, r := range recs {
				out = append(out, string(r.Value))
				off = r.Offset + 1
			}
		}
	}
	return out
}

// eventually polls cond for up to 30 s: a liveness bound, generous for
// two busy cores.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReplicationAcksAll(t *testing.T) {
	c := newCluster(t)
	sp := c.produce(1, -1, 30*time.Second, "a", "b", "c")
	if sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("acks=all produce: error %v base offset %d, want 0 0", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	// Committed means the follower has it.
	if off := c.partition(2).Offsets(); off.LogEndOffset != 3 {
		t.Fatalf("follower log end offset %d after an acks=all produce, want 3", off.LogEndOffset)
	}
	if got := fmt.Sprint(c.values(2)); got != "[a b c]" {
		t.Errorf("follower records %s, want [a b c]", got)
	}
	if hw := c.partition(1).Offsets().HighWatermark; hw != 3 {
		t.Errorf("leader high watermark %d, want 3", hw)
	}
	eventually(t, "the follower's high watermark", func() bool { return c.partition(2).Offsets().HighWatermark == 3 })

	// The follower serves no client.
	if sp := c.produce(2, 1, time.Second, "x"); sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("produce to the follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(sp.ErrorCode))
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "t", replTopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	if code := c.request(2, fetch).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Errorf("consumer fetch from the follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if code := c.request(2, lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Errorf("list offsets on the follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	resp := c.request(1, lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if resp.ErrorCode != 0 || resp.Offset != 3 {
		t.Errorf("list offsets latest on the leader: %v offset %d, want 3", kerr.ErrorForCode(resp.ErrorCode), resp.Offset)
	}
}

func TestReplicationAcksAllTimesOut(t *testing.T) {
	c := newCluster(t)
	c.router.setCut(addr(1), true) // the follower cannot reach the leader
	start := time.Now()
	sp := c.produce(1, -1, 200*time.Millisecond, "a")
	if sp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("acks=all without the follower: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(sp.ErrorCode))
	}
	// Not before the timeout; after it, any time (a 30 s liveness bound:
	// how soon is for benchmarks, and two busy cores can be slow).
	if d := time.Since(start); d < 200*time.Millisecond || d > 30*time.Second {
		t.Errorf("answered after %v, want no sooner than the 200ms timeout", d)
	}
	if sp.BaseOffset != 0 {
		t.Errorf("base offset %d, want 0 (Kafka reports the append's offset with the error)", sp.BaseOffset)
	}
	// acks=1 does not wait for the follower.
	if sp := c.produce(1, 1, 200*time.Millisecond, "b"); sp.ErrorCode != 0 || sp.BaseOffset != 1 {
		t.Fatalf("acks=1: %v base offset %d, want 0 1", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	// Once reconnected the follower catches up.
	c.router.setCut(addr(1), false)
	eventually(t, "the follower to catch up", func() bool { return c.partition(2).Offsets().LogEndOffset == 2 })
	eventually(t, "the leader's high watermark", func() bool { return c.partition(1).Offsets().HighWatermark == 2 })
}

func TestReplicationNotEnoughReplicas(t *testing.T) {
	c := newCluster(t)
	three := "3"
	c.apply(&metadata.ConfigRecord{ResourceType: metadata.ResourceTopic, ResourceName: "t", Name: "min.insync.replicas", Value: &three})
	sp := c.produce(1, -1, time.Second, "a")
	if sp.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with ISR 2 < min.insync.replicas 3: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(sp.ErrorCode))
	}
	if leo := c.partition(1).Offsets().LogEndOffset; leo != 0 {
		t.Errorf("log end offset %d after NOT_ENOUGH_REPLICAS, want 0: nothing appended", leo)
	}
}

func TestReplicationFailoverTruncatesDivergentTail(t *testing.T) {
	c := newCluster(t)
	if sp := c.produce(1, -1, 30*time.Second, "a", "b"); sp.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	// The old leader takes writes the follower never gets.
	c.router.setCut(addr(1), true)
	if sp := c.produce(1, 1, time.Second, "lost1", "lost2"); sp.ErrorCode != 0 || sp.BaseOffset != 2 {
		t.Fatalf("acks=1 produce: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	// Broker 2 takes over at leader epoch 1, and writes its own records.
	two := int32(2)
	c.apply(&metadata.PartitionChangeRecord{PartitionID: 0, TopicID: replTopicID, Leader: &two})
	if !c.partition(2).IsLeader() || c.partition(1).IsLeader() {
		t.Fatal("leadership did not move to broker 2")
	}
	c.router.setCut(addr(1), false)
	if sp := c.produce(2, 1, time.Second, "c"); sp.ErrorCode != 0 || sp.BaseOffset != 2 {
		t.Fatalf("produce to the new leader: %v at %d, want offset 2", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	// OffsetForLeaderEpoch on the new leader: epoch 0 ended at 2.
	oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "t"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.CurrentLeaderEpoch, op.LeaderEpoch = -1, 0
	ot.Partitions = append(ot.Partitions, op)
	oe.Topics = append(oe.Topics, ot)
	ep := c.request(2, oe).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	if ep.ErrorCode != 0 || ep.LeaderEpoch != 0 || ep.EndOffset != 2 {
		t.Errorf("offset for leader epoch 0: %v epoch %d end %d, want epoch 0 end 2", kerr.ErrorForCode(ep.ErrorCode), ep.LeaderEpoch, ep.EndOffset)
	}
	if code := c.request(1, oe).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Errorf("offset for leader epoch on the follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	// The old leader, now a follower, drops lost1/lost2 and copies c.
	eventually(t, "the old leader to converge", func() bool { return fmt.Sprint(c.values(1)) == "[a b c]" })
	if sp := c.produce(2, -1, 30*time.Second, "d"); sp.ErrorCode != 0 || sp.BaseOffset != 3 {
		t.Fatalf("acks=all on the new leader: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	if got := fmt.Sprint(c.values(1)); got != "[a b c d]" {
		t.Errorf("old leader has %s, want [a b c d]", got)
	}
}

func TestReplicaRemovedWhenReassignedAway(t *testing.T) {
	c := newCluster(t)
	if sp := c.produce(1, -1, 30*time.Second, "a"); sp.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	c.apply(&metadata.PartitionChangeRecord{PartitionID: 0, TopicID: replTopicID, Replicas: []int32{1}, ISR: []int32{1}})
	if _, ok := c.nodes[2].cfg.Replicas.Partition("t", 0); ok {
		t.Error("broker 2 still hosts t-0 after it was reassigned away")
	}
	if sp := c.produce(1, -1, 30*time.Second, "b"); sp.ErrorCode != 0 || sp.BaseOffset != 1 {
		t.Errorf("acks=all with ISR [1]: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
}
