package sharepartition

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/share"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
)

// GroupConfig is the share.* configuration of one group (Kafka's group
// configs, defaulting to the broker's group.share.* keys).
type GroupConfig struct {
	// LockDuration is share.record.lock.duration.ms.
	LockDuration time.Duration
	// DeliveryCountLimit is share.delivery.count.limit.
	DeliveryCountLimit int16
	// ResetEarliest is share.auto.offset.reset=earliest (the default,
	// latest, starts a new share partition at the high watermark).
	ResetEarliest bool
	// ReadCommitted is share.isolation.level=read_committed.
	ReadCommitted bool
	// ResetOffset, when set, is share.auto.offset.reset=by_duration: the
	// offset a new share partition of rp starts at.
	ResetOffset func(rp *replica.Partition) int64
}

// Config configures a Manager.
type Config struct {
	// Persister keeps the share partitions' durable state (the share
	// coordinator). Required.
	Persister share.Persister
	// Partition returns the partition this node leads, or the Kafka error
	// to answer (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION).
	Partition func(topic string, partition int32) (*replica.Partition, error)
	// Group returns a group's share configuration.
	Group func(group string) GroupConfig
	// MaxRecordLocks is group.share.partition.max.record.locks (2000): the
	// most records in flight in one share partition.
	MaxRecordLocks int
	// MaxSessions is group.share.max.share.sessions (2000).
	MaxSessions int
	Now         func() time.Time
	Logger      *slog.Logger
}

// Manager is the share partitions and share sessions of one broker.
type Manager struct {
	cfg Config
	mu  struct {
		sync.Mutex
		sessions map[sessionKey]*session
		parts    map[Key]*partition
		// check holds the loaded share partitions a share session has
		// just started to fetch: their state is compared with the share
		// coordinator's before they serve it (Manager.partition).
		check map[Key]bool
		// released is closed (and replaced) when records become
		// available again, to wake waiting fetches.
		released chan struct{}
	}
}

type sessionKey struct{ group, member string }

// TopicPartition names a partition by topic id.
type TopicPartition struct {
	TopicID   [16]byte
	Partition int32
}

// session is a share session: the partitions a member fetches from this
// broker, and the epoch its next request must carry.
type session struct {
	epoch int32
	parts map[TopicPartition]Key
	order []TopicPartition // fetch order, rotated for fairness
}

// New returns a manager with no share partitions loaded.
func New(cfg Config) *Manager {
	if cfg.MaxRecordLocks <= 0 {
		cfg.MaxRecordLocks = 2000
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 2000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg}
	m.mu.sessions = map[sessionKey]*session{}
	m.mu.parts = map[Key]*partition{}
	m.mu.check = map[Key]bool{}
	m.mu.released = make(chan struct{})
	return m
}

// Ack is one acknowledgement batch.
type Ack struct {
	First, Last int64
	Types       []int8
}

// PartitionRequest is one partition of a ShareFetch or ShareAcknowledge.
type PartitionRequest struct {
	Key
	Acks []Ack
}

// Result is the answer for one partition. Err and AckErr are Kafka errors
// (or nil).
type Result struct {
	Key
	Err, AckErr error
	LeaderEpoch int32
	Records     []byte
	Acquired    []Range
	acked       bool
}

// Acked reports whether the request carried acknowledgements for the
// partition (its AckErr is meaningful).
func (r *Result) Acked() bool { return r.acked }

// FetchRequest is a decoded ShareFetch; the broker has resolved topic ids
// and answered the partitions it could not.
type FetchRequest struct {
	Group, Member string
	SessionEpoch  int32
	MaxWait       time.Duration
	MaxBytes      int
	MaxRecords    int
	Partitions    []PartitionRequest
	Forgotten     []TopicPartition
	// AcknowledgeOnly (ShareFetch v2's IsRenewAck) applies the
	// acknowledgements and acquires nothing.
	AcknowledgeOnly bool
	// Conn ends when the client's connection closes: a share session
	// opened by this request closes with it and its member's records are
	// released, as Kafka ties a share session to its connection. Nil:
	// the session lives until closed or replaced.
	Conn context.Context
}

const (
	initialEpoch = 0
	finalEpoch   = -1
)

func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// checkSessionLocked applies Kafka's share-session rules to a request's
// epoch and returns the session to serve (nil for a final request).
func (m *Manager) checkSessionLocked(conn context.Context, group, member string, epoch int32, parts []PartitionRequest, forgotten []TopicPartition, fetch bool) (*session, error) {
	k := sessionKey{group, member}
	s := m.mu.sessions[k]
	switch epoch {
	case initialEpoch:
		if !fetch {
			return nil, kerr.InvalidShareSessionEpoch
		}
		for _, p := range parts {
			if len(p.Acks) > 0 {
				return nil, kerr.InvalidRequest
			}
		}
		if s == nil && len(m.mu.sessions) >= m.cfg.MaxSessions {
			return nil, kerr.ShareSessionLimitReached
		}
		s = &session{parts: map[TopicPartition]Key{}}
		m.mu.sessions[k] = s
		if conn != nil {
			context.AfterFunc(conn, func() { m.connClosed(k, s) })
		}
	case finalEpoch:
		if s == nil {
			return nil, kerr.ShareSessionNotFound
		}
		delete(m.mu.sessions, k)
		return s, nil
	default:
		if s == nil {
			return nil, kerr.ShareSessionNotFound
		}
		if s.epoch != epoch {
			return nil, kerr.InvalidShareSessionEpoch
		}
	}
	s.epoch = nextEpoch(epoch)
	for _, p := range parts {
		tp := TopicPartition{p.TopicID, p.Partition}
		if _, ok := s.parts[tp]; !ok {
			s.order = append(s.order, tp)
			if m.mu.parts[p.Key] != nil {
				m.mu.check[p.Key] = true
			}
		}
		s.parts[tp] = p.Key
	}
	for _, tp := range forgotten {
		delete(s.parts, tp)
	}
	order := s.order[:0]
	for _, tp := range s.order {
		if _, ok := s.parts[tp]; ok {
			order = append(order, tp)
		}
	}
	s.order = order
	return s, nil
}

// Fetch serves a ShareFetch: it applies the acknowledgements, then
// acquires records from the session's partitions, waiting up to MaxWait
// for some. The error is the request's top-level error.
func (m *Manager) Fetch(ctx context.Context, req *FetchRequest) ([]*Result, error) {
	m.mu.Lock()
	s, err := m.checkSessionLocked(req.Conn, req.Group, req.Member, req.SessionEpoch, req.Partitions, req.Forgotten, true)
	var keys []Key
	if err == nil && req.SessionEpoch != finalEpoch {
		if len(s.order) > 1 { // rotate so that no partition starves
			s.order = append(s.order[1:], s.order[0])
		}
		for _, tp := range s.order {
			keys = append(keys, s.parts[tp])
		}
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	results := map[Key]*Result{}
	var out []*Result
	result := func(k Key) *Result {
		r := results[k]
		if r == nil {
			r = &Result{Key: k, LeaderEpoch: -1}
			results[k] = r
			out = append(out, r)
		}
		return r
	}
	m.acknowledge(ctx, req.Group, req.Member, req.Partitions, result)
	if req.SessionEpoch == finalEpoch {
		m.releaseSession(ctx, req.Group, req.Member, s)
		return out, nil
	}
	if req.AcknowledgeOnly {
		return out, nil
	}
	deadline := m.cfg.Now().Add(req.MaxWait)
	for {
		wake, stop := m.wakeup(keys)
		got, next := m.acquireAll(ctx, req, keys, result)
		wait := deadline.Sub(m.cfg.Now())
		if got || ctx.Err() != nil || wait <= 0 {
			stop()
			break
		}
		if !next.IsZero() && next.Sub(m.cfg.Now()) < wait {
			wait = max(next.Sub(m.cfg.Now()), time.Millisecond)
		}
		t := time.NewTimer(wait)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		stop()
	}
	return out, nil
}

// Acknowledge serves a ShareAcknowledge; the error is the request's
// top-level error.
func (m *Manager) Acknowledge(ctx context.Context, group, member string, epoch int32, parts []PartitionRequest) ([]*Result, error) {
	m.mu.Lock()
	s, err := m.checkSessionLocked(nil, group, member, epoch, parts, nil, false)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var out []*Result
	m.acknowledge(ctx, group, member, parts, func(k Key) *Result {
		r := &Result{Key: k, LeaderEpoch: -1}
		out = append(out, r)
		return r
	})
	if epoch == finalEpoch {
		m.releaseSession(ctx, group, member, s)
	}
	return out, nil
}

// connClosed closes session s of k if it is still the member's: the
// connection that opened it closed.
func (m *Manager) connClosed(k sessionKey, s *session) {
	m.mu.Lock()
	current := m.mu.sessions[k] == s
	if current {
		delete(m.mu.sessions, k)
	}
	m.mu.Unlock()
	if current {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m.releaseSession(ctx, k.group, k.member, s)
	}
}

// wakeup returns a channel closed when a waiting fetch should look again:
// records were released, or one of its partitions was appended to. stop
// ends the watch.
func (m *Manager) wakeup(keys []Key) (<-chan struct{}, func()) {
	m.mu.Lock()
	released := m.mu.released
	m.mu.Unlock()
	ch := make(chan struct{})
	chans := []<-chan struct{}{released}
	for _, k := range keys {
		if rp, err := m.cfg.Partition(k.Topic, k.Partition); err == nil {
			chans = append(chans, rp.Appended())
		}
	}
	var once sync.Once
	done := make(chan struct{})
	for _, c := range chans {
		go func() {
			select {
			case <-c:
				once.Do(func() { close(ch) })
			case <-done:
			}
		}()
	}
	return ch, func() { close(done) }
}

func (m *Manager) signalReleased() {
	m.mu.Lock()
	close(m.mu.released)
	m.mu.released = make(chan struct{})
	m.mu.Unlock()
}

// partition returns the share partition of k, loading its state from the
// persister on first use, and again when a share session starts to fetch
// it and the share coordinator's state epoch moved past the one loaded
// (stale).
func (m *Manager) partition(ctx context.Context, k Key, rp *replica.Partition, gc GroupConfig) (*partition, error) {
	m.mu.Lock()
	p := m.mu.parts[k]
	if p == nil {
		p = &partition{key: k}
		m.mu.parts[k] = p
	}
	check := m.mu.check[k]
	delete(m.mu.check, k)
	m.mu.Unlock()
	if check && m.stale(ctx, p) {
		m.drop(p)
		return m.partition(ctx, k, rp, gc)
	}
	p.mu.Lock()
	loaded := p.mu.loaded
	p.mu.Unlock()
	if loaded {
		return p, nil
	}
	p.writeMu.Lock() // one load at a time
	defer p.writeMu.Unlock()
	p.mu.Lock()
	loaded = p.mu.loaded
	p.mu.Unlock()
	if loaded {
		return p, nil
	}
	if err := m.load(ctx, p, rp, gc); err != nil {
		return nil, err
	}
	return p, nil
}

// load reads p's state. A partition the share coordinator has no state
// for starts at share.auto.offset.reset and is initialized with it.
func (m *Manager) load(ctx context.Context, p *partition, rp *replica.Partition, gc GroupConfig) error {
	snap := rp.Offsets()
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = p.key.Group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = p.key.TopicID
	rpart := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rpart.Partition, rpart.LeaderEpoch = p.key.Partition, snap.LeaderEpoch
	rt.Partitions = append(rt.Partitions, rpart)
	req.Topics = append(req.Topics, rt)
	resp, err := m.cfg.Persister.ReadState(ctx, req)
	if err != nil {
		return fmt.Errorf("reading share state of %s: %w", p.key.Group, err)
	}
	var st *kmsg.ReadShareGroupStateResponseTopicPartition
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].TopicID == p.key.TopicID && resp.Topics[i].Partitions[j].Partition == p.key.Partition {
				st = &resp.Topics[i].Partitions[j]
			}
		}
	}
	reset := snap.HighWatermark
	if gc.ReadCommitted {
		reset = snap.LastStableOffset
	}
	if gc.ResetEarliest {
		reset = snap.LogStartOffset
	}
	if gc.ResetOffset != nil {
		reset = gc.ResetOffset(rp)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case st == nil:
		return kerr.UnknownServerError
	case st.ErrorCode != 0:
		// No state yet: start at the reset offset and record it.
		if err := m.initialize(ctx, p.key, 0, reset); err != nil {
			return err
		}
		p.mu.start, p.mu.stateEpoch, p.mu.recs = reset, 0, nil
	case st.StartOffset < 0:
		// Initialized without an offset (Kafka's group coordinator does
		// so on subscription): share.auto.offset.reset applies now, and
		// is recorded at the same state epoch.
		if err := m.initialize(ctx, p.key, st.StateEpoch, reset); err != nil {
			return err
		}
		p.mu.start, p.mu.stateEpoch, p.mu.recs = reset, st.StateEpoch, nil
	default:
		p.mu.start, p.mu.stateEpoch, p.mu.recs = st.StartOffset, st.StateEpoch, nil
		for _, b := range st.StateBatches {
			for off := max(b.FirstOffset, p.mu.start); off <= b.LastOffset; off++ {
				for p.endLocked() < off {
					p.mu.recs = append(p.mu.recs, inflight{state: stAvailable})
				}
				if off < p.endLocked() {
					continue
				}
				st := recordState(b.DeliveryState)
				if st == stAcquired {
					st = stAvailable
				}
				p.mu.recs = append(p.mu.recs, inflight{state: st, deliveries: b.DeliveryCount})
			}
		}
		p.advanceLocked()
	}
	p.mu.loaded = true
	p.mu.dirty = false
	return nil
}

// initialize records k's state as starting at start, at stateEpoch.
func (m *Manager) initialize(ctx context.Context, k Key, stateEpoch int32, start int64) error {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = k.TopicID
	ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	ip.Partition, ip.StateEpoch, ip.StartOffset = k.Partition, stateEpoch, start
	it.Partitions = append(it.Partitions, ip)
	req.Topics = append(req.Topics, it)
	resp, err := m.cfg.Persister.InitializeState(ctx, req)
	if err != nil {
		return fmt.Errorf("initializing share state of %s: %w", k.Group, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return kerr.ErrorForCode(p.ErrorCode)
			}
		}
	}
	return nil
}

// stale reports whether p's loaded state was replaced at the share
// coordinator: an admin altered the group's offsets (a higher state
// epoch) or deleted them (no start offset), possibly through the group
// coordinator of another node. Kafka's share partition learns it from
// FENCED_STATE_EPOCH on its next write; checking when a share session
// starts to fetch the partition also keeps a member of the (necessarily
// empty, then rejoined) group from being served the old state first. A
// failed read keeps the state.
func (m *Manager) stale(ctx context.Context, p *partition) bool {
	p.mu.Lock()
	loaded, epoch := p.mu.loaded, p.mu.stateEpoch
	p.mu.Unlock()
	if !loaded {
		return false
	}
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = p.key.Group
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = p.key.TopicID
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition = p.key.Partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := m.cfg.Persister.ReadStateSummary(ctx, req)
	if err != nil {
		return false
	}
	for _, t := range resp.Topics {
		for _, sp := range t.Partitions {
			if t.TopicID == p.key.TopicID && sp.Partition == p.key.Partition && sp.ErrorCode == 0 {
				return sp.StateEpoch != epoch || sp.StartOffset < 0
			}
		}
	}
	return false
}

// drop forgets p if it is still k's share partition: its next use loads
// the state again.
func (m *Manager) drop(p *partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.parts[p.key] == p {
		delete(m.mu.parts, p.key)
	}
}

// acknowledge applies the acknowledgements of parts, persisting each
// changed partition before its result is final.
func (m *Manager) acknowledge(ctx context.Context, group, member string, parts []PartitionRequest, result func(Key) *Result) {
	released := false
	for _, pr := range parts {
		if len(pr.Acks) == 0 {
			continue
		}
		r := result(pr.Key)
		r.acked = true
		rp, err := m.cfg.Partition(pr.Topic, pr.Partition)
		if err != nil {
			r.AckErr = err
			continue
		}
		gc := m.cfg.Group(group)
		p, err := m.partition(ctx, pr.Key, rp, gc)
		if err != nil {
			r.AckErr = m.loadError(err)
			continue
		}
		p.writeMu.Lock()
		p.mu.Lock()
		now := m.cfg.Now()
		p.expireLocked(now, gc.DeliveryCountLimit)
		for _, a := range pr.Acks {
			if !p.ackLocked(member, a.First, a.Last, a.Types, gc.DeliveryCountLimit, gc.LockDuration, now) {
				r.AckErr = kerr.InvalidRecordState
			}
			for _, t := range a.Types {
				released = released || t == AckRelease
			}
		}
		req := m.writeRequestLocked(p, rp)
		p.mu.Unlock()
		if err := m.write(ctx, p, req); err != nil && r.AckErr == nil {
			r.AckErr = err
		}
		p.writeMu.Unlock()
	}
	if released {
		m.signalReleased()
	}
}

func (m *Manager) loadError(err error) error {
	if _, ok := err.(*kerr.Error); ok {
		return err
	}
	m.cfg.Logger.Warn("loading share partition failed", "err", err)
	return kerr.CoordinatorNotAvailable
}

// writeRequestLocked is the state of p to persist, or nil if nothing
// changed since the last write.
func (m *Manager) writeRequestLocked(p *partition, rp *replica.Partition) *kmsg.WriteShareGroupStateRequest {
	if !p.mu.dirty {
		return nil
	}
	p.mu.dirty = false
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = p.key.Group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = p.key.TopicID
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset = p.key.Partition, p.mu.stateEpoch, rp.Offsets().LeaderEpoch, p.mu.start
	for _, r := range p.mu.recs {
		if r.state == stAcknowledged || r.state == stArchived {
			wp.DeliveryCompleteCount++
		}
	}
	for _, b := range p.batchesLocked() {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.first, b.last, int8(b.state), b.deliveries
		wp.StateBatches = append(wp.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, wp)
	req.Topics = append(req.Topics, t)
	return req
}

// write persists req, p's state. A state the share coordinator no longer
// takes (FENCED_STATE_EPOCH: an admin replaced it; INVALID_REQUEST: it was
// deleted) drops p, to be loaded again, and the client sees
// NOT_LEADER_OR_FOLLOWER and retries, as in Kafka.
func (m *Manager) write(ctx context.Context, p *partition, req *kmsg.WriteShareGroupStateRequest) error {
	if req == nil {
		return nil
	}
	resp, err := m.cfg.Persister.WriteState(ctx, req)
	if err != nil {
		m.cfg.Logger.Warn("writing share state failed", "group", req.GroupID, "err", err)
		return kerr.CoordinatorNotAvailable
	}
	for _, t := range resp.Topics {
		for _, sp := range t.Partitions {
			switch sp.ErrorCode {
			case 0:
			case kerr.FencedStateEpoch.Code, kerr.InvalidRequest.Code:
				m.drop(p)
				return kerr.NotLeaderForPartition
			default:
				return kerr.ErrorForCode(sp.ErrorCode)
			}
		}
	}
	return nil
}

// releaseSession releases the records the member holds in the session's
// partitions: its share session closed.
func (m *Manager) releaseSession(ctx context.Context, group, member string, s *session) {
	released := false
	for _, k := range s.parts {
		m.mu.Lock()
		p := m.mu.parts[k]
		m.mu.Unlock()
		rp, err := m.cfg.Partition(k.Topic, k.Partition)
		if p == nil || err != nil {
			continue
		}
		gc := m.cfg.Group(group)
		p.writeMu.Lock()
		p.mu.Lock()
		var req *kmsg.WriteShareGroupStateRequest
		if p.mu.loaded && p.releaseMemberLocked(member, gc.DeliveryCountLimit) {
			released = true
			req = m.writeRequestLocked(p, rp)
		}
		p.mu.Unlock()
		_ = m.write(ctx, p, req)
		p.writeMu.Unlock()
	}
	if released {
		m.signalReleased()
	}
}

// acquireAll acquires records for the fetch from each partition in turn
// until MaxRecords. It reports whether anything was acquired (or a
// partition failed, which ends the wait), and the earliest lock deadline
// seen, when a lock expiry would free records.
func (m *Manager) acquireAll(ctx context.Context, req *FetchRequest, keys []Key, result func(Key) *Result) (got bool, next time.Time) {
	gc := m.cfg.Group(req.Group)
	left, bytes := req.MaxRecords, req.MaxBytes
	if left <= 0 {
		left = 500
	}
	for _, k := range keys {
		if left <= 0 || bytes <= 0 {
			break
		}
		rp, err := m.cfg.Partition(k.Topic, k.Partition)
		if err != nil {
			result(k).Err = err
			got = true
			continue
		}
		p, err := m.partition(ctx, k, rp, gc)
		if err != nil {
			result(k).Err = m.loadError(err)
			got = true
			continue
		}
		ranges, n, err := m.acquire(p, rp, req.Member, left, bytes, gc)
		if err != nil {
			result(k).Err = err
			got = true
			continue
		}
		if len(ranges) == 0 {
			p.mu.Lock()
			d, _ := p.expireLocked(m.cfg.Now(), gc.DeliveryCountLimit)
			p.mu.Unlock()
			if !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next = d
			}
			continue
		}
		data, err := readRanges(rp, ranges)
		if err != nil {
			result(k).Err = err
			got = true
			continue
		}
		r := result(k)
		r.Records, r.Acquired, r.LeaderEpoch = data, ranges, rp.Offsets().LeaderEpoch
		left -= n
		bytes -= len(data)
		got = true
	}
	return got, next
}

// acquire acquires up to max records of p for member: available records
// of the window first, then new records read from the log.
func (m *Manager) acquire(p *partition, rp *replica.Partition, member string, max, maxBytes int, gc GroupConfig) ([]Range, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := m.cfg.Now()
	p.expireLocked(now, gc.DeliveryCountLimit)
	snap := rp.Offsets()
	if p.endLocked() < snap.LogStartOffset {
		// Retention deleted records the window had not reached.
		p.mu.start, p.mu.recs, p.mu.dirty = snap.LogStartOffset, nil, true
	}
	deadline := now.Add(gc.LockDuration)
	ranges := p.acquireLocked(member, max, deadline)
	n := countRanges(ranges)
	if room := m.cfg.MaxRecordLocks - len(p.mu.recs); n < max && room > 0 {
		data, _, aborted, err := rp.ReadIsolated(p.endLocked(), maxBytes, true, gc.ReadCommitted)
		if err != nil && err != kerr.OffsetOutOfRange {
			return nil, 0, err
		}
		if len(data) > 0 {
			p.extendLocked(data, aborted, room)
			more := p.acquireLocked(member, max-n, deadline)
			ranges = mergeRanges(ranges, more)
			n += countRanges(more)
		}
	}
	return ranges, n, nil
}

func countRanges(rs []Range) int {
	n := 0
	for _, r := range rs {
		n += int(r.Last - r.First + 1)
	}
	return n
}

func mergeRanges(a, b []Range) []Range {
	for _, r := range b {
		for off := r.First; off <= r.Last; off++ {
			a = appendRange(a, off, r.Deliveries)
		}
	}
	return a
}

// readRanges returns the log's batches that hold the acquired ranges
// (sorted by offset), each once. The client keeps only the acquired
// records of each batch.
func readRanges(rp *replica.Partition, ranges []Range) ([]byte, error) {
	var out []byte
	next := int64(-1) // offsets below next are already in out
	for _, r := range ranges {
		off := max(r.First, next)
		for off <= r.Last {
			data, _, err := rp.Read(off, 1<<20, true)
			if err != nil {
				return nil, err
			}
			if len(data) == 0 {
				return out, nil
			}
			for rest := data; len(rest) >= record.HeaderSize; {
				h, err := record.ParseHeader(rest)
				if err != nil || h.Size() > len(rest) {
					break
				}
				if h.LastOffset() >= off && h.BaseOffset <= r.Last && h.LastOffset() >= next {
					out = append(out, rest[:h.Size()]...)
					next = h.NextOffset()
				}
				rest = rest[h.Size():]
				if h.NextOffset() > off {
					off = h.NextOffset()
				}
				if off > r.Last {
					break
				}
			}
		}
	}
	return out, nil
}

// GroupConfig is the share configuration the manager uses for group.
func (m *Manager) GroupConfig(group string) GroupConfig { return m.cfg.Group(group) }

// Forget drops the in-memory state of a share partition: its durable state
// was replaced (offsets altered or deleted by an admin), and its next use
// reads it again.
func (m *Manager) Forget(group string, topicID [16]byte, partition int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.mu.parts {
		if k.Group == group && k.TopicID == topicID && k.Partition == partition {
			delete(m.mu.parts, k)
		}
	}
}
