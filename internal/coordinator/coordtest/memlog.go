// Package coordtest holds what the coordinators' tests share: an in-memory
// partition of a coordinator's internal topic.
package coordtest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// MemLog is a coordinator.PartitionLog in memory. Appends copy their
// records; transactional appends fence older producer epochs as a real
// partition does.
type MemLog struct {
	// Block, when not nil, makes Replay wait until it is closed (a load
	// in progress).
	Block chan struct{}

	mu      sync.Mutex
	recs    []coordinator.KV
	failErr error           // returned, once, by the next Append
	epochs  map[int64]int16 // producer epochs seen by AppendTransactional
}

// FailNext makes the next Append fail with err and write nothing.
func (l *MemLog) FailNext(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failErr = err
}

// Append implements coordinator.PartitionLog.
func (l *MemLog) Append(ctx context.Context, kvs []coordinator.KV) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.failErr; err != nil {
		l.failErr = nil
		return err
	}
	for _, kv := range kvs {
		l.recs = append(l.recs, coordinator.KV{Key: slices.Clone(kv.Key), Value: slices.Clone(kv.Value)})
	}
	return nil
}

// AppendTransactional appends kvs marked with the producer, as Replay
// reports a transactional batch; a fenced producer (older epoch) fails
// with coordinator.ErrProducerFenced.
func (l *MemLog) AppendTransactional(ctx context.Context, producerID int64, epoch int16, kvs []coordinator.KV) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epochs == nil {
		l.epochs = map[int64]int16{}
	}
	if cur, ok := l.epochs[producerID]; ok && epoch < cur {
		return fmt.Errorf("epoch %d < %d: %w", epoch, cur, coordinator.ErrProducerFenced)
	}
	l.epochs[producerID] = epoch
	for _, kv := range kvs {
		l.recs = append(l.recs, coordinator.KV{Key: slices.Clone(kv.Key), Value: slices.Clone(kv.Value), Transactional: true, ProducerID: producerID})
	}
	return nil
}

// Marker appends a transaction marker, as the broker's marker write does.
func (l *MemLog) Marker(producerID int64, commit bool) {
	l.Add(coordinator.KV{Control: true, Commit: commit, ProducerID: producerID})
}

// Add appends records as they are, bypassing the coordinator.
func (l *MemLog) Add(kvs ...coordinator.KV) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, kvs...)
}

// Replay implements coordinator.PartitionLog.
func (l *MemLog) Replay(fn func(coordinator.KV) error) error {
	if l.Block != nil {
		<-l.Block
	}
	for _, kv := range l.Records() {
		if err := fn(kv); err != nil {
			return err
		}
	}
	return nil
}

// Records returns a copy of the log.
func (l *MemLog) Records() []coordinator.KV {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs)
}
