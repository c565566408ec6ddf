package broker

import (
	"sync"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
)

// coordinatorLoader tracks which partitions of an internal topic
// (__consumer_offsets, __transaction_state) this node has handed to their
// coordinator, and at which leader epoch. Only the metadata publisher uses
// it, from the apply path, so the lock just documents that ownership.
type coordinatorLoader struct {
	mu     sync.Mutex
	loaded map[int32]int32 // partition → leader epoch it was loaded at
}

// reconcile loads the partitions of topic that node leads and unloads the
// rest. A partition whose leader epoch changed is loaded again: the
// coordinator's view (and the transaction coordinator's epoch in markers)
// must follow the current leadership.
func (l *coordinatorLoader) reconcile(img *metadata.Image, topic string, node int32, replicas *replica.Manager,
	load func(partition, epoch int32, p *replica.Partition), unload func(partition int32)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded == nil {
		l.loaded = make(map[int32]int32)
	}
	lead := make(map[int32]int32)
	if t, ok := img.Topic(topic); ok {
		for _, p := range t.Partitions {
			if p.Leader == node {
				lead[p.Partition] = p.LeaderEpoch
			}
		}
	}
	for p, epoch := range lead {
		if e, ok := l.loaded[p]; ok && e == epoch {
			continue
		}
		part, ok := replicas.Partition(topic, p)
		if !ok {
			continue // its log failed to open; logged by Publish
		}
		l.loaded[p] = epoch
		load(p, epoch, part)
	}
	for p := range l.loaded {
		if _, ok := lead[p]; !ok {
			delete(l.loaded, p)
			unload(p)
		}
	}
}
