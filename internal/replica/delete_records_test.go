package replica

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

func newTestPartition(t testing.TB, policy storage.CleanupPolicy) *Partition {
	t.Helper()
	logs, err := storage.NewLogManager(storage.ManagerConfig{Dirs: []string{t.TempDir()}, CheckpointInterval: -1,
		RetentionCheckInterval: -1, CleanerThreads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m := NewManager(Config{Logs: logs})
	p, err := m.Ensure("orders", [16]byte{1}, 0, PartitionState{Leader: 0, Replicas: []int32{0}, ISR: []int32{0}}, PartitionConfig{
		Log:                  storage.LogConfig{CleanupPolicy: policy},
		MaxMessageBytes:      1 << 20,
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  math.MaxInt64,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPartitionDeleteRecords(t *testing.T) {
	p := newTestPartition(t, 0)
	now := time.Now().UnixMilli()
	for i := 0; i < 3; i++ {
		b := record.Build(record.BuildOptions{}, []record.Record{
			{Timestamp: now, Key: []byte("k"), Value: []byte("a")},
			{Timestamp: now, Key: []byte("k"), Value: []byte("b")},
		})
		if _, err := p.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	// High watermark 6.
	if _, err := p.DeleteRecords(7); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("DeleteRecords(7) past the high watermark: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	if low, err := p.DeleteRecords(3); err != nil || low != 3 {
		t.Fatalf("DeleteRecords(3) = %d, %v; want 3", low, err)
	}
	// Going back is a no-op that still reports the current low watermark.
	if low, err := p.DeleteRecords(1); err != nil || low != 3 {
		t.Fatalf("DeleteRecords(1) = %d, %v; want 3", low, err)
	}
	if _, _, err := p.Read(2, 1<<20, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read below the low watermark: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	b, _, err := p.Read(3, 1<<20, true)
	if err != nil || len(b) == 0 {
		t.Fatalf("read at the low watermark: %d bytes, %v", len(b), err)
	}
	if low, err := p.DeleteRecords(-1); err != nil || low != 6 {
		t.Fatalf("DeleteRecords(-1) = %d, %v; want the high watermark 6", low, err)
	}
	if s := p.Offsets(); s.LogStartOffset != 6 || s.HighWatermark != 6 {
		t.Fatalf("offsets after deleting everything: %+v", s)
	}
}

func TestPartitionDeleteRecordsCompacted(t *testing.T) {
	p := newTestPartition(t, storage.CleanupCompact)
	if _, err := p.DeleteRecords(0); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("DeleteRecords on a compacted topic: %v, want POLICY_VIOLATION", err)
	}
}
