package coordinator

import (
	"sync"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
)

// Leadership follows which partitions of an internal topic this node leads
// and keeps a coordinator's loaded partitions equal to them. Only the
// metadata publisher calls it, so the lock just documents that ownership.
type Leadership struct {
	mu     sync.Mutex
	loaded map[int32]int32 // partition → leader epoch it was loaded at
}

// Reconcile loads the partitions of topic that node leads and unloads the
// rest. A partition whose leader epoch changed is loaded again: the
// coordinator's view (and the transaction coordinator's epoch in markers)
// must follow the current leadership.
func (l *Leadership) Reconcile(img *metadata.Image, topic string, node int32, replicas *replica.Manager,
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
			continue // its log failed to open; logged by the publisher
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
