package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kcat is librdkafka's command-line client: metadata, produce with keys
// and headers, consume with a format string, and offset lookup by time,
// exactly as an operator types them.

// kcatPath finds kcat, or skips the test unless SAMSA_REQUIRE_KCAT=1 (CI
// sets it and installs kcat, so a missing binary fails there).
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("SAMSA_REQUIRE_KCAT") == "1" {
			t.Fatalf("kcat not on PATH and SAMSA_REQUIRE_KCAT=1: %v", err)
		}
		t.Skip("kcat not on PATH (apt-get install kcat); set SAMSA_REQUIRE_KCAT=1 to make this a failure")
	}
	return p
}

// runKcat runs kcat with args and stdin, bounded by a timeout, and returns
// its stdout. A non-zero exit fails the test with stderr.
func runKcat(t *testing.T, ctx context.Context, bin, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (ctx %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), stdout.String(), stderr.String())
	}
	return stdout.String()
}

// kcatMetadata is the part of `kcat -L -J` output the test checks.
type kcatMetadata struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string          `json:"topic"`
		Error      string          `json:"error"`
		Partitions []kcatPartition `json:"partitions"`
	} `json:"topics"`
}

type kcatPartition struct {
	Partition int32    `json:"partition"`
	Leader    int32    `json:"leader"`
	Replicas  []kcatID `json:"replicas"`
	ISRs      []kcatID `json:"isrs"`
}

type kcatID struct {
	ID int32 `json:"id"`
}

func TestKcat(t *testing.T) {
	bin := kcatPath(t)
	ctx := testContext(t)
	addr := startBroker(t)
	const topic = "kcat-events"
	franzCreate(t, ctx, newKadm(t, addr), topic, 3, nil)
	// Quiet librdkafka and keep its retries short so a failure shows fast.
	common := []string{"-b", addr, "-X", "socket.timeout.ms=10000", "-X", "log_level=3"}
	kcat := func(t *testing.T, stdin string, args ...string) string {
		t.Helper()
		return runKcat(t, ctx, bin, stdin, append(slices.Clone(common), args...)...)
	}

	t.Run("metadata", func(t *testing.T) {
		var md kcatMetadata
		out := kcat(t, "", "-L", "-J", "-t", topic)
		if err := json.Unmarshal([]byte(out), &md); err != nil {
			t.Fatalf("kcat -L -J: %v\n%s", err, out)
		}
		if len(md.Brokers) != 1 || md.Brokers[0].Name != addr {
			t.Fatalf("brokers %+v, want one at %s", md.Brokers, addr)
		}
		id := md.Brokers[0].ID
		if len(md.Topics) != 1 || md.Topics[0].Topic != topic || md.Topics[0].Error != "" {
			t.Fatalf("topics %+v", md.Topics)
		}
		ps := md.Topics[0].Partitions
		if len(ps) != 3 {
			t.Fatalf("%d partitions, want 3", len(ps))
		}
		slices.SortFunc(ps, func(a, b kcatPartition) int { return int(a.Partition - b.Partition) })
		for i, p := range ps {
			if p.Partition != int32(i) || p.Leader != id || len(p.Replicas) != 1 || p.Replicas[0].ID != id || len(p.ISRs) != 1 || p.ISRs[0].ID != id {
				t.Fatalf("partition %d: %+v, want leader/replica/isr %d", i, p, id)
			}
		}
	})

	// Two produces to partition 0 with a pause between, so their records
	// carry different CreateTime timestamps for the offset lookup below;
	// one to partition 2 with other headers.
	kcat(t, "k1:v1\nk2:v2\n", "-P", "-t", topic, "-p", "0", "-K:", "-H", "src=kcat", "-H", "n=1")
	time.Sleep(20 * time.Millisecond)
	kcat(t, "k3:v3\n", "-P", "-t", topic, "-p", "0", "-K:", "-H", "src=kcat", "-H", "n=2")
	kcat(t, "a:x\nb:y\nc:z\n", "-P", "-t", topic, "-p", "2", "-K:", "-H", "src=other")

	t.Run("consume", func(t *testing.T) {
		out := kcat(t, "", "-C", "-t", topic, "-e", "-o", "beginning", "-f", `%k|%s|%p|%o|%h\n`)
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		// Partitions are drained in no fixed order; within one, offsets
		// must come in order, so sort stably by partition only.
		slices.SortStableFunc(got, func(a, b string) int {
			return strings.Compare(strings.Split(a, "|")[2], strings.Split(b, "|")[2])
		})
		want := []string{
			"k1|v1|0|0|src=kcat,n=1",
			"k2|v2|0|1|src=kcat,n=1",
			"k3|v3|0|2|src=kcat,n=2",
			"a|x|2|0|src=other",
			"b|y|2|1|src=other",
			"c|z|2|2|src=other",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("kcat -C printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("offsets for times", func(t *testing.T) {
		// Learn the records' timestamps the way a user would: %T.
		out := kcat(t, "", "-C", "-t", topic, "-p", "0", "-e", "-o", "beginning", "-f", `%o %T\n`)
		ts := map[int64]int64{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var off, ms int64
			if _, err := fmt.Sscanf(line, "%d %d", &off, &ms); err != nil {
				t.Fatalf("kcat %%o %%T line %q: %v", line, err)
			}
			ts[off] = ms
		}
		if len(ts) != 3 || ts[2] <= ts[1] {
			t.Fatalf("timestamps %v: want 3 records, the last produced later", ts)
		}
		for _, tc := range []struct {
			ts, want int64
		}{
			{ts[0] - 60_000, 0}, // before everything: the first record
			{ts[0], 0},
			{ts[1] + 1, 2}, // between the two produces: the first of the second
			{ts[2], 2},
			{ts[2] + 60_000, -1}, // after everything: no such record
		} {
			out := kcat(t, "", "-Q", "-t", fmt.Sprintf("%s:0:%d", topic, tc.ts))
			// "kcat-events [0] offset 2"
			f := strings.Fields(strings.TrimSpace(out))
			if len(f) != 4 || f[0] != topic || f[1] != "[0]" || f[2] != "offset" {
				t.Fatalf("kcat -Q %d printed %q", tc.ts, out)
			}
			got, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil || got != tc.want {
				t.Errorf("kcat -Q at %d: offset %s, want %d", tc.ts, f[3], tc.want)
			}
		}
	})
}
