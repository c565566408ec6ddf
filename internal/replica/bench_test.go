package replica

import (
	"testing"

	"github.com/samsa-io/samsa/internal/record"
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
