package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// PartitionConfig is what a partition enforces on produce, taken from its
// topic's configuration.
type PartitionConfig struct {
	Log storage.LogConfig
	// MaxMessageBytes is max.message.bytes: the largest batch accepted.
	MaxMessageBytes int32
	// LogAppendTime is message.timestamp.type=LogAppendTime.
	LogAppendTime bool
	// TimestampBeforeMaxMs and TimestampAfterMaxMs bound how far a
	// CreateTime timestamp may lie before or after the broker's clock
	// (message.timestamp.before.max.ms / after.max.ms).
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
	// MinInsyncReplicas is min.insync.replicas: an acks=all produce needs
	// an ISR at least this large. Zero means 1.
	MinInsyncReplicas int
}

// Partition is one hosted partition.
type Partition struct {
	Topic   string
	TopicID [16]byte
	Index   int32

	now func() time.Time
	// log is the partition's current log. It changes only under mu, when
	// a move to another log directory completes (move.go); readers that
	// do not hold mu load it once and retry a read that finds it closed
	// (readLog).
	log    atomic.Pointer[storage.Log]
	logger *slog.Logger
	// producer.id.expiration.ms and its check interval, in ms.
	producerExpirationMs, producerCheckIntervalMs int64
	// mgr supplies the node id, replica.lag.time.max.ms, AlterPartition
	// and the owner of the goroutines that send it.
	mgr *Manager

	mu struct {
		sync.Mutex
		cfg PartitionConfig
		// state is the partition state last applied (replication.go);
		// leaderEpoch is state.LeaderEpoch.
		state         PartitionState
		applied       bool // state has been set once
		leader        bool
		leaderEpoch   int32
		highWatermark int64
		producers     producerState
		// appended is closed whenever the log end offset or the high
		// watermark moves, and on a role change, and made again by the
		// next Appended (nil until then: appends make no channel that
		// nobody waits on); moves counts
		// those events, and waiters are told of each (FetchWaiter).
		appended chan struct{}
		moves    uint64
		waiters  map[*FetchWaiter]int
		// Leader only (isr.go): follower positions, the ISR change in
		// flight and where this leader epoch began.
		followers     map[int32]*followerState
		pendingISR    []int32 // proposed ISR while AlterPartition runs; nil otherwise
		alterInFlight bool
		epochStart    int64
		// activeBase is the log's active segment when last looked at; a
		// change means a roll, which takes a producer snapshot.
		activeBase      int64
		lastExpiryCheck int64 // ms
		// future is the log this replica is moving into (move.go), nil
		// when none; truncations counts truncations of the current log.
		future      *storage.Log
		truncations int64
		// commits are the requests waiting for their appends to commit
		// (CommitWait), all appended in leader epoch commitsEpoch.
		commits      commitQueue
		commitsEpoch int32
	}
}

// AppendResult describes a successful append.
type AppendResult struct {
	BaseOffset int64
	// LastOffset is the offset of the batch's last record: acks=all waits
	// for it to commit (WaitCommitted).
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	// syncUpTo > 0: the append is final once the log is fsynced up to it
	// (AppendProduce, WaitSynced).
	syncUpTo int64
}

// Append validates one produced record batch and appends it. A batch an
// idempotent producer already wrote is not written again; the result names
// the offset it got the first time. The first transactional batch of a
// producer opens its transaction at the batch's base offset
// (transactions.go). Errors are kerr errors for the client.
func (p *Partition) Append(batch []byte) (AppendResult, error) {
	h, err := record.ParseHeader(batch)
	if err != nil {
		return AppendResult{}, batchError(err)
	}
	return p.AppendParsed(batch, h)
}

// AppendParsed is Append for a batch whose header the caller parsed with
// record.ParseHeader, without error: the broker parses it once to check
// the request, and the header goes down to the log with the batch, kept
// current as the batch is stamped (timestamps, leader epoch).
func (p *Partition) AppendParsed(batch []byte, h record.Header) (AppendResult, error) {
	return p.appendParsed(batch, h, nil)
}

// appendParsed is AppendParsed; a non-nil guard turns transaction
// verification on (AppendParsedVerified).
func (p *Partition) appendParsed(batch []byte, h record.Header, guard *VerificationGuard) (AppendResult, error) {
	res, err := p.AppendProduce(batch, h, AppendOptions{Guard: guard})
	if err != nil {
		return res, err
	}
	return res, p.WaitSynced(res)
}

// AppendOptions are what a produce request adds to an append.
type AppendOptions struct {
	// Guard turns transaction verification on (AppendParsedVerified).
	Guard *VerificationGuard
	// Commit is set for acks=all: the append is refused, and nothing
	// appended, with NOT_ENOUGH_REPLICAS when the ISR is smaller than
	// min.insync.replicas; otherwise index CommitIndex of Commit waits
	// for the batch to commit (for a duplicate, the original batch).
	Commit      *CommitWait
	CommitIndex int
}

// AppendProduce is AppendParsed, or AppendParsedVerified with a guard,
// for a produce request: the checks acks=all makes, the append and the
// acks=all wait are taken under one acquisition of the partition lock.
// It does not wait for an fsync the log's flush policy (flush.messages,
// flush.ms) makes due: the append is final, and the high watermark
// passes it, only once WaitSynced returns nil. The broker appends every
// partition of a produce request so and then waits for their fsyncs
// together.
func (p *Partition) AppendProduce(batch []byte, h record.Header, o AppendOptions) (AppendResult, error) {
	sum, err := record.ValidateParsed(batch, h, p.mgr.cfg.DecompressionBudget)
	if err == nil {
		err = record.CheckProduce(h)
	}
	if err == nil && h.Transactional() && !h.Idempotent() {
		err = fmt.Errorf("%w: transactional batch without a producer id", record.ErrInvalid)
	}
	if err != nil {
		if o.Commit != nil {
			// Kafka checks the ISR before it validates the batch.
			if err := p.CheckEnoughReplicas(); err != nil {
				return AppendResult{}, err
			}
		}
		return AppendResult{}, batchError(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if o.Commit != nil {
		if err := p.enoughReplicasLocked(); err != nil {
			return AppendResult{}, err
		}
	}
	res, syncUpTo, err := p.appendVerifiedLocked(batch, h, sum, o.Guard)
	if err != nil {
		return res, err
	}
	res.syncUpTo = syncUpTo
	if o.Commit != nil {
		p.addCommitWaitLocked(o.Commit, o.CommitIndex, res.LastOffset)
	}
	return res, nil
}

// NeedsSync reports whether the append is final only after WaitSynced.
func (r AppendResult) NeedsSync() bool { return r.syncUpTo > 0 }

// WaitSynced waits for the fsync that makes an AppendProduce
// result final; nil at once when none was due.
func (p *Partition) WaitSynced(res AppendResult) error {
	_, err := p.synced(res, res.syncUpTo, nil)
	return err
}

func (p *Partition) appendVerifiedLocked(batch []byte, h record.Header, sum record.Summary, guard *VerificationGuard) (AppendResult, int64, error) {
	if !p.leadingLocked() {
		return AppendResult{}, 0, kerr.NotLeaderForPartition
	}
	verified, err := p.checkVerificationLocked(h, guard)
	if err != nil {
		return AppendResult{}, 0, err
	}
	res, syncUpTo, err := p.appendCheckedLocked(batch, h, sum, true)
	if err == nil && verified {
		delete(p.mu.producers.verifying, h.ProducerID)
	}
	return res, syncUpTo, err
}

// synced finishes an append after the partition lock is released: when
// the log's flush policy made an fsync due (syncUpTo > 0), it waits for
// it — concurrent appends share one (storage.Log.SyncTo) — and then lets
// the high watermark pass the batch (storage.Log.SyncedEnd).
func (p *Partition) synced(res AppendResult, syncUpTo int64, err error) (AppendResult, error) {
	if err != nil || syncUpTo == 0 {
		return res, err
	}
	if err := p.Log().SyncTo(syncUpTo); err != nil {
		return AppendResult{}, fmt.Errorf("append to %s-%d: %w", p.Topic, p.Index, err)
	}
	p.mu.Lock()
	p.advanceLocked()
	p.mu.Unlock()
	return res, nil
}

// appendCheckedLocked appends a validated batch. Only client batches
// (checkSequence) go through duplicate detection and sequence checks. A
// result with syncUpTo > 0 is final only after synced.
func (p *Partition) appendCheckedLocked(batch []byte, h record.Header, sum record.Summary, checkSequence bool) (res AppendResult, syncUpTo int64, err error) {
	cfg := p.mu.cfg
	if int64(len(batch)) > int64(cfg.MaxMessageBytes) {
		return AppendResult{}, 0, kerr.MessageTooLarge
	}
	if sum.NullKeys > 0 && cfg.Log.CleanupPolicy.Compact() {
		return AppendResult{}, 0, fmt.Errorf("%w: compacted topic cannot accept message without key in topic partition %s-%d", kerr.InvalidRecord, p.Topic, p.Index)
	}
	now := p.now().UnixMilli()
	p.maybeExpireProducersLocked(now)
	appendTime := int64(-1)
	if cfg.LogAppendTime {
		appendTime = now
	} else if now-sum.MinTimestamp > cfg.TimestampBeforeMaxMs || sum.MaxTimestamp-now > cfg.TimestampAfterMaxMs {
		return AppendResult{}, 0, kerr.InvalidTimestamp
	}
	if checkSequence && h.Idempotent() {
		dup, err := p.mu.producers.check(h)
		if err != nil {
			return AppendResult{}, 0, err
		}
		if dup != nil {
			res := AppendResult{BaseOffset: dup.firstOffset, LastOffset: dup.lastOffset, LogAppendTime: appendTime, LogStartOffset: p.Log().LogStartOffset()}
			if p.Log().SyncedEnd() <= dup.lastOffset {
				// The original's fsync is still running.
				syncUpTo = dup.lastOffset + 1
			}
			return res, syncUpTo, nil
		}
	}
	switch {
	case appendTime >= 0:
		h.SetLogAppendTime(batch, appendTime)
	case h.MaxTimestamp != sum.MaxTimestamp:
		// Like Kafka, trust the records over the header, so the time
		// index and ListOffsets see the real largest timestamp.
		h.SetMaxTimestamp(batch, sum.MaxTimestamp)
	}
	h.SetPartitionLeaderEpoch(batch, p.mu.leaderEpoch)
	base, syncUpTo, err := p.Log().AppendParsedUnsynced(batch, h)
	if err != nil {
		return AppendResult{}, 0, fmt.Errorf("append to %s-%d: %w", p.Topic, p.Index, err)
	}
	p.afterAppendLocked(base)
	if h.Idempotent() {
		ts := appendTime
		if ts < 0 {
			ts = sum.MaxTimestamp
		}
		p.mu.producers.update(h, base, ts)
	}
	p.advanceLocked()
	return AppendResult{BaseOffset: base, LastOffset: base + int64(h.LastOffsetDelta), LogAppendTime: appendTime,
		LogStartOffset: p.Log().LogStartOffset()}, syncUpTo, nil
}

// advanceLocked runs after a leader's append: the high watermark moves if
// the maximal ISR allows (with the leader alone in it, to the log end
// offset at once), and waiting fetches wake.
func (p *Partition) advanceLocked() {
	p.maybeIncrementHWLocked()
	p.wakeLocked()
}

// wakeLocked wakes fetches waiting on Appended or parked in a
// FetchWaiter, and answers the CommitWaits the high watermark passed or
// a role change ended.
func (p *Partition) wakeLocked() {
	if p.mu.appended != nil {
		close(p.mu.appended)
		p.mu.appended = nil // the next Appended makes a new one
	}
	p.mu.moves++
	for w, i := range p.mu.waiters {
		w.notify(i)
	}
	p.answerCommitWaitsLocked()
}

// Moves counts the moves of the log end offset and the high watermark
// and the role changes so far: a fetch takes it before reading and hands
// it to FetchWaiter.Watch, so no move after the read goes unseen.
func (p *Partition) Moves() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.moves
}

// FetchWaiter is a parked fetch, as in Kafka's fetch purgatory
// (DelayedFetch): each partition it watches tells it when its log end
// offset or high watermark moves or its role changes, by the index the
// fetch gave the partition, so that the fetch reads only those again.
// Lock order: a partition's lock, then the waiter's.
type FetchWaiter struct {
	// C receives when a watched partition changed since the last call
	// of Changed.
	C chan struct{}

	watched []*Partition // owned by the fetch
	mu      struct {
		sync.Mutex
		changed []int
		marked  []bool // by index: in changed
	}
}

// NewFetchWaiter returns a waiter for partitions indexed 0..n-1, watching
// none yet.
func NewFetchWaiter(n int) *FetchWaiter {
	w := &FetchWaiter{C: make(chan struct{}, 1)}
	w.mu.marked = make([]bool, n)
	return w
}

// Watch makes p tell w of its changes as index i, from now and at once
// if p moved since moves (Partition.Moves) was taken. Stop ends it.
func (w *FetchWaiter) Watch(p *Partition, i int, moves uint64) {
	w.watched = append(w.watched, p)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.waiters == nil {
		p.mu.waiters = make(map[*FetchWaiter]int)
	}
	p.mu.waiters[w] = i
	if p.mu.moves != moves {
		w.notify(i)
	}
}

// Changed returns the indexes of the partitions that changed since the
// last call, appended to dst, each once.
func (w *FetchWaiter) Changed(dst []int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	dst = append(dst, w.mu.changed...)
	for _, i := range w.mu.changed {
		w.mu.marked[i] = false
	}
	w.mu.changed = w.mu.changed[:0]
	return dst
}

// Stop unregisters w from every partition it watches.
func (w *FetchWaiter) Stop() {
	for _, p := range w.watched {
		p.mu.Lock()
		delete(p.mu.waiters, w)
		p.mu.Unlock()
	}
	w.watched = nil
}

func (w *FetchWaiter) notify(i int) {
	w.mu.Lock()
	if !w.mu.marked[i] {
		w.mu.marked[i] = true
		w.mu.changed = append(w.mu.changed, i)
	}
	w.mu.Unlock()
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// setHighWatermarkLocked moves the high watermark and tells the log, whose
// retention it bounds.
func (p *Partition) setHighWatermarkLocked(hw int64) {
	p.mu.highWatermark = hw
	p.Log().SetHighWatermark(hw)
}

// batchError maps a validation error to the code Kafka answers with,
// keeping the description for the response's error message.
func batchError(err error) error {
	code := kerr.CorruptMessage
	switch {
	case errors.Is(err, record.ErrUnsupportedMagic):
		code = kerr.UnsupportedForMessageFormat
	case errors.Is(err, record.ErrInvalid):
		code = kerr.InvalidRecord
	}
	return fmt.Errorf("%w: %v", code, err)
}

// Snapshot is a consistent view of a partition's offsets.
type Snapshot struct {
	LogStartOffset int64
	HighWatermark  int64
	LogEndOffset   int64
	LeaderEpoch    int32
	// LastStableOffset is the first offset of the oldest ongoing
	// transaction, or the high watermark when it is lower or there is
	// none: read_committed consumers see nothing at or above it.
	LastStableOffset int64
}

// Offsets returns the partition's current offsets.
func (p *Partition) Offsets() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.offsetsLocked()
}

func (p *Partition) offsetsLocked() Snapshot {
	return Snapshot{
		LogStartOffset:   p.Log().LogStartOffset(),
		HighWatermark:    p.mu.highWatermark,
		LogEndOffset:     p.Log().LogEndOffset(),
		LeaderEpoch:      p.mu.leaderEpoch,
		LastStableOffset: p.lastStableOffsetLocked(),
	}
}

// Appended returns a channel closed when the log end offset or the high
// watermark next moves (or the partition changes role), for fetches that
// wait for data.
func (p *Partition) Appended() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.appended == nil {
		p.mu.appended = make(chan struct{})
	}
	return p.mu.appended
}

// Read returns whole batches from offset up to the high watermark, at most
// maxBytes unless the first batch alone is larger and minOne is set.
func (p *Partition) Read(offset int64, maxBytes int, minOne bool) ([]byte, Snapshot, error) {
	return p.read(offset, maxBytes, minOne, false)
}

// read is Read bounded by the last stable offset when readCommitted.
func (p *Partition) read(offset int64, maxBytes int, minOne bool, readCommitted bool) ([]byte, Snapshot, error) {
	s := p.Offsets()
	if offset < s.LogStartOffset || offset > s.LogEndOffset {
		return nil, s, kerr.OffsetOutOfRange
	}
	bound := s.HighWatermark
	if readCommitted {
		bound = s.LastStableOffset
	}
	if offset >= bound {
		return nil, s, nil
	}
	if !minOne && maxBytes <= 0 {
		return nil, s, nil
	}
	b, err := p.readLog(offset, maxBytes, bound)
	if errors.Is(err, storage.ErrOffsetOutOfRange) {
		return nil, s, kerr.OffsetOutOfRange
	}
	if !minOne && len(b) > maxBytes {
		return nil, s, err // the log returned one batch larger than allowed
	}
	return b, s, err
}

// Config returns the partition's configuration.
func (p *Partition) Config() PartitionConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.cfg
}

// Log is the partition's log.
func (p *Partition) Log() *storage.Log { return p.log.Load() }

// DeleteRecords moves the partition's log start offset to offset (Kafka's
// DeleteRecords; -1 means the high watermark) and returns the new log start
// offset, the response's low watermark. An offset past the high watermark
// is OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy does not include
// delete refuses with POLICY_VIOLATION, as Kafka does. The segments wholly
// below the new start are removed by the next retention check.
func (p *Partition) DeleteRecords(offset int64) (lowWatermark int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leadingLocked() {
		return -1, kerr.NotLeaderForPartition
	}
	if !p.Log().Config().CleanupPolicy.Delete() {
		return -1, fmt.Errorf("%w: records of %s-%d cannot be deleted while cleanup.policy=compact", kerr.PolicyViolation, p.Topic, p.Index)
	}
	hw := p.mu.highWatermark
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, fmt.Errorf("%w: offset %d, high watermark %d", kerr.OffsetOutOfRange, offset, hw)
	}
	lso, err := p.Log().DeleteRecordsBefore(offset)
	if errors.Is(err, storage.ErrOffsetOutOfRange) {
		return -1, kerr.OffsetOutOfRange
	}
	if err != nil {
		return -1, fmt.Errorf("delete records of %s-%d: %w", p.Topic, p.Index, err)
	}
	return lso, nil
}
