package share

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// prunableMemLog is an in-memory partition with offsets whose head can be
// deleted.
type prunableMemLog struct {
	mu    sync.Mutex
	start int64
	recs  []coordinator.KV // from start
}

func (l *prunableMemLog) Append(_ context.Context, kvs []coordinator.KV) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, kvs...)
	return nil
}

func (l *prunableMemLog) AppendTransactional(context.Context, int64, int16, []coordinator.KV) error {
	return errors.New("no transactions here")
}

func (l *prunableMemLog) Replay(fn func(coordinator.KV) error) error {
	l.mu.Lock()
	recs := append([]coordinator.KV(nil), l.recs...)
	l.mu.Unlock()
	for _, kv := range recs {
		if err := fn(kv); err != nil {
			return err
		}
	}
	return nil
}

func (l *prunableMemLog) Offsets() (int64, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start, l.start + int64(len(l.recs))
}

func (l *prunableMemLog) DeleteBefore(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = l.recs[offset-l.start:]
	l.start = offset
	return nil
}

// A partition pruned while share partitions are written, initialized and
// deleted keeps exactly their state, on reload too.
func TestPruneKeepsState(t *testing.T) {
	log := &prunableMemLog{}
	cfg := Config{NumPartitions: 1, SnapshotUpdateRecordsPerSnapshot: 500, PruneInterval: 5 * time.Millisecond,
		TopicPartitions: func(id [16]byte) (int32, bool) { return 4, id == topicA }}
	c := New(cfg)
	defer c.Close()
	c.Load(0, 1, log)
	p0, _ := c.rt.Get(0)
	<-p0.Loaded()
	wantCode(t, "initialize 0", initialize(c, "g", topicA, 0, 0, 0), nil)
	wantCode(t, "initialize 1", initialize(c, "g", topicA, 1, 0, 0), nil)
	wantCode(t, "initialize 2", initialize(c, "gone", topicA, 2, 0, 0), nil)
	for i := int64(0); i < 100; i++ {
		wantCode(t, "write", write(c, "g", int32(i%2), 0, 0, -1, Batch{i, i, 2, 1}), nil)
	}
	wantCode(t, "delete", del(c, "gone", 2), nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		start, end := log.Offsets()
		if start > 0 && end-start <= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not pruned: log offsets %d-%d", start, end)
		}
		time.Sleep(5 * time.Millisecond)
	}
	want0, want1 := batchesOf(read(c, "g", 0, 0)), batchesOf(read(c, "g", 1, 0))
	if len(want0) != 50 || len(want1) != 50 {
		t.Fatalf("state after pruning: %d and %d batches, want 50 each", len(want0), len(want1))
	}
	c.Close()

	c2 := New(cfg)
	defer c2.Close()
	c2.Load(0, 2, log)
	p, _ := c2.rt.Get(0)
	<-p.Loaded()
	if got := batchesOf(read(c2, "g", 0, 0)); !reflect.DeepEqual(got, want0) {
		t.Fatalf("partition 0 after reloading the pruned log: %v", got)
	}
	if got := batchesOf(read(c2, "g", 1, 0)); !reflect.DeepEqual(got, want1) {
		t.Fatalf("partition 1 after reloading the pruned log: %v", got)
	}
	wantCode(t, "deleted stays deleted", read(c2, "gone", 2, 0).ErrorCode, kerr.InvalidRequest)
}
