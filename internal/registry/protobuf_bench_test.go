package registry

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/servertest"
)

// BenchmarkRegisterProtobuf is BenchmarkRegister with a Protobuf schema
// that imports a well-known type: the .proto compile replaces the Avro
// parse.
func BenchmarkRegisterProtobuf(b *testing.B) {
	s := servertest.Start(b)
	_, cl, _ := startRegistry(b, servertest.Addr(s), "_schemas")
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		schema := fmt.Sprintf("syntax = \"proto3\";\npackage bench;\nimport \"google/protobuf/timestamp.proto\";\n"+
			"message R%d {\n  string a = 1;\n  int64 b = 2;\n  google.protobuf.Timestamp at = 3;\n}\n", i)
		if _, err := cl.RegisterSchema(ctx, fmt.Sprintf("p%d-value", i), sr.Schema{Schema: schema, Type: sr.TypeProtobuf}, -1, -1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registrations/s")
}
