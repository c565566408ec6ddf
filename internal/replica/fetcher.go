package replica

// Replica fetchers: the follower side of replication (Kafka's
// ReplicaFetcherManager and ReplicaFetcherThread).
//
// A FetcherManager runs one replicaFetcher goroutine per source broker (the
// leader of the partitions fetched). Each fetcher sends one Fetch for all
// of its partitions at a time, as replica NodeID, in an incremental fetch
// session (KIP-227) with the leader as Kafka's FetchSessionHandler keeps
// one: after a full fetch that opens it, each fetch names only the
// partitions whose fetch position changed and forgets those no longer
// fetched, and the leader answers only the partitions with news. It
// applies each partition's answer to the local replica: append,
// high-watermark update, truncation on divergence or out of range. The
// broker's metadata publisher adds and removes partitions (Follow,
// Unfollow) as leaders change; it never waits on the network.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/fetchsession"
	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/metadata"
)

// PeerConn is a connection to another broker, as the replica fetchers use
// it: Request negotiates the version and fails when the connection broke
// (the caller then closes it and dials again).
type PeerConn interface {
	Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	Close() error
}

// followerLog is what a fetcher needs of a follower replica; *Partition
// implements it.
type followerLog interface {
	FetchPosition() (fetchOffset int64, lastFetchedEpoch int32)
	Offsets() Snapshot
	AppendAsFollowerUnsynced(batches []byte, leaderHW, leaderLogStart int64) (syncUpTo int64, err error)
	SyncAppended(upTo int64) error
	UpdateFollowerHighWatermark(leaderHW, leaderLogStart int64)
	TruncateOnDivergence(d EpochEndOffset) error
	TruncateFullyAndStartAt(offset int64) error
}

// FetcherConfig configures a FetcherManager. The internal/server package
// maps Kafka's replica.fetch.* settings to it.
type FetcherConfig struct {
	// NodeID is this broker: fetches are sent as replica NodeID.
	NodeID int32
	// BrokerEpoch returns this broker's epoch from its registration with
	// the controller (-1 or 0 before); fetches carry it (KIP-903).
	BrokerEpoch func() int64
	// Image returns the latest published metadata image. A leader's
	// endpoint is looked up in it on every dial, so a leader that
	// re-registered is found at its new address.
	Image func() *metadata.Image
	// Listener names the inter-broker listener whose endpoint is dialed.
	Listener string
	// Dial connects to another broker's inter-broker listener; nil uses
	// kclient.Dial.
	Dial func(ctx context.Context, addr string) (PeerConn, error)
	// Replicas holds the local follower replicas the fetched data is
	// applied to; a partition it does not (yet) host is retried after
	// Backoff.
	Replicas *Manager

	// MaxWaitMs (replica.fetch.wait.max.ms), MinBytes
	// (replica.fetch.min.bytes), MaxBytes
	// (replica.fetch.response.max.bytes) and PartitionMaxBytes
	// (replica.fetch.max.bytes) are sent in every fetch as they are.
	MaxWaitMs, MinBytes, MaxBytes, PartitionMaxBytes int32
	// Backoff (replica.fetch.backoff.ms) follows a failed fetch or
	// connection; a partition that failed waits as long. It is capped at
	// 500 ms (maxFetchBackoff).
	Backoff time.Duration
	// Logger defaults to discarding; Now to time.Now.
	Logger *slog.Logger
	Now    func() time.Time

	// partition looks up a followed replica; nil uses Replicas. Tests
	// replace it with a fake.
	partition func(topic string, partition int32) (followerLog, bool)
}

// maxFetchBackoff caps fetch.backoff.ms: after a leader dies the
// followers must reach the new one quickly.
const maxFetchBackoff = 500 * time.Millisecond

// ListOffsets timestamps a fetcher asks the leader for: its log end
// offset (as a replica) and its log start offset.
const (
	latestTimestamp   = -1
	earliestTimestamp = -2
)

// warnInterval is how often one repeated fetcher warning is logged.
const warnInterval = 10 * time.Second

// FetcherManager owns the replica fetchers: one goroutine per source
// broker, started when the first partition led there is followed and
// ended when the last one is unfollowed. Follow and Unfollow are called
// by the metadata publisher, Close when the node stops.
type FetcherManager struct {
	cfg FetcherConfig
	wg  sync.WaitGroup

	mu struct {
		sync.Mutex
		closed   bool
		fetchers map[int32]*replicaFetcher // by source broker
		owner    map[TopicPartition]int32  // partition → source broker
	}
}

// NewFetcherManager returns a manager that follows no partition yet.
func NewFetcherManager(cfg FetcherConfig) *FetcherManager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Dial == nil {
		nodeID := cfg.NodeID
		cfg.Dial = func(ctx context.Context, addr string) (PeerConn, error) {
			c, err := kclient.Dial(ctx, addr, fmt.Sprintf("samsa-replica-fetcher-%d", nodeID))
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	if cfg.partition == nil {
		replicas := cfg.Replicas
		cfg.partition = func(topic string, partition int32) (followerLog, bool) {
			if replicas == nil {
				return nil, false
			}
			p, ok := replicas.Partition(topic, partition)
			if !ok {
				return nil, false
			}
			return p, true
		}
	}
	cfg.Backoff = min(cfg.Backoff, maxFetchBackoff)
	m := &FetcherManager{cfg: cfg}
	m.mu.fetchers = make(map[int32]*replicaFetcher)
	m.mu.owner = make(map[TopicPartition]int32)
	return m
}

// Follow makes tp fetched from leader at leaderEpoch. Handing the same
// leader and epoch again changes nothing; a newer epoch (or another
// leader) restarts the partition, unparking it.
func (m *FetcherManager) Follow(tp TopicPartition, topicID [16]byte, leader, leaderEpoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return
	}
	if cur, ok := m.mu.owner[tp]; ok && cur != leader {
		m.removeLocked(tp)
	}
	f := m.mu.fetchers[leader]
	if f == nil {
		f = m.startFetcherLocked(leader)
	}
	m.mu.owner[tp] = leader
	if f.add(tp, topicID, leaderEpoch) {
		m.cfg.Logger.Info("following partition", "topic", tp.Topic, "partition", tp.Partition,
			"leader", leader, "leader.epoch", leaderEpoch)
	}
}

// Unfollow stops fetching tp. When it returns, no fetcher touches the
// replica any more, so it may become leader or be removed.
func (m *FetcherManager) Unfollow(tp TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mu.owner[tp]; ok {
		m.removeLocked(tp)
		m.cfg.Logger.Info("stopped following partition", "topic", tp.Topic, "partition", tp.Partition)
	}
}

func (m *FetcherManager) removeLocked(tp TopicPartition) {
	leader := m.mu.owner[tp]
	delete(m.mu.owner, tp)
	f := m.mu.fetchers[leader]
	if f == nil {
		return
	}
	if f.remove(tp) == 0 {
		// The goroutine ends on its own; Close joins it.
		f.cancel()
		delete(m.mu.fetchers, leader)
	}
}

func (m *FetcherManager) startFetcherLocked(leader int32) *replicaFetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := &replicaFetcher{cfg: &m.cfg, leader: leader, cancel: cancel, wake: make(chan struct{}, 1),
		lastWarn: make(map[string]time.Time)}
	f.mu.parts = make(map[TopicPartition]*followState)
	m.mu.fetchers[leader] = f
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f.run(ctx)
	}()
	return f
}

// Close stops every fetcher and waits for them. Call it before closing
// the logs; later Follows are ignored.
func (m *FetcherManager) Close() {
	m.mu.Lock()
	m.mu.closed = true
	for id, f := range m.mu.fetchers {
		f.cancel()
		delete(m.mu.fetchers, id)
	}
	clear(m.mu.owner)
	m.mu.Unlock()
	m.wg.Wait()
}

// followState is one followed partition in a fetcher. A new leader epoch
// replaces it, so a response to a fetch sent for the old one is dropped
// (the pointer no longer matches).
type followState struct {
	topicID     [16]byte
	leaderEpoch int32
	// parked: the leader fenced our epoch; wait for newer metadata.
	parked bool
	// retryAt delays a partition after a transient error.
	retryAt time.Time
}

// replicaFetcher fetches the partitions led by one source broker. Its
// goroutine (run) owns conn; mu guards the partitions and is held while a
// response is applied to a replica, so unfollow waits for that.
type replicaFetcher struct {
	cfg    *FetcherConfig
	leader int32
	cancel context.CancelFunc
	wake   chan struct{}

	conn     PeerConn             // owned by run
	lastWarn map[string]time.Time // owned by run
	session  fetchSession         // owned by run

	mu struct {
		sync.Mutex
		parts map[TopicPartition]*followState
	}
}

// add starts or restarts a partition; it reports whether anything changed.
func (f *replicaFetcher) add(tp TopicPartition, topicID [16]byte, epoch int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.mu.parts[tp]; ok && st.leaderEpoch >= epoch {
		return false
	}
	f.mu.parts[tp] = &followState{topicID: topicID, leaderEpoch: epoch}
	select {
	case f.wake <- struct{}{}:
	default:
	}
	return true
}

// remove drops a partition and returns how many remain.
func (f *replicaFetcher) remove(tp TopicPartition) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.mu.parts, tp)
	return len(f.mu.parts)
}

// sentPartition is a partition of an in-flight fetch.
type sentPartition struct {
	tp    TopicPartition
	state *followState
	log   followerLog
}

func (f *replicaFetcher) run(ctx context.Context) {
	defer f.closeConn()
	var backoff time.Duration
	for {
		if backoff > 0 && !sleepCtx(ctx, backoff) {
			return
		}
		backoff = 0
		if ctx.Err() != nil {
			return
		}
		req, sent, next := f.buildFetch()
		if len(sent) == 0 {
			if !f.idle(ctx, next) {
				return
			}
			continue
		}
		if f.conn == nil {
			conn, err := f.dial(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				f.warn("dial", "cannot connect to leader", "leader", f.leader, "err", err)
				backoff = f.cfg.Backoff
				continue
			}
			f.conn = conn
		}
		f.session.prepare(req)
		kresp, err := f.conn.Request(ctx, req)
		if errors.Is(err, kclient.ErrSessionExpired) {
			// Not sent: the SASL session with the leader ends
			// (connections.max.reauth.ms). A new one takes it, now.
			f.closeConn()
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			f.warn("fetch", "replica fetch failed", "leader", f.leader, "err", err)
			f.closeConn()
			backoff = f.cfg.Backoff
			continue
		}
		resp, ok := kresp.(*kmsg.FetchResponse)
		if !ok {
			f.closeConn()
			backoff = f.cfg.Backoff
			continue
		}
		if resp.ErrorCode != 0 {
			f.session.failed(resp.ErrorCode)
			if !isSessionError(resp.ErrorCode) {
				f.warn("fetch-error", "replica fetch refused", "leader", f.leader, "err", kerr.ErrorForCode(resp.ErrorCode))
				backoff = f.cfg.Backoff
			}
			continue
		}
		f.session.succeeded(resp.SessionID)
		// Failed partitions are delayed on their own (retryAt); the
		// others go on at the leader's long-poll pace.
		f.apply(ctx, resp, sent)
	}
}

// idle waits until a partition is added or a delayed one is due.
func (f *replicaFetcher) idle(ctx context.Context, next time.Time) bool {
	var timer <-chan time.Time
	if !next.IsZero() {
		t := time.NewTimer(max(next.Sub(f.cfg.Now()), time.Millisecond))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-f.wake:
	case <-timer:
	}
	return true
}

// buildFetch makes the request for every partition ready to fetch. next
// is when the earliest delayed partition is due (zero: none).
func (f *replicaFetcher) buildFetch() (*kmsg.FetchRequest, map[TopicPartition]sentPartition, time.Time) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = f.cfg.NodeID
	req.ReplicaState.ID = f.cfg.NodeID
	req.ReplicaState.Epoch = f.cfg.BrokerEpoch()
	req.MaxWaitMillis = f.cfg.MaxWaitMs
	req.MinBytes = f.cfg.MinBytes
	req.MaxBytes = f.cfg.MaxBytes
	sent := make(map[TopicPartition]sentPartition)
	var next time.Time
	now := f.cfg.Now()
	topics := make(map[string]int) // name → index in req.Topics

	f.mu.Lock()
	defer f.mu.Unlock()
	for tp, st := range f.mu.parts {
		if st.parked {
			continue
		}
		if st.retryAt.After(now) {
			if next.IsZero() || st.retryAt.Before(next) {
				next = st.retryAt
			}
			continue
		}
		log, ok := f.cfg.partition(tp.Topic, tp.Partition)
		if !ok {
			// Not opened yet (or removed): look again later.
			st.retryAt = now.Add(f.cfg.Backoff)
			if next.IsZero() || st.retryAt.Before(next) {
				next = st.retryAt
			}
			continue
		}
		i, ok := topics[tp.Topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = tp.Topic, st.topicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topics[tp.Topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = st.leaderEpoch
		rp.FetchOffset, rp.LastFetchedEpoch = log.FetchPosition()
		rp.LogStartOffset = log.Offsets().LogStartOffset
		rp.PartitionMaxBytes = f.cfg.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent[tp] = sentPartition{tp: tp, state: st, log: log}
	}
	return req, sent, next
}

// apply hands each partition's answer to its replica.
func (f *replicaFetcher) apply(ctx context.Context, resp *kmsg.FetchResponse, sent map[TopicPartition]sentPartition) {
	byID := make(map[[16]byte]string)
	for tp, s := range sent {
		byID[s.state.topicID] = tp.Topic
	}
	var outOfRange []sentPartition
	var syncs []pendingSync
	for _, rt := range resp.Topics {
		topic := rt.Topic
		if topic == "" { // v13+ names topics by id
			topic = byID[rt.TopicID]
		}
		for _, rp := range rt.Partitions {
			s, ok := sent[TopicPartition{Topic: topic, Partition: rp.Partition}]
			if !ok {
				continue
			}
			if rp.ErrorCode == kerr.OffsetOutOfRange.Code {
				outOfRange = append(outOfRange, s)
				continue
			}
			if upTo := f.applyPartition(s, &rp); upTo > 0 {
				syncs = append(syncs, pendingSync{s, upTo})
			}
		}
	}
	f.syncAll(syncs)
	for _, s := range outOfRange {
		if err := f.resetOutOfRange(ctx, s); err != nil {
			f.warn("oor", "cannot reset out-of-range follower", "topic", s.tp.Topic, "partition", s.tp.Partition,
				"leader", f.leader, "err", err)
			f.delay(s)
		}
	}
}

// pendingSync is a partition whose appended batches wait for an fsync.
type pendingSync struct {
	s    sentPartition
	upTo int64
}

// maxParallelSyncs bounds the fsyncs a fetcher runs at once: each blocks
// an OS thread.
const maxParallelSyncs = 16

// syncAll fsyncs the partitions a fetch answer appended to, when the flush
// policy made it due (log.flush.interval.messages=1), before the next
// fetch tells the leader their new positions.
func (f *replicaFetcher) syncAll(syncs []pendingSync) {
	syncAppended(syncs, func(ps pendingSync, err error) {
		f.warn("partition:"+ps.s.tp.Topic+"-"+strconv.Itoa(int(ps.s.tp.Partition)), "replica fsync failed",
			"topic", ps.s.tp.Topic, "partition", ps.s.tp.Partition, "err", err)
	})
}

// syncAppended fsyncs the logs of syncs in parallel, at most
// maxParallelSyncs at a time, and reports each failure to fail: an fsync
// costs about the same for one partition as for several at once, so a
// round of n partitions waits for about one fsync instead of n in a row.
func syncAppended(syncs []pendingSync, fail func(pendingSync, error)) {
	fsync := func(ps pendingSync) {
		if err := ps.s.log.SyncAppended(ps.upTo); err != nil {
			fail(ps, err)
		}
	}
	if len(syncs) == 1 {
		fsync(syncs[0])
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(len(syncs), maxParallelSyncs) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(syncs)); i = next.Add(1) - 1 {
				fsync(syncs[i])
			}
		})
	}
	wg.Wait()
}

// applyPartition applies one partition's answer; a failed partition is
// delayed, or parked when fenced. It returns the offset up to which the
// partition's log must be fsynced before the next fetch (syncAll), 0 for
// none.
func (f *replicaFetcher) applyPartition(s sentPartition, rp *kmsg.FetchResponseTopicPartition) (syncUpTo int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.parts[s.tp] != s.state {
		return 0 // unfollowed or restarted at a new epoch meanwhile
	}
	var err error
	switch code := rp.ErrorCode; {
	case code == kerr.FencedLeaderEpoch.Code:
		// Our leader epoch is stale: newer metadata will bring the
		// current one (follow unparks).
		s.state.parked = true
		f.warn("fenced", "leader fenced our leader epoch; waiting for metadata", "topic", s.tp.Topic,
			"partition", s.tp.Partition, "leader", f.leader, "leader_epoch", s.state.leaderEpoch)
		return 0
	case code != 0:
		// NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_*:
		// the leader has not applied the metadata we have yet, or ours is
		// stale. Retry after the backoff; a metadata change restarts it.
		err = kerr.ErrorForCode(code)
	case rp.DivergingEpoch.Epoch >= 0:
		err = s.log.TruncateOnDivergence(EpochEndOffset{Epoch: rp.DivergingEpoch.Epoch, EndOffset: rp.DivergingEpoch.EndOffset})
	default:
		if batches := wholeBatches(rp.RecordBatches); len(batches) > 0 {
			syncUpTo, err = s.log.AppendAsFollowerUnsynced(batches, rp.HighWatermark, rp.LogStartOffset)
		} else {
			s.log.UpdateFollowerHighWatermark(rp.HighWatermark, rp.LogStartOffset)
		}
	}
	if err != nil {
		f.warn("partition:"+s.tp.Topic+"-"+strconv.Itoa(int(s.tp.Partition)), "replica fetch of partition failed",
			"topic", s.tp.Topic, "partition", s.tp.Partition, "leader", f.leader, "err", err)
		s.state.retryAt = f.cfg.Now().Add(f.cfg.Backoff)
	}
	return syncUpTo
}

// resetOutOfRange handles OFFSET_OUT_OF_RANGE as Kafka's
// fetchOffsetAndTruncate does: a follower ahead of the leader's log end
// truncates to it; one behind the leader's log start restarts there.
func (f *replicaFetcher) resetOutOfRange(ctx context.Context, s sentPartition) error {
	leaderEnd, err := f.leaderOffset(ctx, s, latestTimestamp)
	if err != nil {
		return err
	}
	fetchOffset, _ := s.log.FetchPosition()
	var leaderStart int64 = -1
	if leaderEnd >= fetchOffset {
		if leaderStart, err = f.leaderOffset(ctx, s, earliestTimestamp); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.parts[s.tp] != s.state {
		return nil
	}
	fetchOffset, lastEpoch := s.log.FetchPosition()
	switch {
	case leaderEnd < fetchOffset && lastEpoch >= 0:
		// Our end offset for our last epoch is our log end, so this
		// truncates to the leader's log end offset.
		err = s.log.TruncateOnDivergence(EpochEndOffset{Epoch: lastEpoch, EndOffset: leaderEnd})
	case leaderEnd < fetchOffset:
		err = s.log.TruncateFullyAndStartAt(leaderEnd)
	case leaderStart > fetchOffset:
		err = s.log.TruncateFullyAndStartAt(leaderStart)
	default:
		// In range by now (the leader moved); fetch again.
		return nil
	}
	if err == nil {
		f.cfg.Logger.Info("reset out-of-range follower", "topic", s.tp.Topic, "partition", s.tp.Partition,
			"fetch_offset", fetchOffset, "leader_log_start", leaderStart, "leader_log_end", leaderEnd)
	}
	return err
}

// leaderOffset asks the leader for its log end (latestTimestamp, as a
// replica) or log start offset (earliestTimestamp).
func (f *replicaFetcher) leaderOffset(ctx context.Context, s sentPartition, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = f.cfg.NodeID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = s.tp.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = s.tp.Partition
	p.CurrentLeaderEpoch = s.state.leaderEpoch
	p.Timestamp = ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	kresp, err := f.conn.Request(ctx, req)
	if err != nil {
		f.closeConn()
		return -1, fmt.Errorf("list offsets: %w", err)
	}
	resp, ok := kresp.(*kmsg.ListOffsetsResponse)
	if !ok || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, errors.New("list offsets: malformed response")
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		return -1, fmt.Errorf("list offsets: %w", kerr.ErrorForCode(rp.ErrorCode))
	}
	return rp.Offset, nil
}

// delay retries s after the backoff.
func (f *replicaFetcher) delay(s sentPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.parts[s.tp] == s.state {
		s.state.retryAt = f.cfg.Now().Add(f.cfg.Backoff)
	}
}

// dial connects to the leader's inter-broker endpoint, looked up in the
// latest image so a re-registered leader is found at its new address.
func (f *replicaFetcher) dial(ctx context.Context) (PeerConn, error) {
	br, ok := f.cfg.Image().Broker(f.leader)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", f.leader)
	}
	ep, ok := br.Endpoint(f.cfg.Listener)
	if !ok {
		return nil, fmt.Errorf("broker %d has no endpoint on listener %s", f.leader, f.cfg.Listener)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return f.cfg.Dial(dctx, net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))))
}

func (f *replicaFetcher) closeConn() {
	if f.conn != nil {
		_ = f.conn.Close()
		f.conn = nil
	}
	// What the leader holds is unknown now: start over with a full
	// fetch that closes the session.
	f.session.failed(kerr.InvalidFetchSessionEpoch.Code)
}

// warn logs at Warn, at most once per warnInterval for each key.
func (f *replicaFetcher) warn(key, msg string, args ...any) {
	now := f.cfg.Now()
	if last, ok := f.lastWarn[key]; ok && now.Sub(last) < warnInterval {
		return
	}
	f.lastWarn[key] = now
	f.cfg.Logger.Warn(msg, args...)
}

// fetchSession is a fetcher's side of its incremental fetch session with
// the leader (Kafka's FetchSessionHandler). It is owned by run.
type fetchSession struct {
	id int32 // 0: none
	// epoch is the next fetch's; 0 makes it a full fetch, which opens a
	// session and closes the one id names.
	epoch int32
	// parts is what the leader's session holds: each partition with
	// what was last sent for it; pending is what parts becomes when the
	// fetch in flight succeeds.
	parts, pending map[sessionKey]kmsg.FetchRequestTopicPartition
}

type sessionKey struct {
	topicID   [16]byte
	topic     string
	partition int32
}

// prepare turns req, a full fetch of every partition ready to fetch, into
// the session's next fetch: in an open session, it names only the
// partitions that are new or whose fetch position changed, and forgets
// those the session holds that req does not fetch.
func (s *fetchSession) prepare(req *kmsg.FetchRequest) {
	s.pending = make(map[sessionKey]kmsg.FetchRequestTopicPartition, len(s.parts))
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			s.pending[sessionKey{t.TopicID, t.Topic, p.Partition}] = p
		}
	}
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	if s.epoch == fetchsession.InitialEpoch {
		return
	}
	topics := req.Topics[:0]
	for _, t := range req.Topics {
		changed := t.Partitions[:0]
		for _, p := range t.Partitions {
			if old, ok := s.parts[sessionKey{t.TopicID, t.Topic, p.Partition}]; !ok || !samePartitionFetch(old, p) {
				changed = append(changed, p)
			}
		}
		if len(changed) > 0 {
			t.Partitions = changed
			topics = append(topics, t)
		}
	}
	req.Topics = topics
	forgotten := make(map[sessionKey]int) // topic (partition 0) → index
	for k := range s.parts {
		if _, ok := s.pending[k]; ok {
			continue
		}
		tk := sessionKey{topicID: k.topicID, topic: k.topic}
		i, ok := forgotten[tk]
		if !ok {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = k.topic, k.topicID
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
			i = len(req.ForgottenTopics) - 1
			forgotten[tk] = i
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.partition)
	}
}

func samePartitionFetch(a, b kmsg.FetchRequestTopicPartition) bool {
	return a.FetchOffset == b.FetchOffset && a.LastFetchedEpoch == b.LastFetchedEpoch &&
		a.CurrentLeaderEpoch == b.CurrentLeaderEpoch && a.LogStartOffset == b.LogStartOffset &&
		a.PartitionMaxBytes == b.PartitionMaxBytes
}

// succeeded records the leader's answer to the fetch prepared last.
func (s *fetchSession) succeeded(sessionID int32) {
	switch {
	case s.epoch != fetchsession.InitialEpoch:
		s.epoch = fetchsession.NextEpoch(s.epoch)
		s.parts = s.pending
	case sessionID == fetchsession.InvalidSessionID:
		// The leader keeps no session for us (its cache is full): the
		// next fetch is full again and asks again.
		s.id, s.parts = 0, nil
	default:
		s.id, s.epoch, s.parts = sessionID, fetchsession.NextEpoch(fetchsession.InitialEpoch), s.pending
	}
	s.pending = nil
}

// failed starts the session over after a top-level error or a lost
// connection: the next fetch is full, closing the old session unless
// the leader no longer knows it.
func (s *fetchSession) failed(code int16) {
	if code == kerr.FetchSessionIDNotFound.Code {
		s.id = fetchsession.InvalidSessionID
	}
	s.epoch, s.parts, s.pending = fetchsession.InitialEpoch, nil, nil
}

// isSessionError is whether a top-level fetch error is about the session
// alone, so that a full fetch at once is the cure.
func isSessionError(code int16) bool {
	return code == kerr.FetchSessionIDNotFound.Code || code == kerr.InvalidFetchSessionEpoch.Code ||
		code == kerr.FetchSessionTopicIDError.Code
}

// wholeBatches drops a trailing partial batch: a response cut at a size
// limit may end inside one.
func wholeBatches(data []byte) []byte {
	const lengthEnd = 12 // base offset (8) and batch length (4)
	pos := 0
	for len(data)-pos >= lengthEnd {
		size := lengthEnd + int(binary.BigEndian.Uint32(data[pos+8:]))
		if size > len(data)-pos || size <= lengthEnd {
			break
		}
		pos += size
	}
	return data[:pos]
}

// sleepCtx sleeps for d unless ctx ends first; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
