package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/servertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceKeysConsumeBack(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "events", "--partitions", "3", "--bootstrap", b)
	r := mustRun(t, "k1:v1\nk2:v:2\nno-key\n:empty-key\n", "produce", "events",
		"--key-separator", ":", "--partition", "1", "--bootstrap", b)
	if r.stderr != "produced 4 records\n" {
		t.Errorf("produce stderr = %q", r.stderr)
	}
	r = mustRun(t, "", "consume", "events", "--exit-at-end", "--bootstrap", b)
	want := "1\t0\tk1\tv1\n1\t1\tk2\tv:2\n1\t2\t\tno-key\n1\t3\t\tempty-key\n"
	if r.stdout != want {
		t.Errorf("consume stdout = %q, want %q", r.stdout, want)
	}
	if r.stderr != "consumed 4 records\n" {
		t.Errorf("consume stderr = %q", r.stderr)
	}
	// A null key and an empty key both print as empty by default; %k in a
	// template shows the difference is kept on the wire via the key length.
	r = mustRun(t, "", "consume", "events", "--exit-at-end", "--bootstrap", b,
		"--format", `%o [%k] %v\n`, "--from", "2")
	if want := "2 [] no-key\n3 [] empty-key\n"; r.stdout != want {
		t.Errorf("consume --from 2 = %q, want %q", r.stdout, want)
	}
}

// TestProduceKeyPartitioning checks that keyed records land where Kafka's
// own producer would put them: murmur2(key) mod partitions.
func TestProduceKeyPartitioning(t *testing.T) {
	b := startTestCluster(t)
	const parts = 4
	mustRun(t, "", "topic", "create", "keyed", "--partitions", fmt.Sprint(parts), "--bootstrap", b)
	keys := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
	var in strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&in, "%s=%s-value\n", k, k)
	}
	r := mustRun(t, in.String(), "produce", "keyed", "--key-separator", "=", "--bootstrap", b)
	if r.stderr != fmt.Sprintf("produced %d records\n", len(keys)) {
		t.Errorf("produce stderr = %q", r.stderr)
	}
	r = mustRun(t, "", "consume", "keyed", "--exit-at-end", "--format", `%k %p %v\n`, "--bootstrap", b)
	var want []string
	for _, k := range keys {
		p := (murmur2([]byte(k)) & 0x7fffffff) % parts
		want = append(want, fmt.Sprintf("%s %d %s-value", k, p, k))
	}
	got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("records = %q\nwant     %q", got, want)
	}
}

func TestProduceOptions(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "opts", "--partitions", "1", "--bootstrap", b)
	var want strings.Builder
	off := 0
	for _, acks := range []string{"all", "1", "0"} {
		for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			line := strings.Repeat(codec+"/"+acks+" ", 20)
			r := mustRun(t, line+"\n", "produce", "opts", "--acks", acks, "--compression", codec,
				"--header", "codec="+codec, "--header", "acks="+acks, "--bootstrap", b)
			if r.stderr != "produced 1 records\n" {
				t.Errorf("acks=%s %s: stderr %q", acks, codec, r.stderr)
			}
			fmt.Fprintf(&want, "opts|0|%d|%s|codec=%s,acks=%s\n", off, line, codec, acks)
			off++
			// acks=0 returns before the broker has appended, and the
			// next command's connection may then be served first: wait
			// for the record so that the order is the commands' order.
			if acks == "0" {
				waitForEndOffset(t, b, "opts", 0, int64(off))
			}
		}
	}
	r := mustRun(t, "", "consume", "opts", "--exit-at-end", "--format", `%t|%p|%o|%v|%h\n`, "--bootstrap", b)
	if r.stdout != want.String() {
		t.Errorf("consumed:\n%s\nwant:\n%s", r.stdout, want.String())
	}
}

func TestProduceTimestamps(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "ts", "--partitions", "1", "--bootstrap", b)
	before := time.Now().UnixMilli()
	mustRun(t, "x\n", "produce", "ts", "--bootstrap", b)
	after := time.Now().UnixMilli()
	r := mustRun(t, "", "consume", "ts", "--num", "1", "--format", `%T`, "--bootstrap", b)
	var ts int64
	if _, err := fmt.Sscan(r.stdout, &ts); err != nil || ts < before || ts > after {
		t.Errorf("timestamp %q not within [%d, %d]", r.stdout, before, after)
	}
}

func TestProduceErrors(t *testing.T) {
	b := servertest.Addr(servertest.Start(t, "auto.create.topics.enable=false"))
	mustRun(t, "", "topic", "create", "three", "--partitions", "3", "--bootstrap", b)
	r := samsa(t, "a\n", "produce", "three", "--partition", "3", "--bootstrap", b)
	if want := "samsa: topic \"three\" has 3 partitions: --partition 3 does not exist\n"; r.code != 1 || r.stderr != want {
		t.Errorf("bad partition: exit %d stderr %q, want %q", r.code, r.stderr, want)
	}
	// With auto-creation off, the broker's
	// UNKNOWN_TOPIC_OR_PARTITION must surface as a named error.
	r = samsa(t, "a\nb\n", "produce", "missing", "--bootstrap", b, "--timeout", "5s")
	if r.code != 1 || !strings.HasSuffix(r.stderr, "samsa: 2 records failed: topic \"missing\" does not exist\n") {
		t.Errorf("missing topic: exit %d stderr %q", r.code, r.stderr)
	}
	r = samsa(t, strings.Repeat("x", 100)+"\n", "produce", "three", "--max-line-bytes", "10", "--bootstrap", b)
	if r.code != 1 || !strings.Contains(r.stderr, "samsa: reading stdin: a line is longer than --max-line-bytes=10\n") {
		t.Errorf("long line: exit %d stderr %q", r.code, r.stderr)
	}
}

// murmur2 is Kafka's Utils.murmur2, which its default partitioner applies
// to record keys.
func murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> 24
		k *= m
		h = h*m ^ k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

func TestMurmur2MatchesKafka(t *testing.T) {
	// Vectors from Kafka's UtilsTest.testMurmur2.
	for s, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"abc":                        479470107,
	} {
		if got := murmur2([]byte(s)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", s, got, want)
		}
	}
}

// waitForEndOffset waits (up to 10 s) until partition p of topic ends at
// end.
func waitForEndOffset(t *testing.T, bootstrap, topic string, p int32, end int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ends, err := adm.ListEndOffsets(ctx, topic)
		cancel()
		if err == nil {
			if o, ok := ends.Lookup(topic, p); ok && o.Offset >= end {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s-%d never reached end offset %d (last error %v)", topic, p, end, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
