package raft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/record"
)

// Observer makes a broker-only node an observer of the metadata quorum
// (Kafka's KafkaRaftClient as an observer): it long-polls the quorum
// leader's controller listener with Fetch for __cluster_metadata (served
// by the leader's MetadataLog), applies each entry to the Applier with the
// same Apply the voters' Node uses, and restores the leader's snapshot
// with FetchSnapshot (Applier.Restore) when it is too far behind. It keeps
// nothing on disk: a restart fetches the log again from the latest
// snapshot.
//
// It is also the node's source of who leads the quorum (Leader,
// NotLeader, Known) and where the voters are (Addr): the leader that last
// answered a fetch, else the voters in turn. It follows the voter set as
// it changes (KIP-853), as Kafka's observers do: from the VotersRecords
// in the log and in snapshots, and from the leader a voter names in a
// NOT_LEADER answer with its endpoint (NodeEndpoints).
type Observer struct {
	cfg    ObserverConfig
	logger *slog.Logger

	vmu sync.Mutex
	// addrs is every controller listener learned (host:port by node
	// id): the voters', and those of voters since removed, so a replay
	// of old voter sets never leaves the observer without an address.
	addrs map[int32]string
	order []int32 // the current voter ids, sorted, for round-robin

	leader atomic.Int32 // 0 when unknown
	rr     atomic.Uint32

	// next is the next raft index to fetch; owned by run.
	next uint64
	conn *kclient.Conn
	// connID is the voter conn is dialled to.
	connID int32

	mu struct {
		sync.Mutex
		// hw is the high watermark of the first successful fetch:
		// startup waits until next reaches it. 0 until known.
		hw uint64
	}
	ready     chan struct{} // closed once caught up
	readyOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// ObserverConfig configures an Observer.
type ObserverConfig struct {
	// NodeID is this node's node.id, the replica id of its fetches.
	NodeID int32
	// Voters maps the ids of the voters known at start
	// (controller.quorum.voters, or those the bootstrap servers named) to
	// their controller listeners (host:port).
	Voters map[int32]string
	// Listener is the controller listener's name: of a voter's
	// endpoints, the one to dial (the first when none has the name).
	Listener string
	// Applier replays the fetched entries (Apply) and snapshots
	// (Restore), in log order, on the observer's goroutine.
	Applier Applier
	// Ready reports whether the replayed state can serve (a broker needs
	// a metadata.version): WaitCaughtUp waits for it too. Nil is always.
	Ready func() bool
	// MaxWait is the long-poll duration asked of the leader; 0 is 500ms.
	MaxWait time.Duration
	// Dialer dials the controller listener; its zero value is plain TCP
	// (TLS when the controller listener is SSL).
	Dialer kclient.Dialer
	Logger *slog.Logger
}

// NewObserver returns an observer; Start starts it.
func NewObserver(cfg ObserverConfig) *Observer {
	if cfg.MaxWait == 0 {
		cfg.MaxWait = 500 * time.Millisecond
	}
	if cfg.Ready == nil {
		cfg.Ready = func() bool { return true }
	}
	f := &Observer{cfg: cfg, logger: cfg.Logger, next: 1,
		ready: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	f.setAddrs(maps.Clone(cfg.Voters), slices.Sorted(maps.Keys(cfg.Voters)))
	return f
}

// setAddrs makes addrs the address book and order the voters; the caller
// owns addrs.
func (f *Observer) setAddrs(addrs map[int32]string, order []int32) {
	f.vmu.Lock()
	f.addrs, f.order = addrs, order
	f.vmu.Unlock()
}

// Addr is the controller listener of voter id.
func (f *Observer) Addr(id int32) (string, bool) {
	f.vmu.Lock()
	defer f.vmu.Unlock()
	a, ok := f.addrs[id]
	return a, ok
}

// setVoters makes vs (a VotersRecord's, or a snapshot's) the voter set. A
// voter recorded without endpoints (a static voter) keeps the address it
// had.
func (f *Observer) setVoters(vs []Voter) {
	if len(vs) == 0 {
		return
	}
	f.vmu.Lock()
	next, oldOrder := maps.Clone(f.addrs), f.order
	f.vmu.Unlock()
	var order []int32
	for _, v := range vs {
		id := int32(v.ID)
		i := slices.IndexFunc(v.Endpoints, func(e Endpoint) bool { return e.Name == f.cfg.Listener })
		switch {
		case i >= 0:
			next[id] = v.Endpoints[i].Addr()
		case len(v.Endpoints) > 0:
			next[id] = v.Endpoints[0].Addr()
		}
		if _, ok := next[id]; ok {
			order = append(order, id)
		}
	}
	if len(order) == 0 {
		return
	}
	slices.Sort(order)
	f.setAddrs(next, order)
	if !slices.Equal(order, oldOrder) {
		f.logger.Info("metadata quorum voters changed", "voters", order)
	}
}

// Start runs the fetch loop until Close.
func (f *Observer) Start() { go f.run() }

// WaitCaughtUp blocks until the observer has applied everything the
// leader had committed at its first answer, and Ready.
func (f *Observer) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-f.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("catching up on the metadata log from controller.quorum.voters: %w", ctx.Err())
	}
}

// Close stops the loop and waits for it.
func (f *Observer) Close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

// Leader is the voter to send controller requests to: the known leader,
// else the next voter in turn.
func (f *Observer) Leader() int32 {
	if id := f.leader.Load(); id != 0 {
		return id
	}
	f.vmu.Lock()
	defer f.vmu.Unlock()
	if len(f.order) == 0 {
		return 0
	}
	return f.order[int(f.rr.Load())%len(f.order)]
}

// Known is the known quorum leader, -1 if none.
func (f *Observer) Known() int32 {
	if id := f.leader.Load(); id != 0 {
		return id
	}
	return -1
}

// NotLeader records that id did not act as the leader: the next call to
// Leader tries another voter.
func (f *Observer) NotLeader(id int32) {
	f.leader.CompareAndSwap(id, 0)
	f.rr.Add(1)
}

// learn records a leader named by a NOT_LEADER_OR_FOLLOWER answer, and
// its endpoint when the answer has it (NodeEndpoints): a voter this
// observer has not seen in the log yet.
func (f *Observer) learn(id int32, endpoints []kmsg.FetchResponseBroker) bool {
	if id <= 0 {
		return false
	}
	f.vmu.Lock()
	_, known := f.addrs[id]
	f.vmu.Unlock()
	if !known {
		i := slices.IndexFunc(endpoints, func(b kmsg.FetchResponseBroker) bool { return b.NodeID == id })
		if i < 0 {
			return false
		}
		f.vmu.Lock()
		next, order := maps.Clone(f.addrs), f.order
		f.vmu.Unlock()
		next[id] = net.JoinHostPort(endpoints[i].Host, strconv.Itoa(int(endpoints[i].Port)))
		f.setAddrs(next, order)
		f.logger.Info("metadata quorum leader at a new endpoint", "leader", id, "addr", next[id])
	}
	f.leader.Store(id)
	return true
}

func (f *Observer) run() {
	defer close(f.done)
	defer func() {
		if f.conn != nil {
			f.conn.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-f.stop:
			cancel()
		case <-f.done:
		}
	}()
	for ctx.Err() == nil {
		if !f.fetchOnce(ctx) {
			sleep(ctx, observerBackoff)
		}
	}
}

// fetchOnce sends one Fetch to the leader and handles the answer. It
// reports false when the caller should back off before the next.
func (f *Observer) fetchOnce(ctx context.Context) bool {
	target := f.Leader()
	conn, err := f.dial(ctx, target)
	if err != nil {
		f.fail(ctx, target, err)
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, f.cfg.MaxWait+10*time.Second)
	defer cancel()
	resp, err := conn.Request(rctx, f.fetchRequest())
	if errors.Is(err, kclient.ErrSessionExpired) {
		// Not sent: the SASL session with the leader ends
		// (connections.max.reauth.ms). A new connection to the same
		// leader takes it, now.
		f.dropConn()
		return true
	}
	if err != nil {
		f.dropConn()
		f.fail(ctx, target, err)
		return false
	}
	fresp := resp.(*kmsg.FetchResponse)
	p, err := metadataPartition(fresp)
	if err != nil {
		f.fail(ctx, target, err)
		return false
	}
	switch {
	case p.ErrorCode == kerr.NotLeaderForPartition.Code || p.ErrorCode == kerr.NotController.Code:
		if p.CurrentLeader.LeaderID != target && f.learn(p.CurrentLeader.LeaderID, fresp.Brokers) {
			return true
		}
		f.NotLeader(target)
		return false
	case p.ErrorCode != 0:
		f.fail(ctx, target, kerr.ErrorForCode(p.ErrorCode))
		return false
	}
	f.leader.Store(target)
	if p.SnapshotID.EndOffset >= 0 {
		if err := f.loadSnapshot(ctx, conn, p.SnapshotID.EndOffset, p.SnapshotID.Epoch); err != nil {
			f.fail(ctx, target, fmt.Errorf("load metadata snapshot: %w", err))
			return false
		}
		return true
	}
	if p.LogStartOffset > int64(f.next) {
		// Below the log start and no snapshot to load: the entries
		// before are the empty bootstrap checkpoint.
		f.next = uint64(p.LogStartOffset)
	}
	if err := f.apply(p.RecordBatches); err != nil {
		f.fail(ctx, target, err)
		return false
	}
	f.noteHighWatermark(uint64(max(p.HighWatermark, 0)))
	return true
}

func (f *Observer) fail(ctx context.Context, target int32, err error) {
	if ctx.Err() != nil {
		return
	}
	f.logger.Debug("metadata fetch failed", "controller", target, "err", err)
	f.NotLeader(target)
}

func (f *Observer) fetchRequest() *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = f.cfg.NodeID
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.cfg.NodeID, -1
	req.MaxWaitMillis = int32(f.cfg.MaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = 8 << 20
	req.SessionID, req.SessionEpoch = 0, -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = MetadataTopic, metadataTopicID
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes = 0, int64(f.next), 8<<20
	p.CurrentLeaderEpoch, p.LastFetchedEpoch = -1, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// metadataPartition finds partition 0 of the metadata topic in resp.
func metadataPartition(resp *kmsg.FetchResponse) (kmsg.FetchResponseTopicPartition, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{}, fmt.Errorf("metadata fetch answered %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0], nil
}

// apply replays the fetched batches: one entry per record, its offset the
// raft index; a null value is an entry the Applier never sees.
func (f *Observer) apply(batches []byte) error {
	for len(batches) > 0 {
		batch, rest, err := record.NextBatch(batches)
		if err != nil {
			return fmt.Errorf("metadata fetch: %w", err)
		}
		batches = rest
		h, err := record.ParseHeader(batch)
		if err != nil {
			return fmt.Errorf("metadata fetch: %w", err)
		}
		recs, err := record.Records(batch)
		if err != nil {
			return fmt.Errorf("metadata fetch: %w", err)
		}
		for _, r := range recs {
			idx := uint64(r.Offset)
			if idx < f.next {
				continue
			}
			if idx != f.next {
				return fmt.Errorf("metadata fetch: got index %d, want %d", idx, f.next)
			}
			switch {
			case h.Control():
				// A voter change: the whole voter set after it.
				if isVotersControlKey(r.Key) {
					vs, err := readVotersRecord(r.Value)
					if err != nil {
						return fmt.Errorf("metadata fetch at %d: %w", idx, err)
					}
					f.setVoters(vs)
				}
			case r.Value != nil:
				if err := f.cfg.Applier.Apply(idx, slices.Clone(r.Value)); err != nil {
					// As on a voter: deterministic, so skipped everywhere.
					f.logger.Error("metadata entry rejected by state machine", "index", idx, "err", err)
				}
			}
			f.next = idx + 1
		}
	}
	return nil
}

// noteHighWatermark marks the observer caught up once it has applied what
// the leader had committed at its first answer.
func (f *Observer) noteHighWatermark(hw uint64) {
	f.mu.Lock()
	if f.mu.hw == 0 {
		f.mu.hw = max(hw, 1)
	}
	target := f.mu.hw
	f.mu.Unlock()
	if f.next < target {
		return
	}
	if f.cfg.Ready() {
		f.readyOnce.Do(func() { close(f.ready) })
	}
}

// loadSnapshot downloads the snapshot ending at endOffset and restores the
// Applier from it.
func (f *Observer) loadSnapshot(ctx context.Context, conn *kclient.Conn, endOffset int64, epoch int32) error {
	var data []byte
	for {
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.ReplicaID, req.MaxBytes = f.cfg.NodeID, 8<<20
		t := kmsg.NewFetchSnapshotRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewFetchSnapshotRequestTopicPartition()
		p.Partition, p.CurrentLeaderEpoch, p.Position = 0, -1, int64(len(data))
		p.SnapshotID.EndOffset, p.SnapshotID.Epoch = endOffset, epoch
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := conn.Request(rctx, req)
		cancel()
		if err != nil {
			f.dropConn()
			return err
		}
		r := resp.(*kmsg.FetchSnapshotResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return errors.New("FetchSnapshot answered no partition")
		}
		rp := r.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
			return err
		}
		if rp.Position != int64(len(data)) {
			return fmt.Errorf("FetchSnapshot answered position %d, asked %d", rp.Position, len(data))
		}
		data = append(data, rp.Bytes...)
		if int64(len(data)) >= rp.Size {
			break
		}
		if len(rp.Bytes) == 0 {
			return errors.New("FetchSnapshot answered an empty chunk")
		}
	}
	voters, data, err := unwrapSnapshot(data)
	if err != nil {
		return err
	}
	if err := f.cfg.Applier.Restore(data); err != nil {
		return err
	}
	vs := slices.Collect(maps.Values(voters))
	slices.SortFunc(vs, func(a, b Voter) int { return cmp.Compare(a.ID, b.ID) })
	f.setVoters(vs)
	f.logger.Info("loaded metadata snapshot from the controller", "end_offset", endOffset, "bytes", len(data))
	f.next = uint64(endOffset)
	return nil
}

func (f *Observer) dial(ctx context.Context, id int32) (*kclient.Conn, error) {
	if f.conn != nil && f.connID == id {
		select {
		case <-f.conn.Done():
		default:
			return f.conn, nil
		}
	}
	f.dropConn()
	addr, ok := f.Addr(id)
	if !ok {
		return nil, fmt.Errorf("controller %d is not in controller.quorum.voters", id)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := f.cfg.Dialer.Dial(dctx, addr, fmt.Sprintf("samsa-observer-%d", f.cfg.NodeID))
	if err != nil {
		return nil, fmt.Errorf("dial controller %d at %s: %w", id, addr, err)
	}
	f.conn, f.connID = c, id
	return c, nil
}

func (f *Observer) dropConn() {
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
}

// observerBackoff is the pause after a failed fetch.
const observerBackoff = 100 * time.Millisecond

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
