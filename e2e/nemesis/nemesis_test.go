//go:build linux

package nemesis

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/e2e/nemesis/slowfs"
	"github.com/samsa-io/samsa/internal/devcluster"
)

// diskSize is each node's tmpfs: room for a long run, small enough to
// fill in a moment.
const diskSize = "768m"

// runner injects a schedule's faults into a running cluster.
type runner struct {
	t     *testing.T
	c     *devcluster.Cluster
	lab   *netLab
	adm   *kadm.Client
	disks map[int32]*slowfs.FS // each node's log directory
	ids   []int32
	start time.Time

	mu       sync.Mutex
	log      []string // what each step did, with the nodes it hit
	injected map[kind]int
	restarts int // nodes found dead that the nemesis had not killed
}

func (r *runner) logf(format string, args ...any) {
	line := fmt.Sprintf("t+%-6v ", time.Since(r.start).Round(100*time.Millisecond)) + fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.log = append(r.log, line)
	r.mu.Unlock()
	r.t.Log(line)
}

// resolve picks the node a role names now, from a fresh metadata
// request; when the cluster cannot say (no controller known, say), the
// pick decides among all nodes.
func (r *runner) resolve(ro role, pick int) int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	md, err := r.adm.Metadata(ctx, allTopic)
	if err == nil {
		switch ro {
		case controller:
			if md.Controller > 0 {
				return md.Controller
			}
		case notController:
			var cands []int32
			for _, id := range r.ids {
				if id != md.Controller {
					cands = append(cands, id)
				}
			}
			return cands[pick%len(cands)]
		case leader:
			if td, ok := md.Topics[allTopic]; ok {
				if p, ok := td.Partitions[int32(pick%partitions)]; ok && p.Leader > 0 {
					return p.Leader
				}
			}
		}
	}
	return r.ids[pick%len(r.ids)]
}

func (r *runner) others(id int32) []int32 {
	var o []int32
	for _, x := range r.ids {
		if x != id {
			o = append(o, x)
		}
	}
	return o
}

// inject starts a fault and returns what heals it.
func (r *runner) inject(s step) (heal func() error, err error) {
	r.mu.Lock()
	r.injected[s.Kind]++
	r.mu.Unlock()
	switch s.Kind {
	case isolate:
		x := r.resolve(s.Role, s.Pick)
		r.logf("%s → node %d cut off from %v both ways", s, x, r.others(x))
		for _, y := range r.others(x) {
			if err := r.lab.setCut(x, y, true); err != nil {
				return nil, err
			}
			if err := r.lab.setCut(y, x, true); err != nil {
				return nil, err
			}
		}
		return r.lab.healAll, nil
	case oneWay:
		x := r.resolve(s.Role, s.Pick)
		o := r.others(x)
		y := o[(s.Pick/7)%len(o)]
		r.logf("%s → node %d's packets to node %d dropped", s, x, y)
		return r.lab.healAll, r.lab.setCut(x, y, true)
	case ring:
		var links [][2]int32
		for i, x := range r.ids {
			y := r.ids[(i+1)%len(r.ids)]
			if s.Pick%2 == 1 {
				x, y = y, x
			}
			links = append(links, [2]int32{x, y})
		}
		r.logf("%s → dropped %v", s, links)
		for _, l := range links {
			if err := r.lab.setCut(l[0], l[1], true); err != nil {
				return nil, err
			}
		}
		return r.lab.healAll, nil
	case loss:
		r.logf("%s → every node drops %.0f%% of its packets", s, 100*s.Loss)
		return r.lab.healAll, r.lab.setLoss(s.Loss)
	case pause:
		x := r.resolve(s.Role, s.Pick)
		r.logf("%s → SIGSTOP node %d", s, x)
		r.c.Node(x).Pause()
		return func() error { r.c.Node(x).Resume(); return nil }, nil
	case kill:
		x := r.resolve(s.Role, s.Pick)
		r.logf("%s → SIGKILL node %d", s, x)
		r.c.Node(x).Kill()
		return func() error { return r.c.Node(x).Start() }, nil
	case diskFull:
		x := r.resolve(s.Role, s.Pick)
		dir := r.disks[x].Backing // the tmpfs under the slow file system
		n, err := fillDisk(dir)
		r.logf("%s → node %d's disk filled (%d MiB of ballast)", s, x, n>>20)
		if err != nil {
			return nil, err
		}
		// A log that failed a write stays offline until its node
		// restarts (internal/storage Log.fail), and the node keeps
		// running; Kafka would halt a broker whose only log directory
		// failed. The nemesis frees the disk and then kills and
		// restarts the node, as a supervisor would after Kafka's halt.
		return func() error {
			if err := freeDisk(dir); err != nil {
				return err
			}
			r.logf("node %d's disk freed; restarting it (its failed logs stay offline until a restart)", x)
			r.c.Node(x).Kill()
			return r.c.Node(x).Start()
		}, nil
	case slowDisk:
		x := r.resolve(s.Role, s.Pick)
		d := r.disks[x].Delay
		before := d.Counts()
		r.logf("%s → node %d's disk slow: %v per operation (%s)", s, x, s.Slow, s.SlowOps)
		d.Set(s.Slow, s.SlowOps)
		return func() error {
			d.Off()
			r.logf("node %d's disk fast again; operations it delayed: %v", x, d.Counts().Sub(before))
			return nil
		}, nil
	}
	return nil, fmt.Errorf("unknown fault %q", s.Kind)
}

// recover heals the network and the disks, continues paused nodes and
// restarts dead ones (a node may stop itself on a full disk, as Kafka
// halts on a log directory failure).
func (r *runner) recover() error {
	r.fastDisks()
	if err := r.lab.healAll(); err != nil {
		return err
	}
	for _, id := range r.ids {
		n := r.c.Node(id)
		if n.Running() {
			n.Resume()
			continue
		}
		r.mu.Lock()
		r.restarts++
		r.mu.Unlock()
		r.logf("node %d is down; restarting it", id)
		var err error
		for range 3 {
			if err = n.Start(); err == nil {
				break
			}
			r.logf("restart node %d: %v", id, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fastDisks switches every disk's delay off.
func (r *runner) fastDisks() {
	for _, d := range r.disks {
		d.Delay.Off()
	}
}

// waitHealthy waits until every partition of the topics has a leader and
// its whole replica set in sync.
func (r *runner) waitHealthy(timeout time.Duration, topics ...string) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		md, err := r.adm.Metadata(ctx, topics...)
		cancel()
		if err != nil {
			last = err.Error()
		} else if ok, state := healthy(md, topics); ok {
			return nil
		} else {
			last = state
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("not every replica in sync within %v: %s", timeout, last)
}

func healthy(md kadm.Metadata, topics []string) (bool, string) {
	for _, topic := range topics {
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return false, fmt.Sprintf("%s: %v", topic, td.Err)
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
				return false, fmt.Sprintf("%s-%d: leader %d, isr %v of %v", topic, p.Partition, p.Leader, p.ISR, p.Replicas)
			}
		}
	}
	return true, ""
}

// TestScheduleIsReproducible: a seed fixes the schedule.
func TestScheduleIsReproducible(t *testing.T) {
	a, b := schedule(42, 10*time.Minute, allKinds), schedule(42, 10*time.Minute, allKinds)
	if formatSchedule(a) != formatSchedule(b) {
		t.Fatal("the same seed gave two schedules")
	}
	if formatSchedule(a) == formatSchedule(schedule(43, 10*time.Minute, allKinds)) {
		t.Fatal("two seeds gave the same schedule")
	}
	kinds := map[kind]bool{}
	for _, s := range a {
		kinds[s.Kind] = true
		if s.Kind == slowDisk && (s.Slow <= 0 || s.SlowOps == 0) {
			t.Errorf("a slow disk without a delay: %s", s)
		}
	}
	for _, k := range allKinds {
		if !kinds[k] {
			t.Errorf("ten minutes of seed 42 never inject %s", k)
		}
	}
}

// TestNemesis runs the workloads on a 3-node cluster through a seeded
// schedule of faults, then heals everything and checks what the clients
// saw. SAMSA_NEMESIS_SEED and SAMSA_NEMESIS_DURATION select the run.
func TestNemesis(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the nemesis needs root: network namespaces, tc, tmpfs and FUSE mounts")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("the nemesis needs FUSE for its disks: %v", err)
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the nemesis needs %s: %v", tool, err)
		}
	}
	set, err := loadSettings()
	if err != nil {
		t.Fatal(err)
	}
	steps := schedule(set.Seed, set.Duration, allKinds)
	reproduce := fmt.Sprintf("SAMSA_NEMESIS_SEED=%d SAMSA_NEMESIS_DURATION=%v go test ./e2e/nemesis -run 'TestNemesis$' -v -timeout 0",
		set.Seed, set.Duration)
	t.Logf("seed %d, %d faults over %v:\n%s", set.Seed, len(steps), set.Duration, formatSchedule(steps))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d; reproduce with\n  %s\nschedule:\n%s", set.Seed, reproduce, formatSchedule(steps))
		}
	})

	ids := []int32{1, 2, 3}
	lab := newNetLab(t, ids)
	lab.selfTest(t)
	dir := t.TempDir()
	sweepStaleMounts(t)
	disks := map[int32]*slowfs.FS{}
	for _, id := range ids {
		under := filepath.Join(dir, fmt.Sprintf("disk-%d", id))
		mountTmpfs(t, under, diskSize, fmt.Sprintf("%s-disk%d", lab.name, id))
		disks[id] = mountSlowDisk(t, under, filepath.Join(dir, fmt.Sprintf("node-%d", id)), fmt.Sprintf("%s-n%d", lab.name, id))
	}
	c, err := devcluster.Start(devcluster.Config{
		Nodes: 3, Dir: dir, Binary: binary, BasePort: 9092,
		Properties:   fastFailover,
		StartTimeout: 90 * time.Second,
		Host:         nodeIP,
		Wrap:         lab.wrap,
	})
	if err != nil {
		dumpLogs(t, dir, len(ids))
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			dumpLogs(t, dir, len(ids))
		}
	})
	r := &runner{t: t, c: c, lab: lab, disks: disks, ids: ids, start: time.Now(), injected: map[kind]int{}}
	t.Cleanup(r.fastDisks) // before the nodes stop, if a fault is left on
	nc := func(opts ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...), kgo.Dialer(lab.dial)}, opts...)...)
	}
	admCl, err := nc(kgo.MetadataMinAge(100 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	r.adm = kadm.NewClient(admCl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*set.Duration+10*time.Minute)
	defer cancel()
	minISR := "2"
	topics := []string{allTopic, oneTopic, txnTopic}
	for _, topic := range topics {
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := r.adm.CreateTopic(cctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
		ccancel()
		if err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	if err := r.waitHealthy(60*time.Second, topics...); err != nil {
		t.Fatal(err)
	}

	// Workloads.
	an := &anomalies{}
	var stop atomic.Bool
	var producers, readers sync.WaitGroup
	rctx, stopReaders := context.WithCancel(ctx)
	defer stopReaders()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	allProd, err := startSeqProducer(ctx, nc, allTopic, true, &stop, &producers)
	must(err)
	defer allProd.cl.Close()
	oneProd, err := startSeqProducer(ctx, nc, oneTopic, false, &stop, &producers)
	must(err)
	defer oneProd.cl.Close()
	txns := startTxnProducer(ctx, nc, &stop, &producers, t.Logf)
	allSeen, err := startWatcher(rctx, nc, allTopic, false, &readers)
	must(err)
	oneSeen, err := startWatcher(rctx, nc, oneTopic, false, &readers)
	must(err)
	txnSeen, err := startWatcher(rctx, nc, txnTopic, true, &readers)
	must(err)
	gw, err := startGroup(rctx, nc, 2, &readers, an)
	must(err)
	time.Sleep(3 * time.Second)

	// Faults, one at a time.
	r.start = time.Now()
	for i, s := range steps {
		if ctx.Err() != nil {
			t.Fatalf("out of time before step %d", i+1)
		}
		heal, err := r.inject(s)
		if err != nil {
			t.Fatalf("step %d (%s): inject: %v", i+1, s, err)
		}
		time.Sleep(s.Hold)
		if err := heal(); err != nil {
			r.logf("step %d: heal: %v", i+1, err)
		}
		if err := r.recover(); err != nil {
			t.Fatalf("step %d: recover: %v", i+1, err)
		}
		time.Sleep(s.Gap)
	}
	faultPhase := time.Since(r.start)

	// Heal, let the cluster settle, stop the writers and read everything.
	r.logf("all faults healed; waiting for every replica to be in sync")
	if err := r.recover(); err != nil {
		t.Fatal(err)
	}
	if err := r.waitHealthy(3*time.Minute, append(topics, "__consumer_offsets")...); err != nil {
		an.add("the cluster did not recover after the faults: %v", err)
	}
	time.Sleep(2 * time.Second)
	stop.Store(true)
	producers.Wait()
	for _, p := range []*seqProducer{allProd, oneProd} {
		fctx, fcancel := context.WithTimeout(ctx, 2*time.Minute)
		if err := p.cl.Flush(fctx); err != nil {
			t.Logf("flush %s: %v", p.topic, err)
		}
		fcancel()
	}
	time.Sleep(3 * time.Second) // the readers catch up
	stopReaders()
	readers.Wait()

	fctx, fcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer fcancel()
	finalAll, err := readAll(fctx, nc, allTopic, false)
	must(err)
	finalOne, err := readAll(fctx, nc, oneTopic, false)
	must(err)
	finalTxn, err := readAll(fctx, nc, txnTopic, true)
	must(err)
	if offs, err := r.adm.FetchOffsets(fctx, group); err == nil {
		gw.observe(offs, an)
	}

	allProd.mu.Lock()
	checkedAll := checkSeq(allTopic, finalAll, &allProd.acked, allSeen, an)
	allProd.mu.Unlock()
	checkedOne := checkSeq(oneTopic, finalOne, nil, oneSeen, an)
	checkedTxn, committed, aborted, unknown := checkTxns(finalTxn, txns, txnSeen, an)
	lost := lostTxns(finalTxn, txns)
	if len(lost) > 0 {
		// checkTxns reported them; say whether each record is absent,
		// aborted, or committed but hidden from read_committed.
		if raw, err := readRaw(fctx, nc, txnTopic); err != nil {
			t.Logf("reading %s read_uncommitted with markers: %v", txnTopic, err)
		} else {
			for _, s := range explainLostTxns(raw, finalTxn, lost, txns) {
				t.Log(s)
			}
		}
	}

	r.mu.Lock()
	var kinds []string
	total := 0
	for k, n := range r.injected {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	slices.Sort(kinds)
	restarts := r.restarts
	r.mu.Unlock()
	found := an.all()
	t.Logf("NEMESIS RESULT seed=%d duration=%v fault-phase=%v faults=%d (%s) unplanned-restarts=%d lost-committed-txns=%d "+
		"records-checked=%d (acks=all %d [%d failed sends], acks=1 %d, txn %d: %d committed, %d aborted, %d unknown) "+
		"group-commits=%d group-offset-fetches=%d anomalies=%d",
		set.Seed, set.Duration, faultPhase.Round(time.Second), total, strings.Join(kinds, " "), restarts, len(lost),
		checkedAll+checkedOne+checkedTxn, checkedAll, allProd.failed.Load(), checkedOne, checkedTxn, committed, aborted, unknown,
		gw.commits.Load(), gw.fetches.Load(), len(found))
	if checkedAll == 0 || committed == 0 {
		an.add("the workloads made no progress: %d acks=all records, %d committed transactions", checkedAll, committed)
		found = an.all()
	}
	if len(found) > 0 {
		r.mu.Lock()
		t.Logf("fault log:\n%s", strings.Join(r.log, "\n"))
		r.mu.Unlock()
		for i, a := range found {
			if i == 50 {
				t.Errorf("... and %d more", len(found)-50)
				break
			}
			t.Errorf("anomaly: %s", a)
		}
	}
}
