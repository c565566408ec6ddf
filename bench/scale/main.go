// Command scale measures one Samsa node holding many partitions (issue 15):
// the CreateTopics rate, Metadata latency for every topic, idle RSS and open
// file descriptors, a produce/consume run across a subset of the
// partitions, and, after a clean stop, the time from start to serving every
// partition again. It runs the binary given by -samsa on a fresh data
// directory and prints a markdown report on stdout; progress goes to
// stderr. bench/scale/run.sh builds the binary and runs it.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	samsaBin   = flag.String("samsa", "samsa", "samsa binary")
	dataDir    = flag.String("dir", "", "data directory (default: a fresh temporary one, removed at the end)")
	topics     = flag.Int("topics", 10000, "topics to create")
	partitions = flag.Int("partitions", 10, "partitions per topic")
	active     = flag.Int("active", 1000, "partitions the produce/consume run writes to and reads back")
	records    = flag.Int("records", 100, "records per active partition")
	size       = flag.Int("size", 1024, "record value bytes")
	batch      = flag.Int("create-batch", 100, "topics per CreateTopics request")
	overrides  = flag.String("overrides", "", "extra comma-separated key=value server overrides")
	restarts   = flag.Int("restarts", 0, "restart-only mode: with -dir holding the topics of an earlier run, restart the node this many times (each: start, serve every partition, produce to -active partitions, stop) instead of creating topics")
	kill       = flag.Bool("kill", false, "restart-only mode: stop each node with SIGKILL instead of SIGTERM (the next start recovers)")
	serverLog  = flag.String("serverlog", "", "append every node's log lines, except those per partition, to this file")
	cpuProfile = flag.String("cpuprofile", "", "restart-only mode: have each node write a CPU profile to this file plus the restart's number")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	dir := *dataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "samsa-scale-")
		check(err)
		defer os.RemoveAll(d)
		dir = d
	}
	ctx := context.Background()
	r := &report{}
	if *restarts > 0 {
		restartOnly(ctx, r, dir)
		r.print()
		return
	}

	n := start(dir)
	r.row("Start-up, empty node (exec to serving)", n.serving.Round(time.Millisecond).String())
	names := make([]string, *topics)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%05d", i)
	}
	adm := kadm.NewClient(client(n.addr, kgo.RequestTimeoutOverhead(60*time.Second)))
	t0 := time.Now()
	createAll(ctx, adm, names)
	el := time.Since(t0)
	total := *topics * *partitions
	r.row(fmt.Sprintf("CreateTopics: %d topics × %d partitions, %d topics a request", *topics, *partitions, *batch),
		fmt.Sprintf("%s (%.0f partitions/s)", el.Round(time.Millisecond), float64(total)/el.Seconds()))
	waitServing(ctx, n.addr, total)
	r.row("Metadata for all topics (median of 5)", metadataLatency(ctx, n.addr, total))
	pc := produceConsume(ctx, n.addr, names)
	r.row(fmt.Sprintf("Produce %d × %d B records to %d partitions", *records, *size, *active), pc.produce)
	r.row(fmt.Sprintf("Consume them back from %d partitions", *active), pc.consume)
	settle()
	r.row("Idle RSS", mib(n.rss()))
	r.row("Open file descriptors", strconv.Itoa(n.fds()))
	r.row("Metadata log and snapshots on disk", mib(du(filepath.Join(dir, "__cluster_metadata-0"))/1024))
	r.row("Peak RSS so far (VmHWM)", mib(n.status("VmHWM")))
	adm.Close()
	t0 = time.Now()
	n.stop()
	r.row("Clean stop (SIGTERM to exit)", time.Since(t0).Round(time.Millisecond).String())

	n = start(dir)
	r.row("Restart after a clean stop: exec to listener serving", n.serving.Round(time.Millisecond).String())
	waitServing(ctx, n.addr, total)
	r.row("Restart after a clean stop: exec to Metadata listing every partition with a leader", time.Since(n.started).Round(time.Millisecond).String())
	produceOne(ctx, n.addr, names[len(names)-1], int32(*partitions-1))
	r.row("Restart after a clean stop: exec to a produce to the last partition acknowledged", time.Since(n.started).Round(time.Millisecond).String())
	settle()
	r.row("Idle RSS after restart", mib(n.rss()))
	r.row("Open file descriptors after restart", strconv.Itoa(n.fds()))
	r.row("Metadata for all topics after restart (median of 5)", metadataLatency(ctx, n.addr, total))
	pc = produceConsume(ctx, n.addr, names)
	r.row(fmt.Sprintf("After restart: produce %d × %d B records to %d partitions", *records, *size, *active), pc.produce)
	r.row(fmt.Sprintf("After restart: consume all %d records of each of %d partitions", 2**records, *active), pc.consume)
	r.row("Peak RSS of the restarted node (VmHWM)", mib(n.status("VmHWM")))
	n.stop()
	r.print()
}

type report struct{ rows [][2]string }

func (r *report) row(what, value string) {
	log.Printf("%s: %s", what, value)
	r.rows = append(r.rows, [2]string{what, value})
}

func (r *report) print() {
	fmt.Println("| Measure | Value |")
	fmt.Println("|---|---|")
	for _, row := range r.rows {
		fmt.Printf("| %s | %s |\n", row[0], row[1])
	}
}

// node is a running samsa server process.
type node struct {
	cmd     *exec.Cmd
	addr    string
	started time.Time
	serving time.Duration // exec to the "serving Kafka clients" log line
}

// perPartition matches the log lines a node writes for each partition.
var perPartition = regexp.MustCompile(`msg="(became leader|became follower|created log|rolled segment)"`)

var servingLine = regexp.MustCompile(`serving Kafka clients" listener=PLAINTEXT addr=([0-9.:]+)`)

func start(dir string, extra ...string) *node {
	args := []string{"server",
		"--override", "log.dirs=" + dir,
		"--override", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0"}
	for _, o := range strings.Split(*overrides, ",") {
		if o != "" {
			args = append(args, "--override", o)
		}
	}
	args = append(args, extra...)
	cmd := exec.Command(*samsaBin, args...)
	stderr, err := cmd.StderrPipe()
	check(err)
	n := &node{cmd: cmd, started: time.Now()}
	check(cmd.Start())
	sc := bufio.NewScanner(stderr)
	sc.Buffer(nil, 1<<20)
	var logf *os.File
	if *serverLog != "" {
		logf, err = os.OpenFile(*serverLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		check(err)
	}
	keep := func(line string) {
		if logf != nil && !perPartition.MatchString(line) {
			fmt.Fprintln(logf, line)
		}
	}
	for sc.Scan() {
		keep(sc.Text())
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			n.addr, n.serving = m[1], time.Since(n.started)
			break
		}
		if strings.Contains(sc.Text(), "level=ERROR") {
			log.Print(sc.Text())
		}
	}
	if n.addr == "" {
		log.Fatalf("samsa exited before serving: %v", cmd.Wait())
	}
	go func() {
		for sc.Scan() {
			keep(sc.Text())
			if strings.Contains(sc.Text(), "level=ERROR") {
				log.Print(sc.Text())
			}
		}
	}()
	return n
}

// restartOnly restarts the node on dir, which holds *topics topics of
// *partitions partitions from an earlier run, *restarts times: each time
// it times start-up, the first produce to *active partitions and the stop
// (a clean one, or SIGKILL with -kill).
func restartOnly(ctx context.Context, r *report, dir string) {
	names := make([]string, *topics)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%05d", i)
	}
	total := *topics * *partitions
	for i := range *restarts {
		var extra []string
		if *cpuProfile != "" {
			extra = []string{"--cpuprofile", fmt.Sprintf("%s.%d", *cpuProfile, i)}
		}
		n := start(dir, extra...)
		r.row(fmt.Sprintf("Restart %d: exec to listener serving", i), n.serving.Round(time.Millisecond).String())
		waitServing(ctx, n.addr, total)
		r.row(fmt.Sprintf("Restart %d: exec to Metadata listing every partition with a leader", i), time.Since(n.started).Round(time.Millisecond).String())
		produceOne(ctx, n.addr, names[len(names)-1], int32(*partitions-1))
		r.row(fmt.Sprintf("Restart %d: exec to a produce to the last partition acknowledged", i), time.Since(n.started).Round(time.Millisecond).String())
		pc := produceOnly(ctx, n.addr, names)
		r.row(fmt.Sprintf("Restart %d: produce %d × %d B records to %d partitions", i, *records, *size, *active), pc)
		r.row(fmt.Sprintf("Restart %d: RSS", i), mib(n.rss()))
		t0 := time.Now()
		if *kill {
			check(n.cmd.Process.Kill())
			n.cmd.Wait()
			r.row(fmt.Sprintf("Restart %d: SIGKILL", i), time.Since(t0).Round(time.Millisecond).String())
			continue
		}
		n.stop()
		r.row(fmt.Sprintf("Restart %d: clean stop (SIGTERM to exit)", i), time.Since(t0).Round(time.Millisecond).String())
	}
}

func (n *node) stop() {
	check(n.cmd.Process.Signal(syscall.SIGTERM))
	if err := n.cmd.Wait(); err != nil {
		log.Fatalf("samsa: %v", err)
	}
}

// status reads a field of /proc/PID/status in KiB.
func (n *node) status(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.cmd.Process.Pid))
	check(err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			check(err)
			return kib
		}
	}
	return -1
}

func (n *node) rss() int64 { return n.status("VmRSS") }

func (n *node) fds() int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", n.cmd.Process.Pid))
	check(err)
	return len(ents)
}

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

// du is the bytes of the files under dir.
func du(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// settle lets background work (checkpoints, GC) quiet down before idle
// figures are read.
func settle() {
	time.Sleep(5 * time.Second)
}

func client(addr string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	check(err)
	return cl
}

// createAll creates the topics, *batch a request, four requests at a time.
func createAll(ctx context.Context, adm *kadm.Client, names []string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < len(names); i += *batch {
		chunk := names[i:min(i+*batch, len(names))]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			resps, err := adm.CreateTopics(ctx, int32(*partitions), 1, nil, chunk...)
			if err == nil {
				err = resps.Error()
			}
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	check(firstErr)
}

// metadataAll asks for every topic and returns the partitions that have a
// leader.
func metadataAll(ctx context.Context, cl *kgo.Client) (int, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil // all topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	led := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Leader >= 0 {
				led++
			}
		}
	}
	return led, nil
}

// waitServing waits until Metadata lists want partitions with a leader.
func waitServing(ctx context.Context, addr string, want int) {
	cl := client(addr)
	defer cl.Close()
	for {
		led, err := metadataAll(ctx, cl)
		if err == nil && led >= want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func metadataLatency(ctx context.Context, addr string, want int) string {
	cl := client(addr)
	defer cl.Close()
	var ds []time.Duration
	for range 5 {
		t0 := time.Now()
		led, err := metadataAll(ctx, cl)
		check(err)
		ds = append(ds, time.Since(t0))
		if led != want {
			log.Fatalf("Metadata: %d partitions with a leader, want %d", led, want)
		}
	}
	slices.Sort(ds)
	return ds[len(ds)/2].Round(100 * time.Microsecond).String()
}

// produceOne writes one record to a partition, retrying until it is
// acknowledged.
func produceOne(ctx context.Context, addr, topic string, p int32) {
	cl := client(addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	check(cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("probe")}).FirstErr())
}

type pcResult struct{ produce, consume string }

// produceConsume writes *records records to each of the first *active
// partitions (spread over the topics: partition p of topic t for
// t*partitions+p < active), then reads every partition back from offset
// 0 and checks the count.
func produceConsume(ctx context.Context, addr string, names []string) pcResult {
	tps := activePartitions(names)
	res := pcResult{produce: produce(ctx, addr, tps)}

	offsets := map[string]map[int32]kgo.Offset{}
	for _, x := range tps {
		if offsets[x.topic] == nil {
			offsets[x.topic] = map[int32]kgo.Offset{}
		}
		offsets[x.topic][x.p] = kgo.NewOffset().AtStart()
	}
	cl := client(addr, kgo.ConsumePartitions(offsets), kgo.FetchMaxBytes(64<<20))
	defer cl.Close()
	ends := listEnds(ctx, addr, offsets)
	want := 0
	for _, e := range ends {
		want += int(e)
	}
	got := 0
	t0 := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for got < want {
		fs := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			log.Fatalf("consumed %d of %d records", got, want)
		}
		fs.EachError(func(t string, p int32, err error) { log.Fatalf("fetch %s-%d: %v", t, p, err) })
		got += fs.NumRecords()
	}
	res.consume = rate(got, time.Since(t0))
	return res
}

// produceOnly is the produce half of produceConsume.
func produceOnly(ctx context.Context, addr string, names []string) string {
	return produce(ctx, addr, activePartitions(names))
}

type tp struct {
	topic string
	p     int32
}

// activePartitions are partition p of topic t for t*partitions+p < active.
func activePartitions(names []string) []tp {
	var tps []tp
	for i := 0; i < *active; i++ {
		tps = append(tps, tp{names[i / *partitions], int32(i % *partitions)})
	}
	return tps
}

// produce writes *records records to each partition of tps.
func produce(ctx context.Context, addr string, tps []tp) string {
	cl := client(addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(1<<20))
	defer cl.Close()
	value := make([]byte, *size)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var perr error
	t0 := time.Now()
	for i := range *records {
		for _, x := range tps {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: x.topic, Partition: x.p, Value: value, Key: []byte(strconv.Itoa(i))},
				func(_ *kgo.Record, err error) {
					if err != nil {
						mu.Lock()
						perr = err
						mu.Unlock()
					}
					wg.Done()
				})
		}
	}
	wg.Wait()
	pel := time.Since(t0)
	check(perr)
	return rate(*records*len(tps), pel)
}

// listEnds returns the log end offsets of the partitions.
func listEnds(ctx context.Context, addr string, parts map[string]map[int32]kgo.Offset) map[string]int64 {
	adm := kadm.NewClient(client(addr))
	defer adm.Close()
	var names []string
	for t := range parts {
		names = append(names, t)
	}
	lo, err := adm.ListEndOffsets(ctx, names...)
	check(err)
	out := map[string]int64{}
	lo.Each(func(o kadm.ListedOffset) {
		if _, ok := parts[o.Topic][o.Partition]; ok {
			check(o.Err)
			out[fmt.Sprintf("%s-%d", o.Topic, o.Partition)] = o.Offset
		}
	})
	return out
}

func rate(n int, d time.Duration) string {
	return fmt.Sprintf("%d records in %s (%.0f records/s, %.1f MB/s)", n, d.Round(time.Millisecond),
		float64(n)/d.Seconds(), float64(n)*float64(*size)/d.Seconds()/1e6)
}

func check(err error) {
	if err != nil && !errors.Is(err, io.EOF) {
		log.Fatal(err)
	}
}
