package txn_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
)

// Transaction markers across two brokers: the marker channel of broker 1
// (where the transaction coordinator runs) writes markers to partitions
// broker 2 leads with WriteTxnMarkers, over the in-memory router of
// brokers_test.go.

// Names of the internal topics, as the broker knows them.
const (
	offsetsTopic  = "__consumer_offsets"
	txnStateTopic = "__transaction_state"
)

var (
	txTopicID      = metadata.Uuid{7, 7, 7}
	offsetsTopicID = metadata.Uuid{8, 8, 8}
	topicIDs       = map[string]metadata.Uuid{"t": replTopicID, "tx": txTopicID}
)

// markerGroups is a group coordinator that records the transactions it is
// told completed; any other call panics.
type markerGroups struct {
	broker.GroupCoordinator
	mu        sync.Mutex
	completed []string
}

func (g *markerGroups) Load(int32, int32, coordinator.PartitionLog) {}

func (g *markerGroups) Unload(int32) {}

func (g *markerGroups) CompleteTransaction(partition int32, producerID int64, commit bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.completed = append(g.completed, fmt.Sprintf("p%d pid %d commit %v", partition, producerID, commit))
}

func (g *markerGroups) done() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return fmt.Sprint(g.completed)
}

// newTxnCluster is newCluster (t-0 led by broker 1) plus tx-0, led by
// broker 2 and replicated to broker 1, and __consumer_offsets-0, led by
// broker 2 whose group coordinator is the one returned. txns, when not
// nil, returns broker 1's transaction coordinator.
func newTxnCluster(t *testing.T, txns func(c *cluster) broker.TxnCoordinator) (*cluster, *markerGroups) {
	g := &markerGroups{}
	c := newCluster(t, func(c *cluster, id int32, cfg *broker.Config) {
		switch {
		case id == 2:
			cfg.Groups = g
		case id == 1 && txns != nil:
			cfg.Txns = txns(c)
		}
	})
	c.apply(
		&metadata.TopicRecord{Name: "tx", TopicID: txTopicID},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: txTopicID, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2},
		&metadata.TopicRecord{Name: offsetsTopic, TopicID: offsetsTopicID},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: offsetsTopicID, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2},
	)
	return c, g
}

// markerWriter is broker id's marker channel, dialing with dial.
func (c *cluster) markerWriter(id int32, dial func(context.Context, string) (txn.PeerConn, error)) *txn.MarkerChannel {
	w := c.markerChannel(id, dial)
	c.t.Cleanup(w.Close)
	return w
}

// markerChannel is markerWriter without the cleanup: the caller closes it.
func (c *cluster) markerChannel(id int32, dial func(context.Context, string) (txn.PeerConn, error)) *txn.MarkerChannel {
	return txn.NewMarkerChannel(txn.MarkerChannelConfig{NodeID: id, Replicas: c.nodes[id].replicas, Image: c.loader.Image,
		Dial: dial, RequestTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
}

// produceTxn writes values to partition 0 of topic on broker id as one
// transactional batch of producer pid at epoch, acks=all.
func (c *cluster) produceTxn(id int32, topic string, pid int64, epoch int16, seq int32, values ...string) {
	c.t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Value: []byte(v)}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	req.TransactionID = kmsg.StringPtr("tx-test")
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	if t, ok := c.loader.Image().Topic(topic); ok {
		rt.TopicID = t.ID // v13 names it by id
	}
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = record.Build(record.BuildOptions{PartitionLeaderEpoch: -1, Transactional: true,
		Producer: &record.ProducerInfo{ID: pid, Epoch: epoch, BaseSequence: seq}}, recs)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	sp := c.request(id, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		c.t.Fatalf("transactional produce to %s-0 on broker %d: %v", topic, id, kerr.ErrorForCode(sp.ErrorCode))
	}
}

// committedView is what a read_committed consumer of a partition gets.
type committedView struct {
	values  []string // non-control records below the last stable offset
	lso, hw int64
	aborted []string // "pid@firstOffset"
}

// readCommitted fetches partition 0 of topic from broker id as a
// read_committed consumer, from offset 0 up to its last stable offset.
func (c *cluster) readCommitted(id int32, topic string) committedView {
	c.t.Helper()
	var v committedView
	for off := int64(0); ; {
		rp := c.fetchCommitted(id, topic, off)
		v.lso, v.hw = rp.LastStableOffset, rp.HighWatermark
		for _, a := range rp.AbortedTransactions {
			if at := fmt.Sprintf("%d@%d", a.ProducerID, a.FirstOffset); !slices.Contains(v.aborted, at) {
				v.aborted = append(v.aborted, at)
			}
		}
		if len(rp.RecordBatches) == 0 {
			return v
		}
		for data := rp.RecordBatches; len(data) > 0; {
			batch, rest, err := record.NextBatch(data)
			if err != nil {
				c.t.Fatal(err)
			}
			data = rest
			h, err := record.ParseHeader(batch)
			if err != nil {
				c.t.Fatal(err)
			}
			off = h.NextOffset()
			if h.Control() {
				continue
			}
			recs, err := record.Records(batch)
			if err != nil {
				c.t.Fatal(err)
			}
			for _, r := range recs {
				v.values = append(v.values, string(r.Value))
			}
		}
	}
}

func (c *cluster) fetchCommitted(id int32, topic string, offset int64) kmsg.FetchResponseTopicPartition {
	c.t.Helper()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID = -1
	fetch.IsolationLevel = 1
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, topicIDs[topic]
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = offset
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	rp := c.request(id, fetch).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		c.t.Fatalf("read_committed fetch of %s-0 at %d on broker %d: %v", topic, offset, id, kerr.ErrorForCode(rp.ErrorCode))
	}
	return rp
}

func TestTxnMarkersCommitOnRemoteLeader(t *testing.T) {
	c, groups2 := newTxnCluster(t, nil)
	const pid = 4000
	c.produceTxn(2, "tx", pid, 0, 0, "a", "b")
	c.produceTxn(1, "t", pid, 0, 0, "x")
	if v := c.readCommitted(2, "tx"); v.lso != 0 || len(v.values) != 0 {
		t.Fatalf("before the marker: lso %d values %v, want 0 []", v.lso, v.values)
	}

	w := c.markerWriter(1, c.router.dial)
	tps := []txn.TopicPartition{{Topic: "tx", Partition: 0}, {Topic: "t", Partition: 0}, {Topic: offsetsTopic, Partition: 0}}
	if err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 0, CoordinatorEpoch: 3, Commit: true}, tps); err != nil {
		t.Fatalf("WriteMarkers: %v", err)
	}
	// Remote partition: two records and the marker, all committed.
	if v := c.readCommitted(2, "tx"); fmt.Sprint(v.values) != "[a b]" || v.lso != 3 || v.hw != 3 || len(v.aborted) != 0 {
		t.Errorf("tx-0 on broker 2: values %v lso %d hw %d aborted %v, want [a b] 3 3 []", v.values, v.lso, v.hw, v.aborted)
	}
	if leo := partitionOn(t, c, 1, "tx").Offsets().LogEndOffset; leo != 3 {
		t.Errorf("follower of tx-0 has log end offset %d, want 3: a marker counts once replicated", leo)
	}
	// Local partition, written directly.
	if v := c.readCommitted(1, "t"); fmt.Sprint(v.values) != "[x]" || v.lso != 2 {
		t.Errorf("t-0 on broker 1: values %v lso %d, want [x] 2", v.values, v.lso)
	}
	// Broker 2's group coordinator, not broker 1's, applies the marker.
	if got := groups2.done(); got != "[p0 pid 4000 commit true]" {
		t.Errorf("broker 2's group coordinator learned %s, want [p0 pid 4000 commit true]", got)
	}
	// Writing the markers again (a retried call) is harmless.
	if err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 0, CoordinatorEpoch: 3, Commit: true}, tps); err != nil {
		t.Fatalf("WriteMarkers again: %v", err)
	}
	if v := c.readCommitted(2, "tx"); fmt.Sprint(v.values) != "[a b]" || v.lso != 4 {
		t.Errorf("after a second marker: values %v lso %d, want [a b] 4", v.values, v.lso)
	}
}

func TestTxnMarkersAbortOnRemoteLeader(t *testing.T) {
	c, groups2 := newTxnCluster(t, nil)
	const pid = 4001
	c.produceTxn(2, "tx", pid, 0, 0, "a", "b")
	w := c.markerWriter(1, c.router.dial)
	tps := []txn.TopicPartition{{Topic: "tx", Partition: 0}, {Topic: offsetsTopic, Partition: 0}}
	if err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 0, CoordinatorEpoch: 0, Commit: false}, tps); err != nil {
		t.Fatalf("WriteMarkers: %v", err)
	}
	v := c.readCommitted(2, "tx")
	if v.lso != 3 || v.hw != 3 || fmt.Sprint(v.aborted) != "[4001@0]" {
		t.Errorf("tx-0 after abort: lso %d hw %d aborted %v, want 3 3 [4001@0]", v.lso, v.hw, v.aborted)
	}
	if got := groups2.done(); got != "[p0 pid 4001 commit false]" {
		t.Errorf("group coordinator learned %s, want [p0 pid 4001 commit false]", got)
	}
}

// notLeaderConn answers WriteTxnMarkers with NOT_LEADER_OR_FOLLOWER for
// every partition while refuse is set, and passes requests on otherwise.
type notLeaderConn struct {
	txn.PeerConn
	refuse *atomic.Bool
}

func (c *notLeaderConn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	wr, ok := req.(*kmsg.WriteTxnMarkersRequest)
	if !ok || !c.refuse.Load() {
		return c.PeerConn.Request(ctx, req)
	}
	resp := wr.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range wr.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.NotLeaderForPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func TestTxnMarkersRetriedWhenRemoteLeaderRefuses(t *testing.T) {
	c, _ := newTxnCluster(t, nil)
	const pid = 4002
	c.produceTxn(2, "tx", pid, 0, 0, "a")
	var refuse atomic.Bool
	refuse.Store(true)
	var dials atomic.Int32
	w := c.markerWriter(1, func(ctx context.Context, addr string) (txn.PeerConn, error) {
		dials.Add(1)
		pc, err := c.router.dial(ctx, addr)
		if err != nil {
			return nil, err
		}
		return &notLeaderConn{PeerConn: pc, refuse: &refuse}, nil
	})
	tps := []txn.TopicPartition{{Topic: "tx", Partition: 0}}

	err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 0, CoordinatorEpoch: 0, Commit: true}, tps)
	if !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("remote leader answering NOT_LEADER_OR_FOLLOWER: err %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	if v := c.readCommitted(2, "tx"); v.lso != 0 {
		t.Fatalf("lso %d after a refused marker, want 0", v.lso)
	}

	// A broken connection fails the call too, and is dialed again.
	c.router.setCut(addr(2), true)
	refuse.Store(false)
	if err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 0, CoordinatorEpoch: 0, Commit: true}, tps); err == nil {
		t.Fatal("WriteMarkers through a cut connection succeeded")
	}
	c.router.setCut(addr(2), false)
	before := dials.Load()
	if err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 0, CoordinatorEpoch: 0, Commit: true}, tps); err != nil {
		t.Fatalf("retry once the leader is reachable: %v", err)
	}
	if dials.Load() != before+1 {
		t.Errorf("%d dials for the retry, want 1 redial after the broken connection", dials.Load()-before)
	}
	if v := c.readCommitted(2, "tx"); fmt.Sprint(v.values) != "[a]" || v.lso != 2 {
		t.Errorf("after the retry: values %v lso %d, want [a] 2", v.values, v.lso)
	}
	// The connection is kept for the next transaction.
	if err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 0, CoordinatorEpoch: 0, Commit: true}, tps); err != nil {
		t.Fatal(err)
	}
	if dials.Load() != before+1 {
		t.Errorf("a healthy connection was dialed again (%d dials)", dials.Load()-before)
	}
}

// expiringConn is a connection whose SASL session has ended: it sends
// nothing (kclient.ErrSessionExpired) and counts Close calls.
type expiringConn struct {
	txn.PeerConn
	closed *atomic.Int32
}

func (c *expiringConn) Request(context.Context, kmsg.Request) (kmsg.Response, error) {
	return nil, kclient.ErrSessionExpired
}

func (c *expiringConn) Close() error { c.closed.Add(1); return c.PeerConn.Close() }

// A marker request that the connection did not send because its SASL
// session ends goes out on a new connection in the same call, and the
// retired connection is left to close itself (it may still carry other
// calls' answers).
func TestTxnMarkersOutliveTheSASLSession(t *testing.T) {
	c, _ := newTxnCluster(t, nil)
	const pid = 4004
	c.produceTxn(2, "tx", pid, 0, 0, "a")
	var dials, closed atomic.Int32
	w := c.markerWriter(1, func(ctx context.Context, addr string) (txn.PeerConn, error) {
		pc, err := c.router.dial(ctx, addr)
		if err != nil || dials.Add(1) > 1 {
			return pc, err
		}
		return &expiringConn{PeerConn: pc, closed: &closed}, nil
	})
	if err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 0, CoordinatorEpoch: 0, Commit: true}, []txn.TopicPartition{{Topic: "tx", Partition: 0}}); err != nil {
		t.Fatalf("WriteMarkers when the session ends: %v", err)
	}
	if d, cl := dials.Load(), closed.Load(); d != 2 || cl != 0 {
		t.Errorf("%d dials and %d closes of the retired connection, want 2 and 0", d, cl)
	}
	if v := c.readCommitted(2, "tx"); fmt.Sprint(v.values) != "[a]" || v.lso != 2 {
		t.Errorf("after the marker: values %v lso %d, want [a] 2", v.values, v.lso)
	}
}

func TestTxnMarkersNoLeaderRetried(t *testing.T) {
	c, _ := newTxnCluster(t, nil)
	none := int32(-1)
	c.apply(&metadata.PartitionChangeRecord{PartitionID: 0, TopicID: txTopicID, Leader: &none})
	w := c.markerWriter(1, c.router.dial)
	err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: 4003, Epoch: 0, CoordinatorEpoch: 0, Commit: true}, []txn.TopicPartition{{Topic: "tx", Partition: 0}})
	if !errors.Is(err, kerr.LeaderNotAvailable) {
		t.Errorf("partition without a leader: err %v, want LEADER_NOT_AVAILABLE", err)
	}
	// A deleted topic is skipped.
	if err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: 4003, Epoch: 0, CoordinatorEpoch: 0, Commit: true}, []txn.TopicPartition{{Topic: "gone", Partition: 0}}); err != nil {
		t.Errorf("partition of a deleted topic: %v, want it skipped", err)
	}
}

// TestTxnMarkersClosedLogRetried: a partition this node leads whose log
// was closed under the marker (its log directory failed) while the topic
// still exists fails the call, so the coordinator retries it, rather than
// being skipped like a deleted topic's.
func TestTxnMarkersClosedLogRetried(t *testing.T) {
	c, _ := newTxnCluster(t, nil)
	const pid = 4004
	c.produceTxn(2, "tx", pid, 0, 0, "a")
	p, ok := c.nodes[2].replicas.Partition("tx", 0)
	if !ok {
		t.Fatal("tx-0 is not on node 2")
	}
	if err := p.Log().Close(); err != nil {
		t.Fatal(err)
	}
	w := c.markerWriter(2, c.router.dial)
	err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 0, CoordinatorEpoch: 0, Commit: true}, []txn.TopicPartition{{Topic: "tx", Partition: 0}})
	if !errors.Is(err, storage.ErrClosed) {
		t.Errorf("marker to a closed log of an existing topic: err %v, want it reported (storage.ErrClosed)", err)
	}
}

func TestWriteTxnMarkersHandlerCodes(t *testing.T) {
	c, groups2 := newTxnCluster(t, nil)
	const pid = 4100
	c.produceTxn(2, "tx", pid, 1, 0, "a")
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := func(epoch int16, coordinatorEpoch int32, topics map[string][]int32) {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = pid, epoch, coordinatorEpoch, true
		for _, name := range []string{"nope", "t", "tx", offsetsTopic} {
			if ps, ok := topics[name]; ok {
				rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				rt.Topic, rt.Partitions = name, ps
				m.Topics = append(m.Topics, rt)
			}
		}
		req.Markers = append(req.Markers, m)
	}
	mk(0, 5, map[string][]int32{"tx": {0}})                                              // older producer epoch
	mk(1, 5, map[string][]int32{"nope": {0}, "t": {0}, "tx": {0, 7}, offsetsTopic: {0}}) // commits tx-0
	resp := c.request(2, req).(*kmsg.WriteTxnMarkersResponse)
	var got []string
	for _, m := range resp.Markers {
		for _, rt := range m.Topics {
			for _, rp := range rt.Partitions {
				got = append(got, fmt.Sprintf("%d %s-%d %s", m.ProducerID, rt.Topic, rp.Partition, errName(rp.ErrorCode)))
			}
		}
	}
	want := "[4100 tx-0 INVALID_PRODUCER_EPOCH 4100 nope-0 UNKNOWN_TOPIC_OR_PARTITION 4100 t-0 NOT_LEADER_FOR_PARTITION " +
		"4100 tx-0 OK 4100 tx-7 UNKNOWN_TOPIC_OR_PARTITION 4100 __consumer_offsets-0 OK]"
	if fmt.Sprint(got) != want {
		t.Errorf("answers\n %v\nwant\n %s", got, want)
	}
	if v := c.readCommitted(2, "tx"); fmt.Sprint(v.values) != "[a]" || v.lso != 2 {
		t.Errorf("tx-0: values %v lso %d, want [a] 2", v.values, v.lso)
	}
	if got := groups2.done(); got != "[p0 pid 4100 commit true]" {
		t.Errorf("group coordinator learned %s, want [p0 pid 4100 commit true]", got)
	}

	// An older coordinator epoch is fenced; the marker writer takes such
	// a refusal as final, as for a local partition.
	req = kmsg.NewPtrWriteTxnMarkersRequest()
	mk(1, 4, map[string][]int32{"tx": {0}})
	rp := c.request(2, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0]
	if rp.ErrorCode != kerr.TransactionCoordinatorFenced.Code {
		t.Errorf("coordinator epoch 4 after 5: %s, want TRANSACTION_COORDINATOR_FENCED", errName(rp.ErrorCode))
	}
	w := c.markerWriter(1, c.router.dial)
	if err := w.WriteMarkers(markerCtx(t), txn.Marker{ProducerID: pid, Epoch: 1, CoordinatorEpoch: 4, Commit: true}, []txn.TopicPartition{{Topic: "tx", Partition: 0}}); err != nil {
		t.Errorf("WriteMarkers refused as stale by the remote leader: %v, want nil (not retried)", err)
	}
	if leo := partitionOn(t, c, 2, "tx").Offsets().LogEndOffset; leo != 2 {
		t.Errorf("log end offset %d, want 2: no marker written for a fenced coordinator", leo)
	}
}

func errName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		return err.(*kerr.Error).Message
	}
	return "OK"
}

// partitionOn returns partition 0 of topic on broker id.
func partitionOn(t *testing.T, c *cluster, id int32, topic string) *replica.Partition {
	t.Helper()
	p, ok := c.nodes[id].replicas.Partition(topic, 0)
	if !ok {
		t.Fatalf("broker %d does not host %s-0", id, topic)
	}
	return p
}

// markerCtx bounds a test's calls.
func markerCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The whole transaction path on two brokers: the transaction coordinator
// runs on broker 1, the data partition and the group's __consumer_offsets
// partition are led by broker 2.
func TestTransactionAcrossBrokers(t *testing.T) {
	var nextPID atomic.Int64
	nextPID.Store(5000)
	var w *txn.MarkerChannel
	var coord *txn.Coordinator
	c, groups2 := newTxnCluster(t, func(c *cluster) broker.TxnCoordinator {
		w = c.markerChannel(1, c.router.dial)
		coord = txn.New(txn.Config{
			NumPartitions:      1,
			MarkerRetryBackoff: 10 * time.Millisecond,
			ProducerIDs:        func(context.Context) (int64, error) { return nextPID.Add(1), nil },
			GroupPartition:     func(string) (string, int32) { return offsetsTopic, 0 },
			Markers:            w,
		})
		return coord
	})
	// Closed before the brokers, as the server does.
	t.Cleanup(w.Close)
	t.Cleanup(coord.Close)
	stateID := metadata.Uuid{6, 6, 6}
	c.apply(&metadata.TopicRecord{Name: txnStateTopic, TopicID: stateID},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: stateID, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = kmsg.StringPtr("tx-across")
	init.TransactionTimeoutMillis = 60000
	init.ProducerID, init.ProducerEpoch = -1, -1
	ir := retryCode(t, c, init, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch

	begin := func() {
		t.Helper()
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx-across", pid, epoch
		at := kmsg.NewAddPartitionsToTxnRequestTopic()
		at.Topic, at.Partitions = "tx", []int32{0}
		add.Topics = append(add.Topics, at)
		ar := retryCode(t, c, add, func(r *kmsg.AddPartitionsToTxnResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
		if code := ar.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("AddPartitionsToTxn of a partition led by broker 2: %v", kerr.ErrorForCode(code))
		}
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx-across", pid, epoch, "g"
		if r := retryCode(t, c, ao, func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode }); r.ErrorCode != 0 {
			t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	end := func(commit bool) {
		t.Helper()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "tx-across", pid, epoch, commit
		if r := retryCode(t, c, req, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode }); r.ErrorCode != 0 {
			t.Fatalf("EndTxn: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}

	begin()
	c.produceTxn(2, "tx", pid, epoch, 0, "a", "b")
	end(true)
	eventually(t, "the commit marker on broker 2", func() bool { return c.readCommitted(2, "tx").lso == 3 })
	if v := c.readCommitted(2, "tx"); fmt.Sprint(v.values) != "[a b]" || len(v.aborted) != 0 {
		t.Errorf("after commit: values %v aborted %v, want [a b] []", v.values, v.aborted)
	}
	want := fmt.Sprintf("[p0 pid %d commit true]", pid)
	eventually(t, "broker 2's group coordinator to learn the commit", func() bool { return groups2.done() == want })

	begin() // CONCURRENT_TRANSACTIONS until the commit is complete
	c.produceTxn(2, "tx", pid, epoch, 2, "c")
	end(false)
	eventually(t, "the abort marker on broker 2", func() bool { return c.readCommitted(2, "tx").lso == 5 })
	if v := c.readCommitted(2, "tx"); fmt.Sprint(v.aborted) != fmt.Sprintf("[%d@3]", pid) {
		t.Errorf("after abort: aborted transactions %v, want [%d@3]", v.aborted, pid)
	}
	want = fmt.Sprintf("[p0 pid %d commit true p0 pid %d commit false]", pid, pid)
	eventually(t, "broker 2's group coordinator to learn the abort", func() bool { return groups2.done() == want })
}

// retryCode sends req to broker 1 until its code is not one of the
// coordinator's transient ones.
func retryCode[R kmsg.Response](t *testing.T, c *cluster, req kmsg.Request, code func(R) int16) R {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := c.request(1, req).(R)
		switch code(r) {
		case kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code,
			kerr.ConcurrentTransactions.Code:
			if time.Now().After(deadline) {
				t.Fatalf("%s still %v", kmsg.NameForKey(req.Key()), kerr.ErrorForCode(code(r)))
			}
			time.Sleep(10 * time.Millisecond)
		default:
			return r
		}
	}
}
