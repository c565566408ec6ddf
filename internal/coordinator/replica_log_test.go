package coordinator

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
)

// TestReplayReadsPastHighWatermark: a coordinator partition's new leader
// has a high watermark below its log end until its followers fetch again,
// yet the records above it may be acknowledged writes of the previous
// leader. The coordinator loads them all.
func TestReplayReadsPastHighWatermark(t *testing.T) {
	logs, err := storage.NewLogManager(storage.ManagerConfig{Dirs: []string{t.TempDir()}, CheckpointInterval: -1,
		RetentionCheckInterval: -1, CleanerThreads: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m := replica.NewManager(replica.Config{NodeID: 1, Logs: logs, HighWatermarkCheckpointInterval: -1})
	defer m.Close()
	// Leader with a follower in the ISR that has not fetched: appends stay
	// above the high watermark.
	st := replica.PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	p, err := m.Ensure("__consumer_offsets", [16]byte{9}, 0, st, replica.PartitionConfig{
		MaxMessageBytes: 1 << 20, TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: math.MaxInt64})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for i := range 3 {
		kvs := []KV{{Key: []byte{byte(i), 0}, Value: []byte("v")}, {Key: []byte{byte(i), 1}, Value: []byte("v")}}
		if _, err := p.Append(buildBatch(time.Now(), nil, kvs)); err != nil {
			t.Fatal(err)
		}
		want = append(want, kvs[0].Key, kvs[1].Key)
	}
	if s := p.Offsets(); s.HighWatermark != 0 || s.LogEndOffset != 6 {
		t.Fatalf("offsets %+v, want high watermark 0 and log end 6", s)
	}
	var keys [][]byte
	err = (&ReplicaLog{P: p}).Replay(func(kv KV) error {
		keys = append(keys, kv.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(keys, want, bytes.Equal) {
		t.Fatalf("replayed keys %v, want %v", keys, want)
	}
}
