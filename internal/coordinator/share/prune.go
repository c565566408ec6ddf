package share

import (
	"context"

	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/samsa-io/samsa/internal/replica"
)

// Pruning keeps __share_group_state small. Its cleanup.policy is delete
// with infinite retention, as in Kafka, so nothing removes old records but
// the coordinator itself: every PruneInterval, a partition whose log holds
// more than twice as many records as it has share partitions rewrites
// each share partition's state as a ShareSnapshot and then deletes every
// record below the first of them (DeleteRecords on its own partition).
// Everything below is redundant: each live share partition has a
// snapshot at or above it, and a share partition deleted before it needs
// no tombstone once its older records are gone. (Kafka gets there with
// "cold" snapshots of idle share partitions and the lowest offset of the
// latest snapshots; rewriting all of them is simpler and as safe.)

// prunableLog is a partition log whose old records can be deleted.
type prunableLog interface {
	// Offsets are the log start and end offsets.
	Offsets() (start, end int64)
	// DeleteBefore makes offset the log start offset; it fails for an
	// offset above the high watermark.
	DeleteBefore(offset int64) error
}

// replicaPruner prunes a partition on the replica layer.
type replicaPruner struct{ p *replica.Partition }

func (r replicaPruner) Offsets() (int64, int64) {
	o := r.p.Offsets()
	return o.LogStartOffset, o.LogEndOffset
}

func (r replicaPruner) DeleteBefore(offset int64) error {
	_, err := r.p.DeleteRecords(offset)
	return err
}

// prunerOf is log's pruner, or nil when it cannot be pruned.
func prunerOf(log coordinator.PartitionLog) prunableLog {
	switch l := log.(type) {
	case prunableLog:
		return l
	case *coordinator.ReplicaLog:
		return replicaPruner{l.P}
	}
	return nil
}

// maxSnapshotChunk bounds the bytes of the snapshots one pruning appends
// as a batch, well under the default max.message.bytes of 1 MiB.
const maxSnapshotChunk = 512 << 10

// prune rewrites partition p's share partitions as snapshots and deletes
// the records below them; see above.
func (c *Coordinator) prune(ctx context.Context, p *coordinator.Partition[*shard]) {
	pr := prunerOf(c.logOf(p.ID))
	if pr == nil {
		return
	}
	var base int64 = -1
	var keys []Key
	p.Write(ctx, func() ([]coordinator.KV, func(error)) {
		start, end := pr.Offsets()
		if end-start <= 2*int64(len(p.Shard.mu.states)) {
			return nil, nil
		}
		base = end
		for k := range p.Shard.mu.states {
			keys = append(keys, k)
		}
		return nil, nil
	})
	for len(keys) > 0 && base >= 0 {
		ok := p.Write(ctx, func() ([]coordinator.KV, func(error)) {
			var kvs []coordinator.KV
			size := 0
			for len(keys) > 0 && size < maxSnapshotChunk {
				k := keys[0]
				keys = keys[1:]
				v := p.Shard.mu.states[k]
				if v == nil {
					continue // deleted meanwhile: its tombstone is above base
				}
				n := *v
				n.SnapshotEpoch++
				n.WriteTimestamp = c.cfg.Now().UnixMilli()
				kv := snapshotRecord(k, n)
				size += len(kv.Key) + len(kv.Value)
				kvs = append(kvs, kv)
			}
			if len(kvs) == 0 {
				return nil, nil
			}
			return kvs, func(err error) {
				if err != nil {
					base = -1
					return
				}
				for _, kv := range kvs {
					_ = p.Shard.replayLocked(kv)
				}
			}
		})
		if !ok {
			return
		}
	}
	if base < 0 {
		return
	}
	// Under the write lock, so that no load of the partition races it.
	p.Write(ctx, func() ([]coordinator.KV, func(error)) {
		if err := pr.DeleteBefore(base); err != nil {
			c.cfg.Logger.Info("share state not pruned", "topic", StateTopic, "partition", p.ID, "offset", base, "err", err)
		}
		return nil, nil
	})
}
