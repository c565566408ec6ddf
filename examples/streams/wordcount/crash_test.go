package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// The crash tests run two wordcount processes while one of them is
// SIGKILLed and restarted several times, and read the output as a user
// would. SAMSA_STREAMS_CRASH_LINES (default 20000) and
// SAMSA_STREAMS_CRASH_KILLS (default 3) size the run; docs/streams.md gives
// the long form.

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestExactlyOnceUnderCrashes: with --exactly-once, a read_committed reader
// sees every word's counts exactly once and in order (1, 2, 3, ...: never
// a repeat, a gap or a step back), and the final counts are the true ones.
func TestExactlyOnceUnderCrashes(t *testing.T) {
	r := newCrashRun(t, true)
	r.run()
	for w, n := range r.want {
		if r.got[w] != n {
			t.Errorf("word %q: final count %d, want %d", w, r.got[w], n)
		}
	}
	t.Logf("exactly_once_v2: %d lines, %d kills, %d words; %d count updates read, %d expected",
		r.lines, r.kills, len(r.want), r.updates, r.total)
	if r.updates != r.total {
		t.Errorf("read %d count updates, want exactly %d (one per word occurrence)", r.updates, r.total)
	}
}

// TestAtLeastOnceUnderCrashes is the same run without --exactly-once:
// nothing is lost (every final count reaches the true count), but records
// processed again after a crash are counted again, so counts may exceed
// the true ones. The log line says by how much.
func TestAtLeastOnceUnderCrashes(t *testing.T) {
	r := newCrashRun(t, false)
	r.run()
	over, excess := 0, int64(0)
	for w, n := range r.want {
		if r.got[w] < n {
			t.Errorf("word %q: final count %d below the true count %d: a record was lost", w, r.got[w], n)
		}
		if d := r.got[w] - n; d > 0 {
			over++
			excess += d
		}
	}
	t.Logf("at_least_once: %d lines, %d kills, %d words: %d counted too high (by %d in all); %d count updates read for %d word occurrences",
		r.lines, r.kills, len(r.want), over, excess, r.updates, r.total)
}

type crashRun struct {
	t            *testing.T
	eos          bool
	bin, addr    string
	lines, kills int
	cl           *kgo.Client
	rd           *kgo.Client
	want, got    map[string]int64
	total        int64           // word occurrences produced
	updates      int64           // count records read
	next         map[int32]int64 // the reader's position per output partition
	procs        [2]*proc
	runs         int
	stopped      bool // the instances were stopped on purpose
}

type proc struct {
	cmd    *exec.Cmd
	log    string
	exited chan error
}

func newCrashRun(t *testing.T, eos bool) *crashRun {
	if testing.Short() {
		t.Skip("crash test: several processes for a minute or more")
	}
	r := &crashRun{t: t, eos: eos, want: map[string]int64{}, got: map[string]int64{}, next: map[int32]int64{},
		lines: envInt(t, "SAMSA_STREAMS_CRASH_LINES", 20000), kills: envInt(t, "SAMSA_STREAMS_CRASH_KILLS", 3)}
	r.bin = filepath.Join(t.TempDir(), "wordcount")
	if out, err := exec.Command("go", "build", "-o", r.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A crashed instance's open transaction is aborted at its timeout
	// (10 s); the broker looks for such transactions every second here
	// instead of every 10.
	r.addr = servertest.Addr(servertest.Start(t, "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000"))
	var err error
	if r.cl, err = kgo.NewClient(kgo.SeedBrokers(r.addr)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{"in", "out"} {
		if _, err := kadm.NewClient(r.cl).CreateTopic(ctx, 4, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	// Control records too, so that the reader's position reaches the end
	// offsets when it has read everything.
	opts := []kgo.Opt{kgo.SeedBrokers(r.addr), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords()}
	if eos {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if r.rd, err = kgo.NewClient(opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.rd.Close)
	t.Cleanup(func() {
		for _, p := range r.procs {
			if p != nil && p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
				<-p.exited
			}
		}
	})
	return r
}

func (r *crashRun) start(i int) {
	r.t.Helper()
	args := []string{"--bootstrap", r.addr, "--input", "in", "--output", "out", "--application-id", "wc-crash",
		"--session-timeout", "6s", "--commit-interval", "1s"}
	if r.eos {
		args = append(args, "--exactly-once")
	}
	r.runs++
	log := filepath.Join(r.t.TempDir(), fmt.Sprintf("instance-%d-run-%d.log", i, r.runs))
	f, err := os.Create(log)
	if err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	p := &proc{cmd: cmd, log: log, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait(); f.Close() }()
	r.procs[i] = p
}

// logs is the tail of every instance's stderr, for a failure message.
func (r *crashRun) logs() string {
	var b strings.Builder
	for _, p := range r.procs {
		if p == nil {
			continue
		}
		data, _ := os.ReadFile(p.log)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(p.log), data)
	}
	return b.String()
}

// produce writes n lines of a fixed pseudo-random text over a vocabulary of
// 100 words and adds their words to want.
func (r *crashRun) produce(rng *rand.Rand, n int) {
	r.t.Helper()
	rs := make([]*kgo.Record, 0, n)
	for range n {
		ws := make([]string, 1+rng.IntN(8))
		for j := range ws {
			ws[j] = fmt.Sprintf("w%02d", rng.IntN(100))
			r.want[ws[j]]++
			r.total++
		}
		rs = append(rs, &kgo.Record{Topic: "in", Value: []byte(strings.Join(ws, " "))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		r.t.Fatal(err)
	}
}

// read polls the output once and checks what it gets.
func (r *crashRun) read() {
	r.t.Helper()
	for i, p := range r.procs {
		select {
		case err := <-p.exited:
			if !r.stopped {
				r.t.Fatalf("instance %d exited by itself: %v\n%s", i, err, r.logs())
			}
		default:
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	fs := r.rd.PollFetches(ctx)
	cancel()
	fs.EachRecord(func(rec *kgo.Record) {
		r.next[rec.Partition] = rec.Offset + 1
		if rec.Attrs.IsControl() {
			return
		}
		n, err := strconv.ParseInt(string(rec.Value), 10, 64)
		if err != nil {
			r.t.Fatalf("output %q=%q: not a decimal count", rec.Key, rec.Value)
		}
		w := string(rec.Key)
		if prev := r.got[w]; r.eos && n != prev+1 {
			r.t.Fatalf("word %q: count %d after %d (out-%d@%d): not exactly once\n%s", w, n, prev, rec.Partition, rec.Offset, r.logs())
		}
		r.got[w] = n
		r.updates++
	})
}

// waitFor reads until cond holds, failing after limit.
func (r *crashRun) waitFor(what string, limit time.Duration, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("waiting for %s: %d updates read of %d\n%s", what, r.updates, r.total, r.logs())
		}
		r.read()
	}
}

func (r *crashRun) run() {
	rng := rand.New(rand.NewPCG(19, 2026))
	r.start(0)
	r.start(1)
	chunk := r.lines / (r.kills + 1)
	for k := range r.kills {
		before := r.total
		r.produce(rng, chunk)
		// Kill instance 1 in the middle of the chunk's work, with
		// transactions open or offsets uncommitted: once half of the
		// chunk's updates are out (and some since the last restart).
		target := max(r.updates+200, before+(r.total-before)/2)
		r.waitFor("progress before a kill", 3*time.Minute, func() bool { return r.updates > target })
		if err := r.procs[1].cmd.Process.Kill(); err != nil {
			r.t.Fatal(err)
		}
		<-r.procs[1].exited
		r.t.Logf("kill %d: SIGKILL after %d updates read", k+1, r.updates)
		r.start(1)
	}
	r.produce(rng, r.lines-chunk*r.kills)
	r.waitFor("the final counts", 5*time.Minute, func() bool {
		for w, n := range r.want {
			if r.got[w] < n {
				return false
			}
		}
		return true
	})

	// Both stop cleanly; then nothing more may follow in the output.
	for i, p := range r.procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			r.t.Fatal(err)
		}
		select {
		case err := <-p.exited:
			if err != nil {
				r.t.Fatalf("instance %d: exit after SIGTERM: %v\n%s", i, err, r.logs())
			}
		case <-time.After(90 * time.Second):
			r.t.Fatalf("instance %d: no exit 90s after SIGTERM\n%s", i, r.logs())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(r.cl).ListCommittedOffsets(ctx, "out")
	if err != nil {
		r.t.Fatal(err)
	}
	r.stopped = true
	r.waitFor("the rest of the output", time.Minute, func() bool {
		caught := true
		ends.Each(func(o kadm.ListedOffset) {
			if r.next[o.Partition] < o.Offset {
				caught = false
			}
		})
		return caught
	})
}
