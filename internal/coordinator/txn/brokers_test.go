package txn_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
	"github.com/samsa-io/samsa/internal/wire"
)

// Two brokers in one process, for the marker channel: the replica
// fetchers of one and the marker channel reach the other's handlers
// through an in-memory router instead of TCP, and the test drives
// metadata through a shared loader. (The broker's replication tests have
// the same harness; this package sees only the broker's exported API.)

// router connects the fetchers and marker channels to the brokers; cut
// isolates a node.
type router struct {
	mu      sync.Mutex
	brokers map[string]*broker.Broker
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
	r      *router
	addr   string
	b      *broker.Broker
	client bool // a test's own requests, as a client sends them
}

func (c *routedConn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.r.mu.Lock()
	cut := c.r.cut[c.addr]
	c.r.mu.Unlock()
	if cut {
		return nil, errors.New("connection reset")
	}
	vr, _ := c.b.Versions().Range(req.Key())
	req.SetVersion(min(req.MaxVersion(), vr.Max))
	if c.client && (req.Key() == kmsg.AddPartitionsToTxn.Int16() || req.Key() == kmsg.EndTxn.Int16()) {
		// A transaction version 1 client: AddPartitionsToTxn v4+ is the
		// brokers', EndTxn v5 bumps the epoch.
		req.SetVersion(3)
	}
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

// node is one broker of the cluster and the replicas it serves.
type node struct {
	b        *broker.Broker
	replicas *replica.Manager
	fetchers *replica.FetcherManager
}

type cluster struct {
	t      *testing.T
	loader *metadata.Loader
	router *router
	nodes  map[int32]*node
	index  uint64
}

var replTopicID = metadata.Uuid{9, 9, 9}

func addr(id int32) string { return "node" + strconv.Itoa(int(id)) + ":9092" }

// newCluster starts brokers 1 and 2 hosting topic t, partition 0, led by
// broker 1 with ISR [1 2]. configure, when not nil, completes a broker's
// Config before it starts; the replicas of both nodes exist by then.
func newCluster(t *testing.T, configure func(c *cluster, id int32, cfg *broker.Config)) *cluster {
	c := &cluster{t: t, loader: metadata.NewLoader("c", slog.New(slog.DiscardHandler)),
		router: &router{brokers: map[string]*broker.Broker{}, cut: map[string]bool{}}, nodes: map[int32]*node{}}
	var recs []metadata.Record
	for _, id := range []int32{1, 2} {
		recs = append(recs, &metadata.RegisterBrokerRecord{BrokerID: id, BrokerEpoch: 10 + int64(id),
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "node" + strconv.Itoa(int(id)), Port: 9092}}})
	}
	recs = append(recs, &metadata.TopicRecord{Name: "t", TopicID: replTopicID},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: replTopicID, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	c.apply(recs...)
	cfgs := make(map[int32]*config.Config)
	for _, id := range []int32{1, 2} {
		cfgs[id] = c.openReplicas(id)
	}
	for _, id := range []int32{1, 2} {
		st := cfgs[id]
		n := c.nodes[id]
		// As internal/server wires the fetchers.
		n.fetchers = replica.NewFetcherManager(replica.FetcherConfig{
			NodeID:            id,
			BrokerEpoch:       func() int64 { return n.b.Epoch() },
			Image:             c.loader.Image,
			Listener:          st.InterBrokerListenerName,
			Dial:              c.router.dial,
			Replicas:          n.replicas,
			MaxWaitMs:         st.ReplicaFetchWaitMaxMs,
			MinBytes:          st.ReplicaFetchMinBytes,
			MaxBytes:          st.ReplicaFetchResponseMaxBytes,
			PartitionMaxBytes: st.ReplicaFetchMaxBytes,
			Backoff:           time.Duration(st.ReplicaFetchBackoffMs) * time.Millisecond,
			Logger:            slog.New(slog.DiscardHandler),
		})
		bcfg := broker.Config{NodeID: id, Static: st, Image: c.loader.Image, Replicas: n.replicas, Fetchers: n.fetchers,
			Logger: slog.New(slog.DiscardHandler)}
		if configure != nil {
			configure(c, id, &bcfg)
		}
		c.start(id, bcfg)
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

// openReplicas opens node id's logs and replica manager and returns its
// static config.
func (c *cluster) openReplicas(id int32) *config.Config {
	t := c.t
	cfg := config.Default("node.id="+strconv.Itoa(int(id)), "process.roles=broker", "controller.quorum.voters=9@localhost:9999", "listeners=PLAINTEXT://:9092", "replica.fetch.backoff.ms=20", "replica.fetch.wait.max.ms=50")
	defaults, err := broker.PartitionConfig(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := storage.NewLogManager(storage.ManagerConfig{Dirs: []string{t.TempDir()}, DefaultLogConfig: defaults.Log,
		CheckpointInterval: -1, RetentionCheckInterval: -1, CleanerThreads: -1})
	if err != nil {
		t.Fatal(err)
	}
	replicas := replica.NewManager(replica.Config{NodeID: id, Logs: logs, HighWatermarkCheckpointInterval: -1})
	t.Cleanup(func() {
		_ = replicas.Close()
		_ = logs.Close()
	})
	c.nodes[id] = &node{replicas: replicas}
	return cfg
}

// start starts broker id on its replicas and registers it with the
// loader, which publishes the current image to it.
func (c *cluster) start(id int32, cfg broker.Config) {
	t := c.t
	b := broker.New(cfg)
	b.SetEpoch(10 + int64(id))
	c.router.mu.Lock()
	c.router.brokers[addr(id)] = b
	c.router.mu.Unlock()
	c.nodes[id].b = b
	t.Cleanup(c.nodes[id].fetchers.Close)
	if err := c.loader.Register(b); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) request(id int32, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	conn := &routedConn{r: c.router, b: c.nodes[id].b, client: true}
	resp, err := conn.Request(context.Background(), req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
