package record

import "testing"

// BenchmarkValidate measures produce-path validation of a 100-record batch
// with 1 KiB random (incompressible) values, per codec.
func BenchmarkValidate(b *testing.B) {
	recs := randomRecords(100, 1024, 42)
	for _, c := range allCodecs {
		batch := Build(BuildOptions{Codec: c}, recs)
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Validate(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateSmall is BenchmarkValidate for 1,000 records of 100 B,
// uncompressed, where walking the records costs more than the CRC.
func BenchmarkValidateSmall(b *testing.B) {
	batch := Build(BuildOptions{}, randomRecords(1000, 100, 42))
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(batch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecords(b *testing.B) {
	batch := Build(BuildOptions{}, randomRecords(100, 1024, 42))
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Records(batch); err != nil {
			b.Fatal(err)
		}
	}
}
