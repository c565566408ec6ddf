package replica

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

func newTestManager(t *testing.T) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	logs, err := storage.NewLogManager(storage.ManagerConfig{Dirs: []string{dir}, CheckpointInterval: -1,
		RetentionCheckInterval: -1, CleanerThreads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Load(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m := NewManager(Config{NodeID: 1, Logs: logs, HighWatermarkCheckpointInterval: -1})
	t.Cleanup(func() { m.Close() })
	return m, dir
}

var ensureTestConfig = PartitionConfig{MaxMessageBytes: 1 << 20, TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: math.MaxInt64}

// TestEnsureAll: a batch opens every partition in the state asked, says
// which were led in that epoch already, and the partitions take appends.
func TestEnsureAll(t *testing.T) {
	m, _ := newTestManager(t)
	var reqs []EnsureRequest
	for i := range 100 {
		leader := int32(1)
		if i%2 == 1 {
			leader = 2
		}
		reqs = append(reqs, EnsureRequest{Topic: fmt.Sprintf("t%d", i/10), TopicID: [16]byte{byte(i / 10), 1}, Partition: int32(i % 10),
			State: PartitionState{Leader: leader, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, Config: ensureTestConfig})
	}
	for round, wantLed := range []bool{false, true} {
		for i, res := range m.EnsureAll(reqs) {
			if res.Err != nil {
				t.Fatalf("round %d, %s-%d: %v", round, reqs[i].Topic, reqs[i].Partition, res.Err)
			}
			if want := wantLed && i%2 == 0; res.LedBefore != want {
				t.Fatalf("round %d, %s-%d: LedBefore %v, want %v", round, reqs[i].Topic, reqs[i].Partition, res.LedBefore, want)
			}
			if lead := res.Partition.IsLeader(); lead != (i%2 == 0) {
				t.Fatalf("round %d, %s-%d: leader %v", round, reqs[i].Topic, reqs[i].Partition, lead)
			}
		}
	}
	p, ok := m.Partition("t9", 8)
	if !ok {
		t.Fatal("t9-8 not hosted")
	}
	res, err := p.Append(record.Build(record.BuildOptions{}, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("v")}}))
	if err != nil || res.BaseOffset != 0 {
		t.Fatalf("append to t9-8: %+v, %v", res, err)
	}
}

// TestSyncMetaFiles: new leaders' metadata files wait for their first
// append; SyncMetaFiles writes them for many partitions at once, and the
// leader epoch checkpoint on disk then names the leader's epoch.
func TestSyncMetaFiles(t *testing.T) {
	m, dir := newTestManager(t)
	var reqs []EnsureRequest
	for i := range 20 {
		reqs = append(reqs, EnsureRequest{Topic: "t", TopicID: [16]byte{7}, Partition: int32(i),
			State: PartitionState{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1}, ISR: []int32{1}}, Config: ensureTestConfig})
	}
	for _, res := range m.EnsureAll(reqs) {
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if !res.Partition.Log().NeedsMetaSync() {
			t.Fatalf("%s-%d: a new leader's files are synced before any append", res.Partition.Topic, res.Partition.Index)
		}
	}
	m.SyncMetaFiles(func(yield func(string, int32)) {
		for i := range 20 {
			yield("t", int32(i))
		}
		yield("unknown", 0)
	})
	for i := range 20 {
		p, _ := m.Partition("t", int32(i))
		if p.Log().NeedsMetaSync() {
			t.Fatalf("t-%d still needs a metadata sync", i)
		}
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("t-%d", i), "leader-epoch-checkpoint"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "0\n1\n4 0\n"; string(b) != want {
			t.Fatalf("t-%d leader-epoch-checkpoint %q, want %q", i, b, want)
		}
	}
}
