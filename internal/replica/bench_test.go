package replica

import (
	"math"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/storage"
)

// BenchmarkPartitionAppend is the leader's produce path below the broker:
// validate one client batch, check it against the partition, assign its
// offsets and epoch and append it to the log.
func BenchmarkPartitionAppend(b *testing.B) {
	for _, bc := range []struct {
		name    string
		records int
		size    int
	}{{"1x1KiB", 1, 1024}, {"10x100B", 10, 100}} {
		b.Run(bc.name, func(b *testing.B) {
			p := newTestPartition(b, 0)
			recs := make([]record.Record, bc.records)
			for i := range recs {
				recs[i] = record.Record{Timestamp: p.now().UnixMilli(), Value: make([]byte, bc.size)}
			}
			batch := record.Build(record.BuildOptions{}, recs)
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// The append assigned the previous offset in place; a
				// client batch starts at 0.
				record.SetBaseOffset(batch, 0)
				if _, err := p.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFollowerFsync is a follower applying one fetch answer with a
// batch of 10 records of 100 B for each of 6 partitions under
// flush.messages=1: "serial" fsyncs each partition as it appends it
// (AppendAsFollower), "parallel" appends all and then fsyncs them
// together, as the replica fetcher does.
func BenchmarkFollowerFsync(b *testing.B) {
	const partitions = 6
	for _, mode := range []string{"serial", "parallel"} {
		b.Run(mode, func(b *testing.B) {
			logs, err := storage.NewLogManager(storage.ManagerConfig{Dirs: []string{b.TempDir()}, CheckpointInterval: -1,
				RetentionCheckInterval: -1, CleanerThreads: -1})
			if err != nil {
				b.Fatal(err)
			}
			if err := logs.Load(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { logs.Close() })
			m := NewManager(Config{NodeID: 2, Logs: logs, HighWatermarkCheckpointInterval: -1})
			b.Cleanup(func() { m.Close() })
			ps := make([]*Partition, partitions)
			for i := range ps {
				ps[i], err = m.Ensure("orders", [16]byte{1}, int32(i),
					PartitionState{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
					PartitionConfig{Log: storage.LogConfig{FlushMessages: 1}, MaxMessageBytes: 1 << 20,
						TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: math.MaxInt64})
				if err != nil {
					b.Fatal(err)
				}
			}
			recs := make([]record.Record, 10)
			for i := range recs {
				recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Value: make([]byte, 100)}
			}
			b.SetBytes(partitions * 10 * 100)
			syncs := make([]pendingSync, partitions)
			for b.Loop() {
				for i, p := range ps {
					leo, _ := p.FetchPosition()
					batch := record.Build(record.BuildOptions{BaseOffset: leo, PartitionLeaderEpoch: 1}, recs)
					if mode == "serial" {
						if err := p.AppendAsFollower(batch, 0, 0); err != nil {
							b.Fatal(err)
						}
						continue
					}
					upTo, err := p.AppendAsFollowerUnsynced(batch, 0, 0)
					if err != nil {
						b.Fatal(err)
					}
					syncs[i] = pendingSync{s: sentPartition{log: p}, upTo: upTo}
				}
				if mode == "parallel" {
					syncAppended(syncs, func(_ pendingSync, err error) { b.Fatal(err) })
				}
			}
		})
	}
}
