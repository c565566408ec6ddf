// Package profile holds Go benchmarks that reproduce, in one process, the
// cases where bench/kafka/run.sh found Samsa slower than Apache Kafka
// (small records: 100-byte values, one partition) or short of its target
// (BenchmarkProduce6P: franz-go acks=all on 6 partitions, 1 KiB and
// 100 B; BenchmarkProduceRequest: one prebuilt 6-partition Produce
// request at a time, the broker's cost per request), so that the
// broker's share of the CPU can be profiled:
//
//	go test -run '^$' -bench Consume100B -benchtime 3s -cpuprofile cpu.out ./bench/kafka/profile
//	go tool pprof -top -cum -focus samsa/internal cpu.out
//
// The server is internal/servertest's (a real single-node Samsa on
// loopback with a temporary data directory) and the client is franz-go, so
// the client's own cost shows up too, under github.com/twmb/franz-go, as it
// competes for the same CPUs in the side-by-side run.
package profile
