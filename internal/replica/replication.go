package replica

// Replication API: the contract between internal/replica and the broker
// (fetch handler, replica fetchers, produce). The leader's bookkeeping of
// its followers and the ISR is in isr.go.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// PartitionState is what the metadata image says about a partition.
type PartitionState struct {
	Leader         int32 // -1: no leader
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
}

// AlterPartitionRequest asks the controller to change a partition's ISR
// (Kafka's AlterPartition, sent by the leader).
type AlterPartitionRequest struct {
	TopicID        [16]byte
	Topic          string
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// FollowerFetch is one partition of a Fetch sent by a follower replica.
type FollowerFetch struct {
	ReplicaID          int32
	FetchOffset        int64
	LastFetchedEpoch   int32 // -1: unknown
	CurrentLeaderEpoch int32 // -1: not checked
	MaxBytes           int
	// Slice asks for the batches as a slice of their segment file
	// (FollowerFetchResult.Slice) instead of bytes in memory.
	Slice bool
}

// EpochEndOffset is a leader epoch and the offset where it ended (the start
// of the next epoch, or the log end offset for the latest epoch).
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// FollowerFetchResult is the leader's answer to a FollowerFetch.
type FollowerFetchResult struct {
	// Records are whole batches from FetchOffset up to the log end offset;
	// Slice holds them instead when FollowerFetch.Slice asked for it (nil
	// when there are none), and the caller must Release it.
	Records []byte
	Slice   *storage.FileSlice
	// Offsets are the leader's offsets after recording the fetch.
	Offsets Snapshot
	// Diverging is set (and Records empty) when the follower's log diverges
	// from the leader's at LastFetchedEpoch: the follower must truncate to
	// at most Diverging.EndOffset (KIP-320 / KIP-595 style truncation).
	Diverging *EpochEndOffset
}

// applyStateLocked makes the partition take st, if st is not stale: a
// newer leader epoch, or the same one with a partition epoch at least as
// new (an ISR change). A new leader epoch in which this node leads starts
// the epoch at the log end offset and tracks the followers afresh; losing
// leadership wakes WaitCommitted callers, who answer NOT_LEADER_OR_FOLLOWER.
func (p *Partition) applyStateLocked(st PartitionState) { p.applyStateLogLocked(st, slog.LevelInfo) }

// roleChange is what applying a partition state made of the replica.
type roleChange int8

const (
	roleUnchanged roleChange = iota
	becameLeader
	becameFollower
)

// applyStateLogLocked is applyStateLocked that logs a change of role at
// level (EnsureAll logs a batch's changes in one line) and reports it.
func (p *Partition) applyStateLogLocked(st PartitionState, level slog.Level) roleChange {
	cur := p.mu.state
	if p.mu.applied && (st.LeaderEpoch < cur.LeaderEpoch ||
		st.LeaderEpoch == cur.LeaderEpoch && st.PartitionEpoch < cur.PartitionEpoch) {
		p.logger.Debug("ignoring stale partition state", "leader.epoch", st.LeaderEpoch, "partition.epoch", st.PartitionEpoch,
			"current_leader_epoch", cur.LeaderEpoch, "current_partition_epoch", cur.PartitionEpoch)
		return roleUnchanged
	}
	change := roleUnchanged
	now := p.now()
	newEpoch := !p.mu.applied || st.LeaderEpoch != cur.LeaderEpoch
	wasLeader := p.mu.leader
	st.Replicas, st.ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	p.mu.state, p.mu.applied = st, true
	p.mu.leaderEpoch = st.LeaderEpoch
	p.mu.leader = st.Leader == p.mgr.cfg.NodeID
	if newEpoch || st.PartitionEpoch != cur.PartitionEpoch {
		// The change in flight was decided one way or the other; a
		// republished state must keep it counting for the high watermark.
		p.mu.pendingISR = nil
	}
	switch {
	case p.mu.leader && (newEpoch || !wasLeader):
		leo := p.Log().LogEndOffset()
		if err := p.Log().AssignLeaderEpoch(st.LeaderEpoch, leo); err != nil {
			p.logger.Error("recording leader epoch start", "epoch", st.LeaderEpoch, "offset", leo, "err", err)
		}
		p.mu.epochStart = leo
		p.resetFollowersLocked(now)
		change = becameLeader
		if p.logger.Enabled(context.Background(), level) {
			p.logger.Log(context.Background(), level, "became leader", "leader.epoch", st.LeaderEpoch, "isr", st.ISR,
				"log_end_offset", leo, "high_watermark", p.mu.highWatermark)
		}
	case p.mu.leader:
		p.syncFollowersLocked(now)
	default:
		p.mu.followers = nil
		if wasLeader || newEpoch {
			change = becameFollower
			if p.logger.Enabled(context.Background(), level) {
				p.logger.Log(context.Background(), level, "became follower", "leader", st.Leader, "leader.epoch", st.LeaderEpoch)
			}
		}
	}
	p.maybeIncrementHWLocked()
	p.wakeLocked()
	return change
}

// IsLeader reports whether this node currently leads the partition: the
// metadata names it leader and the node is not fenced (Manager.SetFenced).
func (p *Partition) IsLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leadingLocked()
}

// leadingLocked is whether this replica may act as the leader: serve
// produce, consumers and followers, and change the ISR. A fenced node
// keeps its leader state (the metadata that made it leader has not
// changed, as far as it knows) but acts on none of it.
func (p *Partition) leadingLocked() bool {
	return p.mu.leader && !p.mgr.fenced.Load()
}

// State returns the partition state this replica last applied.
func (p *Partition) State() PartitionState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.mu.state
	st.Replicas, st.ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	return st
}

func (p *Partition) minISRLocked() int {
	return max(p.mu.cfg.MinInsyncReplicas, 1)
}

// CheckEnoughReplicas is the acks=all admission check made before an
// append: NOT_ENOUGH_REPLICAS when the ISR is smaller than
// min.insync.replicas; NOT_LEADER_OR_FOLLOWER when not leader.
func (p *Partition) CheckEnoughReplicas() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.enoughReplicasLocked()
}

func (p *Partition) enoughReplicasLocked() error {
	if !p.leadingLocked() {
		return kerr.NotLeaderForPartition
	}
	if n, want := len(p.mu.state.ISR), p.minISRLocked(); n < want {
		return fmt.Errorf("%w: ISR of %s-%d has %d replicas, min.insync.replicas is %d", kerr.NotEnoughReplicas, p.Topic, p.Index, n, want)
	}
	return nil
}

// WaitCommitted blocks until the high watermark passes lastOffset (the
// record at lastOffset is committed). It returns NOT_LEADER_OR_FOLLOWER if
// the partition stops being leader (its leader epoch changes, or the node
// is fenced) first, NOT_ENOUGH_REPLICAS_AFTER_APPEND if when the offset
// commits the ISR is smaller than min.insync.replicas, and
// REQUEST_TIMED_OUT when ctx ends (a CommitWait of one partition).
func (p *Partition) WaitCommitted(ctx context.Context, lastOffset int64) error {
	w := NewCommitWait(1)
	p.mu.Lock()
	p.addCommitWaitLocked(w, 0, lastOffset)
	p.mu.Unlock()
	return w.Wait(ctx)[0]
}

// CheckLeaderEpoch is KIP-320's check of the leader epoch a request
// expects (its current_leader_epoch) against the partition's current one:
// an older epoch is FENCED_LEADER_EPOCH (the sender's metadata is stale), a
// newer one UNKNOWN_LEADER_EPOCH (this broker has not applied it yet); a
// negative one (-1) is not checked. It is the one rule for every request
// that names a leader epoch: Fetch and ListOffsets against the Snapshot
// they answer from, OffsetForLeaderEpoch, and FetchForFollower under the
// partition lock. Whether this node leads is checked before it, by each
// caller (NOT_LEADER_OR_FOLLOWER).
func CheckLeaderEpoch(requested, current int32) error {
	switch {
	case requested < 0:
		return nil
	case requested < current:
		return kerr.FencedLeaderEpoch
	case requested > current:
		return kerr.UnknownLeaderEpoch
	}
	return nil
}

// FetchForFollower serves a follower's fetch on the leader: it checks the
// leader epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), records the
// follower's position (which may advance the high watermark and expand the
// ISR), checks divergence against LastFetchedEpoch, and reads up to the log
// end offset. NOT_LEADER_OR_FOLLOWER when not leader; OFFSET_OUT_OF_RANGE
// when FetchOffset is outside [log start, log end].
func (p *Partition) FetchForFollower(f FollowerFetch) (FollowerFetchResult, error) {
	p.mu.Lock()
	if !p.leadingLocked() {
		p.mu.Unlock()
		return FollowerFetchResult{}, kerr.NotLeaderForPartition
	}
	if err := CheckLeaderEpoch(f.CurrentLeaderEpoch, p.mu.leaderEpoch); err != nil {
		p.mu.Unlock()
		return FollowerFetchResult{}, err
	}
	fs := p.mu.followers[f.ReplicaID]
	if fs == nil {
		p.mu.Unlock()
		return FollowerFetchResult{}, fmt.Errorf("%w: replica %d is not a replica of %s-%d", kerr.NotLeaderForPartition, f.ReplicaID, p.Topic, p.Index)
	}
	// Like Kafka, the divergence check comes first: a follower ahead of
	// this log is told to truncate, not that its offset is out of range.
	if f.LastFetchedEpoch >= 0 {
		epoch, end := p.Log().EndOffsetForEpoch(f.LastFetchedEpoch)
		if epoch < 0 || end < 0 {
			p.mu.Unlock()
			return FollowerFetchResult{}, fmt.Errorf("%w: end offset of epoch %d is unknown", kerr.OffsetOutOfRange, f.LastFetchedEpoch)
		}
		if epoch < f.LastFetchedEpoch || end < f.FetchOffset {
			defer p.mu.Unlock()
			return FollowerFetchResult{Offsets: p.offsetsLocked(), Diverging: &EpochEndOffset{Epoch: epoch, EndOffset: end}}, nil
		}
	}
	leo, start := p.Log().LogEndOffset(), p.Log().LogStartOffset()
	if f.FetchOffset < start || f.FetchOffset > leo {
		p.mu.Unlock()
		return FollowerFetchResult{}, fmt.Errorf("%w: fetch offset %d, log has %d..%d", kerr.OffsetOutOfRange, f.FetchOffset, start, leo)
	}
	p.recordFetchLocked(fs, f.ReplicaID, f.FetchOffset, leo, p.now())
	s := p.offsetsLocked()
	p.mu.Unlock()
	// The leader's log end offset before the read bounds it: appends
	// after the fetch was recorded go to the next fetch.
	var res FollowerFetchResult
	err := p.onLog(func(l *storage.Log) (err error) {
		if f.Slice {
			res.Slice, err = l.ReadSlice(f.FetchOffset, f.MaxBytes, leo)
		} else {
			res.Records, err = l.Read(f.FetchOffset, f.MaxBytes, leo)
		}
		return err
	})
	if errors.Is(err, storage.ErrOffsetOutOfRange) {
		return FollowerFetchResult{}, fmt.Errorf("%w: %v", kerr.OffsetOutOfRange, err)
	}
	if err != nil {
		return FollowerFetchResult{}, fmt.Errorf("read %s-%d for replica %d: %w", p.Topic, p.Index, f.ReplicaID, err)
	}
	res.Offsets = s
	return res, nil
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch <=
// epoch this replica knows and the offset where it ended. Unknown → epoch
// -1, offset -1. An epoch below every known one answers itself and the
// start of the oldest known epoch, as Kafka does.
func (p *Partition) EndOffsetForEpoch(epoch int32) EpochEndOffset {
	e, off := p.Log().EndOffsetForEpoch(epoch)
	return EpochEndOffset{Epoch: e, EndOffset: off}
}

// FetchPosition is where a follower fetches from next: its log end offset
// and the epoch of its last batch (-1 when the log is empty), which the
// leader epoch cache holds.
func (p *Partition) FetchPosition() (fetchOffset int64, lastFetchedEpoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Log().LogEndOffset(), p.Log().LatestEpoch()
}

// AppendAsFollower appends batches fetched from the leader, keeping their
// offsets and epochs, updating producer and transaction state, and sets the
// high watermark to min(leaderHW, log end offset) and the log start offset
// to at least leaderLogStart. A partial batch at the end (fetch responses
// may end mid-batch) is left for the next fetch. When the flush policy
// makes an fsync due it returns once the batches are fsynced.
func (p *Partition) AppendAsFollower(batches []byte, leaderHW, leaderLogStart int64) error {
	syncUpTo, err := p.AppendAsFollowerUnsynced(batches, leaderHW, leaderLogStart)
	if err != nil || syncUpTo == 0 {
		return err
	}
	return p.SyncAppended(syncUpTo)
}

// AppendAsFollowerUnsynced is AppendAsFollower without the wait for the
// fsync the flush policy (flush.messages, flush.ms) made due: the batches
// are durable once SyncAppended(syncUpTo) returns; syncUpTo is 0 when no
// fsync was due. A replica fetcher appends every partition of a fetch
// answer so and fsyncs them together, before its next fetch tells the
// leader the new position (which lets the leader's high watermark pass
// the batches).
func (p *Partition) AppendAsFollowerUnsynced(batches []byte, leaderHW, leaderLogStart int64) (syncUpTo int64, err error) {
	var whole []record.Header
	var controls [][]byte
	n := 0
	for rest := batches; len(rest) >= record.HeaderSize; {
		h, err := record.ParseHeader(rest)
		if err != nil {
			return 0, fmt.Errorf("%w: batch from the leader: %v", kerr.CorruptMessage, err)
		}
		if h.Size() > len(rest) {
			break
		}
		if _, _, err := record.ValidateStored(rest[:h.Size()]); err != nil {
			return 0, fmt.Errorf("%w: batch at offset %d from the leader: %v", kerr.CorruptMessage, h.BaseOffset, err)
		}
		var ctl []byte
		if h.Control() {
			ctl = rest[:h.Size()]
		}
		whole, controls = append(whole, h), append(controls, ctl)
		n += h.Size()
		rest = rest[h.Size():]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.leader {
		return 0, kerr.NotLeaderForPartition
	}
	if n > 0 {
		if syncUpTo, err = p.appendAsFollowerLocked(batches[:n], whole, controls); err != nil {
			return 0, err
		}
	}
	p.updateFollowerOffsetsLocked(leaderHW, leaderLogStart)
	p.wakeLocked()
	return syncUpTo, nil
}

// SyncAppended waits until the log is fsynced up to upTo (concurrent
// callers share one fsync, storage.Log.SyncTo).
func (p *Partition) SyncAppended(upTo int64) error {
	if err := p.Log().SyncTo(upTo); err != nil {
		return fmt.Errorf("fsync %s-%d: %w", p.Topic, p.Index, err)
	}
	return nil
}

// appendAsFollowerLocked appends whole batches and replays them into the
// producer state, the path restarts take, so a follower that becomes
// leader knows sequences and open transactions as the old leader did.
func (p *Partition) appendAsFollowerLocked(batches []byte, headers []record.Header, controls [][]byte) (syncUpTo int64, err error) {
	p.maybeExpireProducersLocked(p.now().UnixMilli())
	first, _, syncUpTo, err := p.Log().AppendAsFollowerUnsynced(batches)
	if errors.Is(err, storage.ErrOffsetsOutOfOrder) {
		return 0, fmt.Errorf("%w: %v", kerr.OffsetOutOfRange, err)
	}
	if err != nil {
		return 0, fmt.Errorf("append to follower %s-%d: %w", p.Topic, p.Index, err)
	}
	p.afterAppendLocked(first)
	for i, h := range headers {
		t, err := p.mu.producers.replay(h, controls[i])
		if err != nil {
			p.logger.Error("replaying replicated batch into producer state", "offset", h.BaseOffset, "err", err)
			continue
		}
		if t != nil {
			if err := p.Log().AppendAbortedTxn(*t); err != nil {
				p.logger.Error("recording aborted transaction in .txnindex", "producer.id", t.ProducerID, "offset", t.LastOffset, "err", err)
			}
		}
	}
	return syncUpTo, nil
}

// updateFollowerOffsetsLocked moves the high watermark forward to
// min(leaderHW, log end offset) and the log start offset up to
// leaderLogStart, which the high watermark bounds.
func (p *Partition) updateFollowerOffsetsLocked(leaderHW, leaderLogStart int64) {
	if hw := min(leaderHW, p.Log().LogEndOffset()); hw > p.mu.highWatermark {
		p.setHighWatermarkLocked(hw)
	}
	if start := min(leaderLogStart, p.mu.highWatermark); start > p.Log().LogStartOffset() {
		if err := p.Log().IncrementLogStartOffset(start); err != nil {
			p.logger.Warn("moving log start offset to the leader's", "offset", start, "err", err)
		}
	}
}

// UpdateFollowerHighWatermark applies the leader's high watermark and log
// start offset from a fetch response that carried no records.
func (p *Partition) UpdateFollowerHighWatermark(leaderHW, leaderLogStart int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.leader {
		return
	}
	hw, start := p.mu.highWatermark, p.Log().LogStartOffset()
	p.updateFollowerOffsetsLocked(leaderHW, leaderLogStart)
	if p.mu.highWatermark != hw || p.Log().LogStartOffset() != start {
		p.wakeLocked()
	}
}

// TruncateOnDivergence truncates a follower whose log diverged: to
// min(d.EndOffset, this replica's own end offset for d.Epoch). As in
// Kafka's fetcher, when this replica does not have d.Epoch it truncates to
// the end of its largest epoch below it, and the next fetch goes on from
// there; an undefined d truncates to the high watermark.
func (p *Partition) TruncateOnDivergence(d EpochEndOffset) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.leader {
		return kerr.NotLeaderForPartition
	}
	leo := p.Log().LogEndOffset()
	target := p.mu.highWatermark
	if d.Epoch >= 0 && d.EndOffset >= 0 {
		epoch, end := p.Log().EndOffsetForEpoch(d.Epoch)
		switch {
		case end < 0:
			target = min(d.EndOffset, leo)
		case epoch != d.Epoch:
			target = min(end, leo)
		default:
			target = min(end, d.EndOffset, leo)
		}
	}
	p.logger.Info("truncating diverging log", "leader.epoch", d.Epoch, "leader_end_offset", d.EndOffset, "to", target, "log_end_offset", leo)
	return p.truncateLocked(target)
}

// TruncateFullyAndStartAt empties the log and restarts it at offset (a
// follower that fell behind the leader's log start offset).
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.leader {
		return kerr.NotLeaderForPartition
	}
	if err := p.Log().TruncateFullyAndStartAt(offset); err != nil {
		return fmt.Errorf("truncate %s-%d fully to start at %d: %w", p.Topic, p.Index, offset, err)
	}
	if err := p.truncateFutureLocked(true); err != nil {
		return fmt.Errorf("truncate future log of %s-%d: %w", p.Topic, p.Index, err)
	}
	p.setHighWatermarkLocked(offset)
	p.wakeLocked()
	return p.loadProducerStateLocked()
}
