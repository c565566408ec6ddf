package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/servertest"
)

// TestBenchCountsEveryRecord runs a small benchmark against an in-process
// server and checks that the report adds up: every produced record is
// acknowledged, consumed back, and counted at its full size.
func TestBenchCountsEveryRecord(t *testing.T) {
	b := startTestCluster(t)
	r := mustRun(t, "", "bench", "--bootstrap", b, "--records", "300", "--size", "100",
		"--partitions", "3", "--topic", "bench-json", "--keep", "--json")
	var res benchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bench --json output: %v\n%s", err, r.stdout)
	}
	if res.Produce.Records != 300 || res.Produce.Bytes != 30000 || res.Produce.Errors != 0 {
		t.Errorf("produce = %+v, want 300 records, 30000 bytes, no errors", res.Produce)
	}
	if res.Consume == nil || res.Consume.Records != 300 || res.Consume.Bytes != 30000 {
		t.Errorf("consume = %+v, want 300 records, 30000 bytes", res.Consume)
	}
	if l := res.Produce.Latency; l == nil || l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max {
		t.Errorf("latency = %+v, want 0 < p50 <= p99 <= p99.9 <= max", l)
	}
	s := res.Settings
	if s.Partitions != 3 || s.Acks != "all" || s.Compression != "none" || s.RecordBytes != 100 {
		t.Errorf("settings = %+v", s)
	}
	// --keep left the topic with all records spread over its partitions.
	desc := mustRun(t, "", "topic", "describe", "bench-json", "--bootstrap", b)
	if !strings.Contains(desc.stdout, "bench-json") {
		t.Errorf("topic describe after --keep:\n%s", desc.stdout)
	}
	out := mustRun(t, "", "consume", "bench-json", "--exit-at-end", "--format", `%p\n`, "--bootstrap", b)
	if n := strings.Count(out.stdout, "\n"); n != 300 {
		t.Errorf("consume after bench: %d records, want 300", n)
	}
}

// TestBenchTable checks the human-readable report and that the topic is
// deleted afterwards without --keep.
func TestBenchTable(t *testing.T) {
	b := startTestCluster(t)
	r := mustRun(t, "", "bench", "--bootstrap", b, "--records", "50", "--topic", "bench-table",
		"--compression", "lz4", "--acks", "1")
	for _, re := range []string{
		`topic bench-table on \S+: 1 partitions, acks=1, compression=lz4, 1024-byte values`,
		`(?m)^ +produce +50 +0 `,
		`(?m)^ +consume +50 +0 `,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("output does not match %q:\n%s", re, r.stdout)
		}
	}
	list := mustRun(t, "", "topic", "list", "--bootstrap", b)
	if strings.Contains(list.stdout, "bench-table") {
		t.Errorf("topic not deleted after bench:\n%s", list.stdout)
	}
	// --tsv is what bench/run.sh parses: produced, errors, ..., consumed.
	r = mustRun(t, "", "bench", "--bootstrap", b, "--records", "40", "--size", "10", "--tsv")
	f := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\t")
	if len(f) != len(strings.Fields(benchTSVHeader)) || f[0] != "40" || f[1] != "0" || f[8] != "40" {
		t.Errorf("--tsv = %q, want 40 produced, 0 errors, 40 consumed in %d columns", r.stdout, len(strings.Fields(benchTSVHeader)))
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--partitions", "0"},
		{"--records", "0"},
		{"--acks", "2"},
		{"--compression", "brotli"},
		{"extra"},
	} {
		r := samsa(t, "", append([]string{"bench", "--bootstrap", "127.0.0.1:1"}, args...)...)
		if r.code != exitUsage {
			t.Errorf("bench %v: exit %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
}

// The benchmarks below run `samsa bench` against an in-process server so
// that `go test -run '^$' -bench . -cpuprofile cpu.out ./cmd/samsa` profiles
// the broker's produce and fetch paths; the client's share shows up too,
// under github.com/twmb/franz-go. SAMSA_BENCH_PARTITIONS sets the partition
// count (default 1).

func benchPartitions() string {
	if p := os.Getenv("SAMSA_BENCH_PARTITIONS"); p != "" {
		return p
	}
	return "1"
}

// BenchmarkProduce1KiB: produce 20,000 random 1 KiB records with acks=all
// to a new topic per iteration.
func BenchmarkProduce1KiB(b *testing.B) {
	addr := servertest.Addr(servertest.Start(b))
	b.SetBytes(20000 * 1024)
	for i := 0; b.Loop(); i++ {
		var out, errb strings.Builder
		code := run([]string{"bench", "--bootstrap", addr, "--records", "20000", "--no-consume",
			"--partitions", benchPartitions(), "--topic", fmt.Sprintf("bench-%d", i)}, nil, &out, &errb)
		if code != 0 {
			b.Fatalf("bench: exit %d\n%s%s", code, out.String(), errb.String())
		}
	}
}

// BenchmarkConsume1KiB: read a topic of 20,000 random 1 KiB records from
// the start with a fresh client per iteration.
func BenchmarkConsume1KiB(b *testing.B) {
	addr := servertest.Addr(servertest.Start(b))
	var out, errb strings.Builder
	if code := run([]string{"bench", "--bootstrap", addr, "--records", "20000", "--no-consume", "--keep",
		"--partitions", benchPartitions(), "--topic", "consume"}, nil, &out, &errb); code != 0 {
		b.Fatalf("bench: exit %d\n%s%s", code, out.String(), errb.String())
	}
	o := benchOpts{topic: "consume"}
	o.cf.bootstrap, o.cf.timeout = addr, 10*time.Second
	adm, err := o.cf.admin()
	if err != nil {
		b.Fatal(err)
	}
	defer adm.Close()
	b.SetBytes(20000 * 1024)
	for b.Loop() {
		ph, err := o.consume(adm, 20000)
		if err != nil {
			b.Fatal(err)
		}
		if ph.Records != 20000 {
			b.Fatalf("consumed %d records, want 20000", ph.Records)
		}
	}
}

// TestBenchTransactional: --txn-size commits every N records; everything
// produced is committed and read back.
func TestBenchTransactional(t *testing.T) {
	b := servertest.Addr(servertest.Start(t))
	r := samsa(t, "", "bench", "--bootstrap", b, "--records", "250", "--size", "100", "--txn-size", "100", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Produce.Records != 250 || res.Produce.Errors != 0 || res.Consume == nil || res.Consume.Records != 250 || res.Settings.TxnRecords != 100 {
		t.Fatalf("result %+v consume %+v", res.Produce, res.Consume)
	}
	if r := samsa(t, "", "bench", "--bootstrap", b, "--txn-size", "10", "--acks", "1"); r.code != exitUsage {
		t.Fatalf("--txn-size with acks=1: exit %d", r.code)
	}
}
