package registry

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/servertest"
)

// BenchmarkRegister registers a new schema under a new subject per
// iteration through the REST API: parse, id allocation, one acks=all
// write to _schemas and its replay.
func BenchmarkRegister(b *testing.B) {
	s := servertest.Start(b)
	_, cl, _ := startRegistry(b, servertest.Addr(s), "_schemas")
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		schema := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"a","type":"string"}]}`, i)
		if _, err := cl.RegisterSchema(ctx, fmt.Sprintf("s%d-value", i), sr.Schema{Schema: schema}, -1, -1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registrations/s")
}

// BenchmarkLookupByID fetches a registered schema by id from parallel
// clients, as a deserializer with a cold cache does: served from memory.
func BenchmarkLookupByID(b *testing.B) {
	s := servertest.Start(b)
	_, cl, _ := startRegistry(b, servertest.Addr(s), "_schemas")
	ctx := context.Background()
	id, err := cl.RegisterSchema(ctx, "users-value", sr.Schema{Schema: userV2}, -1, -1)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cl.SchemaByID(ctx, id); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}
