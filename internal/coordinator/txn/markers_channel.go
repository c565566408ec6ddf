package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
)

// offsetsTopic is the internal topic of the group coordinator; a marker
// committed to one of its partitions is handed to it.
const offsetsTopic = "__consumer_offsets"

// WriteTimeout bounds how long a write of the transaction coordinator (a
// __transaction_state record, or a marker) waits to be replicated:
// Kafka's request.timeout.ms default.
const WriteTimeout = 30 * time.Second

// Marker is one transaction marker: the end of ProducerID's transaction
// at Epoch, stamped with the coordinator's epoch. TransactionVersion is
// the client's (WriteTxnMarkers v2): at 2 the marker's epoch is the one
// EndTxn bumped to, and a partition refuses a marker whose epoch is not
// above the producer's (KIP-890).
type Marker struct {
	ProducerID         int64
	Epoch              int16
	CoordinatorEpoch   int32
	Commit             bool
	TransactionVersion int16
}

// TransactionCompleter learns of the markers committed to partitions of
// __consumer_offsets, so a producer's pending transactional offsets
// commit or drop. The group coordinator implements it
// (group.Coordinator.CompleteTransaction); it is an interface here so
// this package does not depend on the group package.
type TransactionCompleter interface {
	CompleteTransaction(partition int32, producerID int64, commit bool)
}

// PeerConn is a connection to another broker, the same the replica
// fetchers use. *kclient.Conn implements it.
type PeerConn = replica.PeerConn

// WriteLocalMarkers appends m to each partition of tps this node leads and
// waits, against one deadline of timeout, until every marker is committed
// (replicated to the ISR). It returns each partition's error, nil once
// committed: NOT_LEADER_OR_FOLLOWER where this node does not lead, the
// partition's refusal (INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED), storage.ErrClosed for a partition
// deleted meanwhile, or the failed wait. Only a committed marker on
// __consumer_offsets is handed to groups (which may be nil): before that a
// new leader might not have it.
//
// Both the local half of MarkerChannel and the broker's WriteTxnMarkers
// handler write markers through it, so a marker means the same on either
// path.
func WriteLocalMarkers(ctx context.Context, replicas *replica.Manager, groups TransactionCompleter,
	m Marker, tps []TopicPartition, timeout time.Duration) []error {
	errs := make([]error, len(tps))
	parts := make([]*replica.Partition, len(tps))
	offsets := make([]int64, len(tps))
	for i, tp := range tps {
		p, ok := replicas.Partition(tp.Topic, tp.Partition)
		if !ok || !p.IsLeader() {
			errs[i] = kerr.NotLeaderForPartition
			continue
		}
		parts[i] = p
		offsets[i], errs[i] = p.WriteTxnMarker(m.ProducerID, m.Epoch, m.CoordinatorEpoch, m.Commit, m.TransactionVersion)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for i, tp := range tps {
		if errs[i] != nil || parts[i] == nil {
			continue
		}
		if errs[i] = parts[i].WaitCommitted(wctx, offsets[i]); errs[i] != nil {
			errs[i] = fmt.Errorf("marker not committed: %w", errs[i])
			continue
		}
		if tp.Topic == offsetsTopic && groups != nil {
			groups.CompleteTransaction(tp.Partition, m.ProducerID, m.Commit)
		}
	}
	return errs
}

// staleMarkerError reports a marker the partition refused because the
// producer or the coordinator moved on. Kafka's coordinator stops sending
// such a marker: retrying would never succeed.
func staleMarkerError(err error) bool {
	return errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.TransactionCoordinatorFenced)
}

// MarkerChannelConfig configures a MarkerChannel.
type MarkerChannelConfig struct {
	// NodeID is this broker's id; -1 when unknown. (Zero is a node id.)
	NodeID int32
	// Replicas holds the partitions whose markers are written locally.
	Replicas *replica.Manager
	// Image returns the latest metadata image: the leaders of the
	// partitions and the endpoints of the brokers.
	Image func() *metadata.Image
	// Groups, when not nil, learns of every marker committed to a
	// partition of __consumer_offsets this node leads, so pending
	// transactional offsets commit or drop. (Other brokers tell their own
	// group coordinator.)
	Groups TransactionCompleter
	// Listener names the listener of the other brokers that is dialed:
	// inter.broker.listener.name. Empty means PLAINTEXT.
	Listener string
	// Dial connects to another broker; nil uses kclient.Dial. Connections
	// are kept, one per broker, and dialed again after an error.
	Dial func(ctx context.Context, addr string) (PeerConn, error)
	// RequestTimeout bounds one WriteTxnMarkers request to another broker,
	// dialing included. Zero means WriteTimeout (30 s, how long the leader
	// waits for the marker to be replicated) plus 5 s.
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// MarkerChannel writes transaction markers for the transaction
// coordinator: Kafka's TransactionMarkerChannelManager. It implements
// MarkerWriter. Markers for partitions this node leads are appended
// directly; the others go to their leader, one WriteTxnMarkers request
// per broker, sent concurrently.
type MarkerChannel struct {
	cfg MarkerChannelConfig

	mu struct {
		sync.Mutex
		closed bool
		conns  map[int32]PeerConn // by broker id
	}
}

// NewMarkerChannel returns the marker channel cfg describes.
func NewMarkerChannel(cfg MarkerChannelConfig) *MarkerChannel {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Listener == "" {
		cfg.Listener = "PLAINTEXT"
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = WriteTimeout + 5*time.Second
	}
	if cfg.Dial == nil {
		clientID := fmt.Sprintf("samsa-txn-markers-%d", cfg.NodeID)
		cfg.Dial = func(ctx context.Context, addr string) (PeerConn, error) {
			c, err := kclient.Dial(ctx, addr, clientID)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	w := &MarkerChannel{cfg: cfg}
	w.mu.conns = make(map[int32]PeerConn)
	return w
}

// Close closes the connections to other brokers; later remote markers
// fail. Call it once the transaction coordinator has stopped.
func (w *MarkerChannel) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.closed = true
	for id, c := range w.mu.conns {
		_ = c.Close()
		delete(w.mu.conns, id)
	}
}

// WriteMarkers implements MarkerWriter. Partitions of deleted topics are
// skipped: nobody can read their transaction any more; so are partitions
// that refuse the marker as stale (see staleMarkerError). Any other
// failure — no leader, a leader that does not know it leads yet, a broken
// connection, a marker not committed in time — fails the call, so the
// coordinator retries it whole (writing a marker twice is harmless).
func (w *MarkerChannel) WriteMarkers(ctx context.Context, m Marker, partitions []TopicPartition) error {
	local, remote, errs := w.route(partitions)
	var mu sync.Mutex
	var wg sync.WaitGroup
	report := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	for leader, tps := range remote {
		wg.Add(1)
		go func() {
			defer wg.Done()
			report(w.writeRemote(ctx, leader, m, tps))
		}()
	}
	if len(local) > 0 {
		report(w.writeLocal(ctx, m, local))
	}
	wg.Wait()
	return errors.Join(errs...)
}

// route sorts partitions by where their marker is written: here, at
// another broker, or nowhere yet (no leader: an error, so retried).
// Partitions of deleted topics are dropped.
func (w *MarkerChannel) route(partitions []TopicPartition) (local []TopicPartition, remote map[int32][]TopicPartition, errs []error) {
	img := w.cfg.Image()
	remote = make(map[int32][]TopicPartition)
	for _, tp := range partitions {
		t, ok := img.Topic(tp.Topic)
		if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			continue
		}
		if p, ok := w.cfg.Replicas.Partition(tp.Topic, tp.Partition); ok && p.IsLeader() {
			local = append(local, tp)
			continue
		}
		switch leader := t.Partitions[tp.Partition].Leader; {
		case leader < 0:
			errs = append(errs, fmt.Errorf("%s-%d: no leader: %w", tp.Topic, tp.Partition, kerr.LeaderNotAvailable))
		case leader == w.cfg.NodeID:
			// The image names us but the replica has not caught up.
			errs = append(errs, fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, kerr.NotLeaderForPartition))
		default:
			remote[leader] = append(remote[leader], tp)
		}
	}
	return local, remote, errs
}

// writeLocal writes the markers of the partitions this node leads.
func (w *MarkerChannel) writeLocal(ctx context.Context, m Marker, tps []TopicPartition) error {
	var errs []error
	for i, err := range WriteLocalMarkers(ctx, w.cfg.Replicas, w.cfg.Groups, m, tps, WriteTimeout) {
		tp := tps[i]
		switch {
		case err == nil:
		case errors.Is(err, storage.ErrClosed) && w.deleted(tp):
			// Deleted while we wrote. A log closed for another reason (its
			// directory failed, leadership moved) is retried: skipping it
			// would leave the transaction open on the partition for ever.
		case staleMarkerError(err):
			w.logStale(tp, m, err)
		default:
			errs = append(errs, fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, err))
		}
	}
	return errors.Join(errs...)
}

// writeRemote sends the markers of tps to their leader in one
// WriteTxnMarkers request and checks every partition's answer.
func (w *MarkerChannel) writeRemote(ctx context.Context, leader int32, m Marker, tps []TopicPartition) error {
	kresp, err := w.Send(ctx, leader, markersRequest(m, tps))
	if err != nil {
		return fmt.Errorf("markers to broker %d: %w", leader, err)
	}
	resp, ok := kresp.(*kmsg.WriteTxnMarkersResponse)
	if !ok {
		return fmt.Errorf("markers to broker %d: unexpected response %T", leader, kresp)
	}
	codes := make(map[TopicPartition]int16)
	for _, rm := range resp.Markers {
		if rm.ProducerID != m.ProducerID {
			continue
		}
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				codes[TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
			}
		}
	}
	var errs []error
	for _, tp := range tps {
		code, ok := codes[tp]
		if !ok {
			errs = append(errs, fmt.Errorf("%s-%d: broker %d did not answer for the partition", tp.Topic, tp.Partition, leader))
			continue
		}
		err := kerr.ErrorForCode(code)
		switch {
		case err == nil:
		case staleMarkerError(err):
			w.logStale(tp, m, err)
		case errors.Is(err, kerr.UnknownTopicOrPartition) && w.deleted(tp):
		default:
			errs = append(errs, fmt.Errorf("%s-%d: broker %d: %w", tp.Topic, tp.Partition, leader, err))
		}
	}
	return errors.Join(errs...)
}

// Send sends req to broker id over the kept connection to it, within
// RequestTimeout, and returns its answer. A connection that breaks, or a
// peer silent past the timeout, is dialed again on the next call. Besides
// markers it carries the AddPartitionsToTxn a partition leader sends to a
// transaction coordinator ([PartitionAdder]).
func (w *MarkerChannel) Send(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	conn, err := w.conn(rctx, id)
	if err != nil {
		return nil, err
	}
	kresp, err := conn.Request(rctx, req)
	if errors.Is(err, kclient.ErrSessionExpired) {
		// Not sent: the connection's SASL session ends
		// (connections.max.reauth.ms). A new one takes it, now; the
		// retired one closes itself once its answers are in.
		w.forgetConn(id, conn)
		if conn, err = w.conn(rctx, id); err != nil {
			return nil, err
		}
		kresp, err = conn.Request(rctx, req)
	}
	if err != nil {
		// A caller that gave up says nothing of the connection; a broken
		// one, or a peer silent past the timeout, is dialed again.
		if ctx.Err() == nil {
			w.dropConn(id, conn)
		}
		return nil, err
	}
	if kresp.Key() != req.Key() {
		w.dropConn(id, conn)
		return nil, fmt.Errorf("unexpected response %T", kresp)
	}
	return kresp, nil
}

// markersRequest is the WriteTxnMarkers request for m on tps.
func markersRequest(m Marker, tps []TopicPartition) *kmsg.WriteTxnMarkersRequest {
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch
	rm.TransactionVersion = int8(m.TransactionVersion)
	topics := make(map[string]int)
	for _, tp := range tps {
		i, ok := topics[tp.Topic]
		if !ok {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic = tp.Topic
			rm.Topics = append(rm.Topics, rt)
			i = len(rm.Topics) - 1
			topics[tp.Topic] = i
		}
		rm.Topics[i].Partitions = append(rm.Topics[i].Partitions, tp.Partition)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Markers = append(req.Markers, rm)
	return req
}

// deleted reports whether tp's topic or partition is gone from the latest
// image: its leader's UNKNOWN_TOPIC_OR_PARTITION is then final.
func (w *MarkerChannel) deleted(tp TopicPartition) bool {
	t, ok := w.cfg.Image().Topic(tp.Topic)
	return !ok || int(tp.Partition) >= len(t.Partitions)
}

func (w *MarkerChannel) logStale(tp TopicPartition, m Marker, err error) {
	w.cfg.Logger.Warn("transaction marker refused as stale", "topic", tp.Topic, "partition", tp.Partition,
		"producer.id", m.ProducerID, "epoch", m.Epoch, "coordinator.epoch", m.CoordinatorEpoch, "err", err)
}

// conn returns the pooled connection to broker id, dialing its endpoint
// on the inter-broker listener (looked up in the latest image) if there
// is none. Two callers may dial at once; the loser's connection is closed.
func (w *MarkerChannel) conn(ctx context.Context, id int32) (PeerConn, error) {
	w.mu.Lock()
	c, ok := w.mu.conns[id]
	closed := w.mu.closed
	w.mu.Unlock()
	switch {
	case ok:
		return c, nil
	case closed:
		return nil, errors.New("marker writer closed")
	}
	br, ok := w.cfg.Image().Broker(id)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", id)
	}
	ep, ok := endpointFor(br, w.cfg.Listener)
	if !ok {
		return nil, fmt.Errorf("broker %d has no endpoint on listener %s", id, w.cfg.Listener)
	}
	c, err := w.cfg.Dial(ctx, net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))))
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.closed {
		_ = c.Close()
		return nil, errors.New("marker writer closed")
	}
	if cur, ok := w.mu.conns[id]; ok {
		_ = c.Close()
		return cur, nil
	}
	w.mu.conns[id] = c
	return c, nil
}

// dropConn closes c after an error, unless it was already replaced.
func (w *MarkerChannel) dropConn(id int32, c PeerConn) {
	w.forgetConn(id, c)
	_ = c.Close()
}

// forgetConn takes c out of the pool, unless it was already replaced.
func (w *MarkerChannel) forgetConn(id int32, c PeerConn) {
	w.mu.Lock()
	if w.mu.conns[id] == c {
		delete(w.mu.conns, id)
	}
	w.mu.Unlock()
}

// endpointFor finds a broker's endpoint on the named listener. (The
// broker's Metadata handler and replica fetchers have their own copy: this
// package must not import the broker.)
func endpointFor(br metadata.BrokerImage, listener string) (metadata.Endpoint, bool) {
	for _, ep := range br.Endpoints {
		if ep.Name == listener {
			return ep, true
		}
	}
	return metadata.Endpoint{}, false
}
