package share

import (
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// shard is one loaded partition of __share_group_state (Kafka's
// ShareCoordinatorShard): the state of every share partition whose key
// hashes to it. Its decide methods run under mu (held by
// coordinator.Partition.Write) and return the one record to append;
// replayLocked is the only way state changes, on load and after a write.
type shard struct {
	c *Coordinator
	p *coordinator.Partition[*shard]

	mu struct {
		sync.Mutex
		states map[Key]*value
		// leaderEpochs and stateEpochs are the highest epochs the log
		// has recorded for a key: requests below them are fenced.
		leaderEpochs map[Key]int32
		stateEpochs  map[Key]int32
		// updates counts the ShareUpdate records since a key's last
		// snapshot, to decide when the next write is a snapshot.
		updates map[Key]int
	}
}

func newShard(c *Coordinator, p *coordinator.Partition[*shard]) *shard {
	s := &shard{c: c, p: p}
	s.mu.states = map[Key]*value{}
	s.mu.leaderEpochs = map[Key]int32{}
	s.mu.stateEpochs = map[Key]int32{}
	s.mu.updates = map[Key]int{}
	return s
}

func (s *shard) Lock()   { s.mu.Lock() }
func (s *shard) Unlock() { s.mu.Unlock() }

// ReplayLocked applies one record of the partition. Records of a type
// this coordinator does not know are skipped, as Kafka's loader does; no
// transactions write to __share_group_state, so markers are skipped too.
func (s *shard) ReplayLocked(kv coordinator.KV) error {
	if kv.Control {
		return nil
	}
	err := s.replayLocked(kv)
	if errors.Is(err, errUnknownType) {
		return nil
	}
	return err
}

func (s *shard) OnLoadedLocked()   {}
func (s *shard) OnUnloadedLocked() { s.mu.states = nil }

func (s *shard) replayLocked(kv coordinator.KV) error {
	typ, k, v, err := decodeRecord(kv)
	if err != nil {
		return err
	}
	switch {
	case typ == typeSnapshot && v == nil: // a deleted share partition
		delete(s.mu.states, k)
		delete(s.mu.leaderEpochs, k)
		delete(s.mu.stateEpochs, k)
		delete(s.mu.updates, k)
	case typ == typeSnapshot:
		s.raiseLocked(s.mu.leaderEpochs, k, v.LeaderEpoch)
		s.raiseLocked(s.mu.stateEpochs, k, v.StateEpoch)
		s.mu.states[k] = v
		if n, ok := s.mu.updates[k]; ok && n >= s.c.cfg.SnapshotUpdateRecordsPerSnapshot {
			s.mu.updates[k] = 0
		}
	case v != nil: // ShareUpdate
		s.raiseLocked(s.mu.leaderEpochs, k, v.LeaderEpoch)
		if cur := s.mu.states[k]; cur != nil {
			s.mu.states[k] = mergeUpdate(cur, v)
		} else {
			v.snapshot = true // a state of its own now; its state epoch is 0
			s.mu.states[k] = v
		}
		s.mu.updates[k]++
	}
	return nil
}

// raiseLocked records epoch for k unless a higher one is recorded.
func (s *shard) raiseLocked(m map[Key]int32, k Key, epoch int32) {
	if cur, ok := m[k]; !ok || cur < epoch {
		m[k] = epoch
	}
}

// mergeUpdate is cur with a ShareUpdate applied: a start offset or leader
// epoch of -1 keeps cur's, the batches are combined past the start
// offset, and the delivery complete count is the update's.
func mergeUpdate(cur, u *value) *value {
	n := *cur
	if u.StartOffset != -1 {
		n.StartOffset = u.StartOffset
	}
	if u.LeaderEpoch != -1 {
		n.LeaderEpoch = u.LeaderEpoch
	}
	n.DeliveryCompleteCount = u.DeliveryCompleteCount
	n.Batches = combineBatches(cur.Batches, u.Batches, n.StartOffset)
	return &n
}

// result is one share partition's answer: an error code and message, or
// the state read.
type result struct {
	code int16
	msg  *string
	v    *value // ReadState and ReadStateSummary; nil when uninitialized
}

func fail(err *kerr.Error, msg string) result {
	if msg == "" {
		msg = err.Description
	}
	return result{code: err.Code, msg: &msg}
}

// Kafka's messages for the refusals that carry their own.
const (
	msgNegativePartition   = "The partition id cannot be a negative number."
	msgNegativeLeaderEpoch = "The leader epoch cannot be a negative number."
	msgNegativeStateEpoch  = "The state epoch cannot be a negative number."
	msgWriteUninitialized  = "Write operation on uninitialized share partition not allowed."
	msgReadUninitialized   = "Read operation on uninitialized share partition not allowed."
)

// topicKnownLocked reports whether k's topic partition exists in the
// latest metadata image.
func (s *shard) topicKnownLocked(k Key) bool {
	n, ok := s.c.cfg.TopicPartitions(k.TopicID)
	return ok && k.Partition < n
}

// decideInitialize is InitializeShareGroupState for k: a new snapshot at
// stateEpoch with startOffset (-1: not yet known) and no batches.
func (s *shard) decideInitialize(k Key, stateEpoch int32, startOffset int64) (*coordinator.KV, result) {
	switch {
	case k.Partition < 0:
		return nil, fail(kerr.InvalidRequest, msgNegativePartition)
	case stateEpoch < 0:
		return nil, fail(kerr.InvalidRequest, msgNegativeStateEpoch)
	}
	if cur, ok := s.mu.stateEpochs[k]; ok && cur > stateEpoch {
		return nil, fail(kerr.FencedStateEpoch, "")
	}
	if !s.topicKnownLocked(k) {
		return nil, fail(kerr.UnknownTopicOrPartition, "")
	}
	v := value{StateEpoch: stateEpoch, StartOffset: startOffset, DeliveryCompleteCount: 0}
	if startOffset == -1 {
		v.DeliveryCompleteCount = -1
	}
	if cur := s.mu.states[k]; cur != nil {
		v.SnapshotEpoch = cur.SnapshotEpoch + 1
	}
	v.CreateTimestamp = s.c.cfg.Now().UnixMilli()
	v.WriteTimestamp = v.CreateTimestamp
	kv := snapshotRecord(k, v)
	return &kv, result{}
}

// stateWrite is what WriteShareGroupState (or a read that moves the
// leader epoch) asks to record for a share partition.
type stateWrite struct {
	StateEpoch, LeaderEpoch int32
	StartOffset             int64
	DeliveryCompleteCount   int32
	Batches                 []Batch
}

// decideWrite is WriteShareGroupState for k.
func (s *shard) decideWrite(k Key, w stateWrite) (*coordinator.KV, result) {
	switch {
	case k.Partition < 0:
		return nil, fail(kerr.InvalidRequest, msgNegativePartition)
	case w.LeaderEpoch < 0:
		return nil, fail(kerr.InvalidRequest, msgNegativeLeaderEpoch)
	case w.StateEpoch < 0:
		return nil, fail(kerr.InvalidRequest, msgNegativeStateEpoch)
	case s.mu.states[k] == nil:
		return nil, fail(kerr.InvalidRequest, msgWriteUninitialized)
	}
	if cur, ok := s.mu.leaderEpochs[k]; ok && cur > w.LeaderEpoch {
		return nil, fail(kerr.FencedLeaderEpoch, "")
	}
	if cur, ok := s.mu.stateEpochs[k]; ok && cur > w.StateEpoch {
		return nil, fail(kerr.FencedStateEpoch, "")
	}
	if !s.topicKnownLocked(k) {
		return nil, fail(kerr.UnknownTopicOrPartition, "")
	}
	kv := s.stateRecordLocked(k, w, false)
	return &kv, result{}
}

// stateRecordLocked is the record of a write to an initialized share
// partition (Kafka's generateShareStateRecord): a ShareUpdate carrying
// only the new batches, or, every SnapshotUpdateRecordsPerSnapshot
// updates, a ShareSnapshot of the whole merged state. The start offset
// never moves back; the leader epoch changes only when a read brings a
// new one (newLeader).
func (s *shard) stateRecordLocked(k Key, w stateWrite, newLeader bool) coordinator.KV {
	cur := s.mu.states[k]
	leaderEpoch := cur.LeaderEpoch
	if newLeader {
		leaderEpoch = w.LeaderEpoch
	}
	start := max(w.StartOffset, cur.StartOffset)
	dcc := w.DeliveryCompleteCount
	switch {
	case w.StartOffset == cur.StartOffset:
		dcc = max(w.DeliveryCompleteCount, cur.DeliveryCompleteCount)
	case w.StartOffset < cur.StartOffset:
		dcc = cur.DeliveryCompleteCount
	}
	if s.mu.updates[k] >= s.c.cfg.SnapshotUpdateRecordsPerSnapshot {
		now := s.c.cfg.Now().UnixMilli()
		return snapshotRecord(k, value{
			SnapshotEpoch: cur.SnapshotEpoch + 1, StateEpoch: cur.StateEpoch, LeaderEpoch: leaderEpoch,
			StartOffset: start, DeliveryCompleteCount: dcc, CreateTimestamp: now, WriteTimestamp: now,
			Batches: combineBatches(cur.Batches, w.Batches, start),
		})
	}
	return updateRecord(k, value{
		SnapshotEpoch: cur.SnapshotEpoch, LeaderEpoch: leaderEpoch, StartOffset: start,
		DeliveryCompleteCount: dcc, Batches: combineBatches(nil, w.Batches, start),
	})
}

// decideRead is ReadShareGroupState for k by the share partition leader
// at leaderEpoch. The state is answered as it is now; when leaderEpoch is
// new, it is also recorded (a record is returned), fencing the older
// leader's writes, and the answer waits for that record.
func (s *shard) decideRead(k Key, leaderEpoch int32) (*coordinator.KV, result) {
	switch {
	case k.Partition < 0:
		return nil, fail(kerr.InvalidRequest, msgNegativePartition)
	case leaderEpoch < 0:
		return nil, fail(kerr.InvalidRequest, msgNegativeLeaderEpoch)
	case s.mu.states[k] == nil:
		return nil, fail(kerr.InvalidRequest, msgReadUninitialized)
	}
	cur, recorded := s.mu.leaderEpochs[k]
	if recorded && cur > leaderEpoch {
		return nil, fail(kerr.FencedLeaderEpoch, "")
	}
	if !s.topicKnownLocked(k) {
		return nil, fail(kerr.UnknownTopicOrPartition, "")
	}
	v := s.mu.states[k]
	res := result{v: v}
	if recorded && cur == leaderEpoch {
		return nil, res
	}
	kv := s.stateRecordLocked(k, stateWrite{LeaderEpoch: leaderEpoch, StateEpoch: v.StateEpoch,
		StartOffset: v.StartOffset, DeliveryCompleteCount: v.DeliveryCompleteCount}, true)
	return &kv, res
}

// readSummary is ReadShareGroupStateSummary for k: an uninitialized share
// partition reads as start offset -1 at epochs 0.
func (s *shard) readSummary(k Key) result {
	switch {
	case k.Partition < 0:
		return fail(kerr.InvalidRequest, msgNegativePartition)
	case !s.topicKnownLocked(k):
		return fail(kerr.UnknownTopicOrPartition, "")
	}
	v := s.mu.states[k]
	if v == nil {
		v = &value{StartOffset: -1, DeliveryCompleteCount: -1}
	}
	return result{v: v}
}

// decideDelete is DeleteShareGroupState for k: a tombstone, if there is
// state to delete.
func (s *shard) decideDelete(k Key) (*coordinator.KV, result) {
	switch {
	case k.Partition < 0:
		return nil, fail(kerr.InvalidRequest, msgNegativePartition)
	case !s.topicKnownLocked(k):
		return nil, fail(kerr.UnknownTopicOrPartition, "")
	case s.mu.states[k] == nil:
		return nil, result{}
	}
	kv := tombstoneRecord(k)
	return &kv, result{}
}
