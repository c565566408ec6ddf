package replica

import (
	"log/slog"
	"sync"
)

// EnsureRequest is one partition of an EnsureAll: the arguments of Ensure.
type EnsureRequest struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
	State     PartitionState
	Config    PartitionConfig
}

// EnsureResult is what EnsureAll did with one request.
type EnsureResult struct {
	Partition *Partition // nil when Err is set
	// LedBefore: the partition was hosted here, led by this node in the
	// request's leader epoch, before the request was applied.
	LedBefore bool
	Err       error
}

// quietBatch is the batch size from which EnsureAll logs each change of
// role at debug level and sums them up in one line: a restart of a node
// with 100,000 partitions would otherwise write 100,000 lines.
const quietBatch = 64

// EnsureAll is Ensure for many partitions under one acquisition of the
// manager's lock (a metadata image publishing every partition of a node
// at start-up, or a CreateTopics of many partitions). Results are in the
// order of reqs; a failed request does not stop the others.
func (m *Manager) EnsureAll(reqs []EnsureRequest) []EnsureResult {
	out := make([]EnsureResult, len(reqs))
	level := slog.LevelInfo
	if len(reqs) >= quietBatch {
		level = slog.LevelDebug
	}
	leaders, followers := 0, 0
	m.mu.Lock()
	for i, r := range reqs {
		if prev, ok := m.mu.partitions[TopicPartition{r.Topic, r.Partition}]; ok {
			st := prev.State()
			out[i].LedBefore = st.Leader == m.cfg.NodeID && st.LeaderEpoch == r.State.LeaderEpoch
		}
		p, change, err := m.ensureLocked(r.Topic, r.TopicID, r.Partition, r.State, r.Config, level)
		out[i].Partition, out[i].Err = p, err
		switch change {
		case becameLeader:
			leaders++
		case becameFollower:
			followers++
		}
	}
	m.mu.Unlock()
	if level == slog.LevelDebug && leaders+followers > 0 {
		m.cfg.Logger.Info("published partitions", "partitions", len(reqs), "became_leader", leaders, "became_follower", followers)
	}
	return out
}

// metaSyncParallelism is how many partitions SyncMetaFiles makes durable
// at once; their fsyncs share the file system journal's commits.
const metaSyncParallelism = 16

// SyncMetaFiles makes durable, in parallel, the metadata files (the
// leader epoch checkpoint, partition.metadata) of those partitions each
// yields whose next append would first do it (storage.Log.NeedsMetaSync):
// the first produce to many partitions after a restart or their creation
// pays those fsyncs together instead of one partition after another.
// Partitions not hosted here are skipped; a failure is left for the
// append to report (the log is then offline). Without two such
// partitions it only looks them up.
func (m *Manager) SyncMetaFiles(each func(yield func(topic string, partition int32))) {
	var due []*Partition
	m.mu.RLock()
	each(func(topic string, partition int32) {
		if p, ok := m.mu.partitions[TopicPartition{topic, partition}]; ok && p.Log().NeedsMetaSync() {
			due = append(due, p)
		}
	})
	m.mu.RUnlock()
	if len(due) < 2 {
		return // the append does it
	}
	sem := make(chan struct{}, metaSyncParallelism)
	var wg sync.WaitGroup
	for _, p := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p.Log().SyncMetaFiles()
		}()
	}
	wg.Wait()
}
