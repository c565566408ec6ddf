package replica

// Replication API. THIS FILE IS THE CONTRACT between internal/replica and
// the broker (fetch handler, replica fetchers, produce). Bodies marked
// "not implemented" are being written; signatures are fixed.

import (
	"context"
	"errors"
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
}

// EpochEndOffset is a leader epoch and the offset where it ended (the start
// of the next epoch, or the log end offset for the latest epoch).
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// FollowerFetchResult is the leader's answer to a FollowerFetch.
type FollowerFetchResult struct {
	// Records are whole batches from FetchOffset up to the log end offset.
	Records []byte
	// Offsets are the leader's offsets after recording the fetch.
	Offsets Snapshot
	// Diverging is set (and Records empty) when the follower's log diverges
	// from the leader's at LastFetchedEpoch: the follower must truncate to
	// at most Diverging.EndOffset (KIP-320 / KIP-595 style truncation).
	Diverging *EpochEndOffset
}

var errNotImplemented = errors.New("replica: not implemented")

// IsLeader reports whether this node currently leads the partition.
func (p *Partition) IsLeader() bool { panic(errNotImplemented) }

// State returns the partition state this replica last applied.
func (p *Partition) State() PartitionState { panic(errNotImplemented) }

// CheckEnoughReplicas is the acks=all admission check made before an
// append: NOT_ENOUGH_REPLICAS when the ISR is smaller than
// min.insync.replicas; NOT_LEADER_OR_FOLLOWER when not leader.
func (p *Partition) CheckEnoughReplicas() error { panic(errNotImplemented) }

// WaitCommitted blocks until the high watermark passes lastOffset (the
// record at lastOffset is committed). It returns NOT_LEADER_OR_FOLLOWER if
// the partition stops being leader (or its leader epoch changes) first,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if when the offset commits the ISR is
// smaller than min.insync.replicas, and REQUEST_TIMED_OUT when ctx ends.
func (p *Partition) WaitCommitted(ctx context.Context, lastOffset int64) error {
	panic(errNotImplemented)
}

// FetchForFollower serves a follower's fetch on the leader: it checks the
// leader epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), records the
// follower's position (which may advance the high watermark and expand the
// ISR), checks divergence against LastFetchedEpoch, and reads up to the log
// end offset. NOT_LEADER_OR_FOLLOWER when not leader; OFFSET_OUT_OF_RANGE
// when FetchOffset is outside [log start, log end].
func (p *Partition) FetchForFollower(f FollowerFetch) (FollowerFetchResult, error) {
	panic(errNotImplemented)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch <=
// epoch this replica knows and the offset where it ended. Unknown → epoch
// -1, offset -1.
func (p *Partition) EndOffsetForEpoch(epoch int32) EpochEndOffset { panic(errNotImplemented) }

// FetchPosition is where a follower fetches from next: its log end offset
// and the epoch of its last batch (-1 when the log is empty).
func (p *Partition) FetchPosition() (fetchOffset int64, lastFetchedEpoch int32) {
	panic(errNotImplemented)
}

// AppendAsFollower appends batches fetched from the leader, keeping their
// offsets and epochs, updating producer and transaction state, and sets the
// high watermark to min(leaderHW, log end offset) and the log start offset
// to at least leaderLogStart.
func (p *Partition) AppendAsFollower(batches []byte, leaderHW, leaderLogStart int64) error {
	panic(errNotImplemented)
}

// UpdateFollowerHighWatermark applies the leader's high watermark and log
// start offset from a fetch response that carried no records.
func (p *Partition) UpdateFollowerHighWatermark(leaderHW, leaderLogStart int64) {
	panic(errNotImplemented)
}

// TruncateOnDivergence truncates a follower whose log diverged: to
// min(d.EndOffset, this replica's own end offset for d.Epoch).
func (p *Partition) TruncateOnDivergence(d EpochEndOffset) error { panic(errNotImplemented) }

// TruncateFullyAndStartAt empties the log and restarts it at offset (a
// follower that fell behind the leader's log start offset).
func (p *Partition) TruncateFullyAndStartAt(offset int64) error { panic(errNotImplemented) }
