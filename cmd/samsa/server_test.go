package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMain lets the test binary act as the samsa binary: a test re-executes
// itself with SAMSA_RUN_MAIN=1 to get a real server process it can kill.
func TestMain(m *testing.M) {
	if os.Getenv("SAMSA_RUN_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// serverProc is a `samsa server` child process.
type serverProc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	done   chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var servingRE = regexp.MustCompile(`serving Kafka clients" listener=PLAINTEXT addr=(\S+)`)

// startServerProc starts `samsa server` on dataDir with an ephemeral port
// and waits until it serves.
func startServerProc(t *testing.T, dataDir string, extra ...string) *serverProc {
	t.Helper()
	args := []string{"server",
		"--override", "log.dirs=" + dataDir,
		"--override", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
	}
	args = append(args, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SAMSA_RUN_MAIN=1")
	pr, pw := io.Pipe()
	p := &serverProc{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	addr := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.Write([]byte(line + "\n"))
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	// done is sent once the process has exited and its last log line is
	// in p.stderr: the scanner may still hold a line Wait saw written.
	go func() {
		err := cmd.Wait()
		pw.Close()
		<-scanned
		p.done <- err
	}()
	select {
	case p.addr = <-addr:
	case err := <-p.done:
		t.Fatalf("server exited before serving: %v\n%s", err, p.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not start in 30s:\n%s", p.stderr.String())
	}
	return p
}

func (p *serverProc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// TestKill9KeepsAcknowledgedRecords produces with acks=all while the server
// is killed with SIGKILL, tears the tail of the active segment as a crash in
// the middle of a write would, restarts, and checks that every acknowledged
// record is there exactly once, in order, and that offsets continue.
func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	srv := startServerProc(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.RequestRetries(0), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "crash"); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	acked := map[int64]string{} // offset → value
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("value-%06d", i)
			cl.Produce(ctx, &kgo.Record{Topic: "crash", Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked[r.Offset] = string(r.Value)
					mu.Unlock()
				}
			})
			if i%100 == 99 {
				time.Sleep(time.Millisecond) // keep some batches small
			}
		}
	}()
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 5000 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("only %d records acknowledged before the deadline", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.kill() // SIGKILL while records are in flight
	close(stop)
	wg.Wait()
	cl.Close()

	// Tear the tail: a crash mid-write leaves a partial batch behind.
	logs, _ := filepath.Glob(filepath.Join(dir, "crash-0", "*.log"))
	if len(logs) == 0 {
		t.Fatal("no segment files for crash-0")
	}
	f, err := os.OpenFile(logs[len(logs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0, 0, 0, 0, 0, 0, 0x30, 0x39, 0, 0, 0, 200, 0, 0, 0, 0, 2, 0xde, 0xad}) // a header cut short
	f.Close()

	mu.Lock()
	ackedCount := len(acked)
	mu.Unlock()
	srv = startServerProc(t, dir)
	got := consumeFrom(t, srv.addr, "crash")
	seen := map[int64]bool{}
	for i, r := range got {
		if r.Offset != int64(i) {
			t.Fatalf("record %d has offset %d: offsets must be contiguous from 0", i, r.Offset)
		}
		seen[r.Offset] = true
		if v, ok := acked[r.Offset]; ok && v != string(r.Value) {
			t.Fatalf("offset %d holds %q, but %q was acknowledged there", r.Offset, r.Value, v)
		}
	}
	for off := range acked {
		if !seen[off] {
			t.Fatalf("acknowledged offset %d lost (%d acknowledged, %d recovered)", off, ackedCount, len(got))
		}
	}
	t.Logf("%d acknowledged records checked, %d recovered", ackedCount, len(got))

	// New records continue after the recovered ones.
	cl2, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	res := cl2.ProduceSync(ctx, &kgo.Record{Topic: "crash", Value: []byte("after")})
	r, err := res.First()
	if err != nil {
		t.Fatal(err)
	}
	if r.Offset != int64(len(got)) {
		t.Fatalf("first offset after restart %d, want %d", r.Offset, len(got))
	}
}

// consumeFrom reads a topic from the start to its end offsets.
func consumeFrom(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	for int64(len(got)) < end.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d: %v", len(got), end.Offset, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// TestServerSIGTERMShutsDownCleanly: SIGTERM ends the server with exit 0,
// and a restart serves the data.
func TestServerSIGTERMShutsDownCleanly(t *testing.T) {
	dir := t.TempDir()
	srv := startServerProc(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "clean"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clean", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-srv.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, srv.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not stop within 20s of SIGTERM")
	}
	if !strings.Contains(srv.stderr.String(), "stopped") {
		t.Fatalf("no clean-stop log line:\n%s", srv.stderr.String())
	}
	srv = startServerProc(t, dir)
	if got := consumeFrom(t, srv.addr, "clean"); len(got) != 1 || string(got[0].Value) != "x" {
		t.Fatalf("after restart: %d records", len(got))
	}
}

// TestServerConfigErrors: invalid values stop start-up naming the key;
// unknown keys only warn.
func TestServerConfigErrors(t *testing.T) {
	var out, errb strings.Builder
	code := run([]string{"server", "--override", "log.retention.ms=abc", "--override", "log.dirs=" + t.TempDir()}, nil, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "log.retention.ms") {
		t.Fatalf("exit %d, stderr %q: want a non-zero exit naming log.retention.ms", code, errb.String())
	}
	errb.Reset()
	code = run([]string{"server", "--config", filepath.Join(t.TempDir(), "missing.properties")}, nil, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "missing.properties") {
		t.Fatalf("exit %d, stderr %q: want a non-zero exit naming the file", code, errb.String())
	}

	dir := t.TempDir()
	srv := startServerProc(t, dir, "--override", "no.such.key=1")
	if !strings.Contains(srv.stderr.String(), "no.such.key") {
		t.Fatalf("no warning naming the unknown key:\n%s", srv.stderr.String())
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-srv.done; err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("exit: %v", err)
	}
}

// TestKill9KeepsGroupOffsets: offsets a group committed are still there
// after the server is killed with SIGKILL and restarted.
func TestKill9KeepsGroupOffsets(t *testing.T) {
	dir := t.TempDir()
	srv := startServerProc(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "paid"); err != nil {
		t.Fatal(err)
	}
	for round := int64(1); round <= 20; round++ {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "paid", Partition: 0, At: round, LeaderEpoch: -1})
		offs.Add(kadm.Offset{Topic: "paid", Partition: 1, At: 100 + round, LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(ctx, "ledger", offs)
		if err != nil || resp.Error() != nil {
			t.Fatalf("commit round %d: %v %v", round, err, resp.Error())
		}
	}
	cl.Close()
	srv.kill()

	srv = startServerProc(t, dir)
	cl, err = kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm = kadm.NewClient(cl)
	var got kadm.OffsetResponses
	for {
		got, err = adm.FetchOffsets(ctx, "ledger")
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond) // the coordinator is loading
	}
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 20, 1: 120} {
		if o, ok := got.Lookup("paid", p); !ok || o.At != want {
			t.Fatalf("partition %d: committed offset %+v after kill -9, want %d", p, o, want)
		}
	}
}

// TestKill9DuringCompaction kills the server with SIGKILL as soon as the log
// cleaner has a pass in flight, restarts it, and checks that every key still
// reads as its last acknowledged value. It fails unless at least one kill
// provably landed mid-pass (the pass's files were left on disk).
func TestKill9DuringCompaction(t *testing.T) {
	dir := t.TempDir()
	extra := []string{"--override", "log.cleaner.backoff.ms=20"}
	srv := startServerProc(t, dir, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	newClient := func(addr string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := newClient(srv.addr)
	configs := map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("1048576"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, configs, "state"); err != nil {
		t.Fatal(err)
	}
	latest := map[string]string{}
	value := make([]byte, 1000)
	partDir := filepath.Join(dir, "state-0")
	// At least 5 rounds, more (up to 10) until two kills landed during a
	// pass: whether the cleaner is still busy once a round's records are
	// acknowledged depends on the machine's speed.
	midPass, round := 0, 0
	for ; round < 5 || (round < 10 && midPass < 2); round++ {
		var recs []*kgo.Record
		for i := 0; i < 3000; i++ {
			k := fmt.Sprintf("key-%03d", i%100)
			v := fmt.Sprintf("round-%d-update-%04d-%s", round, i, value)
			recs = append(recs, &kgo.Record{Topic: "state", Partition: 0, Key: []byte(k), Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, r := range recs {
			latest[string(r.Key)] = string(r.Value)
		}
		cl.Close()
		// Kill as soon as a cleaning pass has files in flight (.cleaned
		// or .swap). Files of a pass still on disk once the process is
		// dead prove the kill landed during cleaning.
		seen := waitForCleanerFiles(partDir, 3*time.Second)
		srv.kill()
		left := cleanerFiles(partDir)
		if len(left) > 0 {
			midPass++
		}
		t.Logf("round %d: pass in flight seen: %v; left by the kill: %v", round, seen, left)

		srv = startServerProc(t, dir, extra...)
		got := consumeToEnd(t, srv.addr, "state")
		view := map[string]string{}
		prev := int64(-1)
		for _, r := range got {
			if r.Offset <= prev {
				t.Fatalf("round %d: offset %d after %d", round, r.Offset, prev)
			}
			prev = r.Offset
			view[string(r.Key)] = string(r.Value)
		}
		for k, v := range latest {
			if view[k] != v {
				t.Fatalf("round %d: key %s reads %.24q, want %.24q (%d records read)", round, k, view[k], v, len(got))
			}
		}
		t.Logf("round %d: %d records hold the latest value of %d keys", round, len(got), len(latest))
		cl = newClient(srv.addr)
	}
	cl.Close()
	if midPass == 0 {
		t.Fatalf("in %d rounds no kill landed during a cleaning pass (no .cleaned or .swap file left behind)", round)
	}
}

// cleanerFiles lists the files of a cleaning pass in flight in a
// partition directory: a pass writes .cleaned segments, renames them
// .swap, then into place.
func cleanerFiles(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".cleaned") || strings.HasSuffix(n, ".swap") {
			out = append(out, n)
		}
	}
	return out
}

// waitForCleanerFiles polls dir until a cleaning pass has files in it,
// for at most limit; it reports whether it saw some.
func waitForCleanerFiles(dir string, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		if len(cleanerFiles(dir)) > 0 {
			return true
		}
		time.Sleep(100 * time.Microsecond)
	}
	return false
}

// consumeToEnd reads partition 0 of topic from its start up to its end
// offset, allowing the gaps compaction leaves.
func consumeToEnd(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	for len(got) == 0 || got[len(got)-1].Offset < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d records up to end offset %d: %v", len(got), end.Offset, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// A bad --add-scram stops start-up at once, without echoing the password.
func TestServerAddScramRefused(t *testing.T) {
	var stderr strings.Builder
	code := run([]string{"server", "--add-scram", "SCRAM-SHA-256=[name=alice,password=secret-pw,iterations=10]"}, nil, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "between 4096 and 16384") || strings.Contains(stderr.String(), "secret-pw") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
