package raft

// Deterministic simulation of the metadata quorum (issue #12), in the style
// of Kafka's RaftEventSimulationTest. One scheduler drives several Nodes
// (with no goroutines of their own: the simulation calls their run-loop
// turns, see open and settle in node.go) over an in-memory network that
// drops, delays, duplicates and partitions messages, on real files in a
// RAM directory whose writes and fsyncs fail on command (Config.Fault) and
// whose unsynced bytes a crash loses or tears; a node may also die at any
// write or fsync (a crash point, sim_disk_test.go). The applier is the metadata
// Loader. Time is simulated; every random choice, etcd raft's election
// timeouts included (testing/cryptotest), comes from the seed, so a seed
// replays exactly. After every event the invariants of sim_check_test.go
// are checked; after the chaos the faults heal and the quorum must elect a
// leader, commit a new proposal and converge within a bounded number of
// ticks.
//
//	go test ./internal/raft -run 'TestSimulation$'             # CI: 2000 seeds, ~30s (300 with -short)
//	SAMSA_SIM_SEEDS=100000 go test ./internal/raft -run 'TestSimulation$' -timeout 0 -v
//	SAMSA_SIM_START=5000 SAMSA_SIM_SEEDS=1000 ...              # another range of seeds
//	SAMSA_SIM_SEED=1234 go test ./internal/raft -run 'TestSimulation$' -v  # one seed, its event log printed
//	SAMSA_SIM_KEEP_GOING=1 ...                                 # list every failing seed
//
// A failing seed is rerun with tracing and its event log is written to
// $TMPDIR/samsa-sim-<seed>.log (the tail is in the failure message).

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	etcdraft "go.etcd.io/raft/v3"
)

const (
	simTickMs = 10 // Config.TickInterval, in simulated milliseconds
	// After the faults heal, the quorum must commit a new proposal within
	// simCommitBound and converge (every node applied everything, equal
	// images) within simConvergeBound. A node in storage recovery may
	// wait 50 ticks for its retry, and an election takes 10 to 20.
	simCommitBound   = 200 * simTickMs
	simConvergeBound = 400 * simTickMs
)

// simBudget bounds TestSimulation's default run.
const simBudget = 4 * time.Minute

func TestSimulation(t *testing.T) {
	if v := os.Getenv("SAMSA_SIM_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SAMSA_SIM_SEED=%q: want a number", v)
		}
		s := runSimSeed(t, seed, true)
		for _, l := range s.trace {
			t.Log(l)
		}
		t.Logf("seed %d: %s", seed, s.stats)
		if s.err != nil {
			t.Fatalf("seed %d: %v", seed, s.err)
		}
		return
	}
	seeds := uint64(2000)
	if testing.Short() {
		seeds = 300
	}
	// Without SAMSA_SIM_SEEDS the run also stops after simBudget, so that
	// on a loaded machine the package stays within go test's timeout; it
	// says how many seeds it covered.
	budget := simBudget
	if v := os.Getenv("SAMSA_SIM_SEEDS"); v != "" {
		budget = 0
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SAMSA_SIM_SEEDS=%q: want a number", v)
		}
		seeds = n
	}
	start := uint64(1)
	if v := os.Getenv("SAMSA_SIM_START"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SAMSA_SIM_START=%q: want a number", v)
		}
		start = n
	}
	// SAMSA_SIM_KEEP_GOING=1 lists every failing seed instead of stopping
	// at the first with its event log.
	keepGoing := os.Getenv("SAMSA_SIM_KEEP_GOING") != ""
	began := time.Now()
	var total simStats
	for seed := start; seed < start+seeds; seed++ {
		if budget > 0 && time.Since(began) > budget {
			t.Logf("stopped after %v at seed %d of %d..%d (SAMSA_SIM_SEEDS runs them all)", budget, seed, start, start+seeds-1)
			seeds = seed - start
			break
		}
		s := runSimSeed(t, seed, false)
		total.add(s.stats)
		if s.err != nil && keepGoing {
			t.Errorf("seed %d: %v", seed, s.err)
			continue
		}
		if s.err != nil {
			reportSimFailure(t, seed, s.err)
			return
		}
	}
	t.Logf("%d seeds (%d..%d) in %v: %s", seeds, start, start+seeds-1, time.Since(began).Round(time.Millisecond), total)
}

// simRegressions are seeds that found bugs, with what they found. A seed
// keeps its meaning only while the simulation's random choices stay the
// same; each bug also has a focused test.
var simRegressions = []struct {
	seed uint64
	bug  string
}{
	{107, "ErrStorage answered before the failed entry was cut from disk; a crash then let the restarted sole voter commit it (TestStorageErrorAnsweredOnlyOnceTheEntryIsCut)"},
	{8, "a proposal whose entry a leader's snapshot covered was answered ErrNotLeader (\"replaced\") though it was committed and applied; now ErrOutcomeUnknown"},
	{143, "truncateFrom removed a whole segment and the next append overwrote the previous one from offset 0 (TestDiskLogTruncateWholeSegmentThenAppend)"},
}

func TestSimulationRegressions(t *testing.T) {
	for _, r := range simRegressions {
		if s := runSimSeed(t, r.seed, false); s.err != nil {
			t.Errorf("seed %d (%s): %v", r.seed, r.bug, s.err)
		}
	}
}

// TestSimulationDeterministic runs seeds twice with tracing: the event
// logs must be identical, or a failing seed would not reproduce.
func TestSimulationDeterministic(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		a := runSimSeed(t, seed, true)
		b := runSimSeed(t, seed, true)
		if !slices.Equal(a.trace, b.trace) {
			i := 0
			for i < len(a.trace) && i < len(b.trace) && a.trace[i] == b.trace[i] {
				i++
			}
			at, bt := "<end>", "<end>"
			if i < len(a.trace) {
				at = a.trace[i]
			}
			if i < len(b.trace) {
				bt = b.trace[i]
			}
			t.Fatalf("seed %d: runs diverge at event %d:\n  %s\n  %s", seed, i, at, bt)
		}
	}
}

func reportSimFailure(t *testing.T, seed uint64, err error) {
	t.Helper()
	s := runSimSeed(t, seed, true)
	path := filepath.Join(os.TempDir(), fmt.Sprintf("samsa-sim-%d.log", seed))
	werr := os.WriteFile(path, []byte(strings.Join(s.trace, "\n")+"\n"), 0o644)
	tail := s.trace[max(0, len(s.trace)-150):]
	again := "the traced rerun failed the same way"
	if s.err == nil || s.err.Error() != err.Error() {
		again = fmt.Sprintf("the traced rerun did NOT reproduce it (rerun: %v): the simulation is not deterministic", s.err)
	}
	t.Fatalf("seed %d: %v\n%s; rerun: SAMSA_SIM_SEED=%d go test ./internal/raft -run 'TestSimulation$' -v\nevent log: %s (write error: %v); last events:\n%s",
		seed, err, again, seed, path, werr, strings.Join(tail, "\n"))
}

// runSimSeed runs one seed from scratch.
func runSimSeed(t *testing.T, seed uint64, tracing bool) *sim {
	t.Helper()
	// etcd raft draws its election timeouts from crypto/rand.
	cryptotest.SetGlobalRandom(t, seed)
	root := os.TempDir()
	if runtime.GOOS == "linux" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			root = "/dev/shm" // fsync on a RAM disk costs nothing
		}
	}
	dir, err := os.MkdirTemp(root, "samsa-sim-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s := newSim(seed, dir, tracing)
	s.run()
	return s
}

// simEvent is one scheduled action; ties in time run in scheduling order.
type simEvent struct {
	at  int64
	seq uint64
	fn  func()
}

type simQueue []*simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// sim is one seeded run. Everything happens on the test goroutine.
type sim struct {
	seed    uint64
	rng     *rand.Rand
	now     int64 // simulated milliseconds
	seq     uint64
	queue   simQueue
	tracing bool
	trace   []string
	dir     string
	ids     []uint64
	nodes   map[uint64]*simNode
	every   uint64 // SnapshotEvery
	// crashPoint is the chance that a node dies at a write or fsync.
	crashPoint float64
	net        simNet
	chk        simChecker
	props      []*simProp
	open       []*simProp // not yet answered
	// Chaos until chaosEnd, then heal: healedAt is set, and the run ends
	// once a proposal made after it is answered success and the nodes
	// converge.
	chaosEnd  int64
	healedAt  int64
	healed    bool
	committed bool // a proposal made after the heal succeeded
	done      bool
	err       error
	stats     simStats
	vc        simVoters // sim_voters_test.go
}

// simNode is one voter across its incarnations (restarts).
type simNode struct {
	id   uint64
	dir  string
	node *Node // nil while crashed
	inc  int
	app  *simApplier
	disk *simDisk
	// Checked after every event (sim_check_test.go).
	lastCommit  uint64 // survives restarts: the commit index is durable
	lastApplied uint64 // per incarnation
	checked     uint64 // committed entries compared up to here
}

type simStats struct {
	seeds, events, proposals, ok, rejected, failed, unknown int
	crashes, partitions, diskFaults, injected, restores     int
	voterChanges                                            int
	maxTerm                                                 uint64
	sizes                                                   [6]int
}

func (a *simStats) add(b simStats) {
	a.seeds++
	a.events += b.events
	a.proposals += b.proposals
	a.ok += b.ok
	a.rejected += b.rejected
	a.failed += b.failed
	a.unknown += b.unknown
	a.crashes += b.crashes
	a.partitions += b.partitions
	a.diskFaults += b.diskFaults
	a.injected += b.injected
	a.restores += b.restores
	a.voterChanges += b.voterChanges
	a.maxTerm = max(a.maxTerm, b.maxTerm)
	for i, n := range b.sizes {
		a.sizes[i] += n
	}
}

func (a simStats) String() string {
	return fmt.Sprintf("clusters of 1/3/5 voters: %d/%d/%d; %d events; %d proposals (%d ok, %d rejected by the applier, %d failed, %d unanswered); "+
		"%d crashes, %d partitions, %d disk-fault windows (%d failed writes/fsyncs), %d snapshot restores, %d voter changes proposed; highest term %d",
		a.sizes[1], a.sizes[3], a.sizes[5], a.events, a.proposals, a.ok, a.rejected, a.failed, a.unknown,
		a.crashes, a.partitions, a.diskFaults, a.injected, a.restores, a.voterChanges, a.maxTerm)
}

func newSim(seed uint64, dir string, tracing bool) *sim {
	s := &sim{seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5a35a)), dir: dir, tracing: tracing,
		nodes: map[uint64]*simNode{}}
	s.chk.init()
	size := []int{1, 3, 3, 3, 5}[s.rng.IntN(5)]
	s.stats.sizes[size]++
	s.every = 3 + s.rng.Uint64N(20)
	s.net = simNet{group: map[uint64]int{}, maxDelay: 1 + s.rng.Int64N(3*simTickMs)}
	s.chaosEnd = 1000 + s.rng.Int64N(3000)
	s.crashPoint = []float64{0, 0.001, 0.005, 0.02}[s.rng.IntN(4)]
	for i := 1; i <= size; i++ {
		s.ids = append(s.ids, uint64(i))
	}
	for _, id := range s.ids {
		sn := &simNode{id: id, dir: filepath.Join(dir, fmt.Sprint(id))}
		sn.disk = &simDisk{s: s, id: id, durable: map[string]int64{}}
		s.nodes[id] = sn
	}
	s.logf("seed %d: %d voters, snapshot every %d, max delay %dms, chaos until %dms", seed, size, s.every, s.net.maxDelay, s.chaosEnd)
	return s
}

func (s *sim) logf(format string, args ...any) {
	if s.tracing {
		line := fmt.Sprintf("%6dms ", s.now) + fmt.Sprintf(format, args...)
		s.trace = append(s.trace, strings.ReplaceAll(line, s.dir, "$DIR"))
	}
}

// fail records the first invariant violation; the run stops after the
// current event.
func (s *sim) fail(format string, args ...any) {
	if s.err == nil {
		msg := fmt.Sprintf("at %dms: "+format, append([]any{s.now}, args...)...)
		s.err = errors.New(strings.ReplaceAll(msg, s.dir, "$DIR"))
		s.logf("VIOLATION: %v", s.err)
	}
}

func (s *sim) after(delay int64, fn func()) {
	s.seq++
	heap.Push(&s.queue, &simEvent{at: s.now + delay, seq: s.seq, fn: fn})
}

func (s *sim) clock() time.Time { return time.UnixMilli(1_700_000_000_000 + s.now) }

func (s *sim) run() {
	for _, id := range s.ids {
		s.start(s.nodes[id])
	}
	s.after(1+s.rng.Int64N(100), s.chaos)
	s.after(1+s.rng.Int64N(20), s.client)
	s.initVoters()
	for s.err == nil && !s.done {
		if len(s.queue) == 0 {
			s.fail("no events left")
			break
		}
		e := heap.Pop(&s.queue).(*simEvent)
		s.now = e.at
		e.fn()
		s.stats.events++
		s.checkAll()
		if s.healed && s.err == nil {
			switch {
			case !s.committed && s.now > s.healedAt+simCommitBound:
				s.fail("liveness: no proposal committed within %dms after the faults healed", simCommitBound)
			case s.now > s.healedAt+simConvergeBound:
				s.fail("liveness: nodes did not converge within %dms after the faults healed: %s", simConvergeBound, s.describe())
			}
		}
	}
	for _, p := range s.open {
		p.state = propUnknown
		s.stats.unknown++
	}
	for _, id := range s.ids {
		if n := s.nodes[id].node; n != nil {
			s.stats.maxTerm = max(s.stats.maxTerm, n.rn.BasicStatus().GetTerm())
			n.log.close()
		}
	}
}

// start opens a node on its directory, as a process start would.
func (s *sim) start(sn *simNode) {
	sn.inc++
	sn.app = newSimApplier(s, sn)
	sn.lastApplied, sn.checked = 0, 0
	cfg := Config{ID: sn.id, Peers: s.ids, Dir: sn.dir, Logger: s.logger(sn.id),
		Transport: &simTransport{s: s, from: sn.id}, Applier: sn.app, TickInterval: simTickMs * time.Millisecond,
		SnapshotEvery: s.every, Fault: sn.disk.hook, now: s.clock}
	s.logf("n%d start (incarnation %d)", sn.id, sn.inc)
	sn.disk.injected = false
	n, err := open(cfg)
	if err != nil && (sn.disk.crashNow || sn.disk.injected) {
		// A fresh directory cannot be bootstrapped on a full disk, and
		// a process may die while starting: try again later.
		sn.disk.crashNow = false
		s.logf("n%d did not start: %v", sn.id, err)
		s.after(1+s.rng.Int64N(500), func() {
			if sn.node == nil {
				s.start(sn)
			}
		})
		return
	}
	if err != nil {
		s.fail("n%d: open: %v", sn.id, err)
		return
	}
	sn.node = n
	if sn.disk.crashNow {
		s.crashPointReached(sn)
		return
	}
	inc := sn.inc
	s.after(1+s.rng.Int64N(simTickMs), func() { s.tick(sn, inc) })
}

func (s *sim) tick(sn *simNode, inc int) {
	if sn.node == nil || sn.inc != inc {
		return
	}
	s.logf("n%d tick", sn.id)
	sn.node.onTick()
	s.settle(sn)
	// A little clock jitter between nodes.
	s.after(simTickMs-1+s.rng.Int64N(3), func() { s.tick(sn, inc) })
}

// settle ends a turn of sn: persist, send and apply what raft has ready.
// A node that hit a crash point during the turn crashes now.
func (s *sim) settle(sn *simNode) {
	if !sn.node.settle() && !sn.disk.crashNow {
		s.fail("n%d stopped: %v", sn.id, sn.node.fatal)
	}
	s.crashPointReached(sn)
}

// crashPointReached crashes sn if it died during the turn. Whatever it
// answered after dying never reached anyone.
func (s *sim) crashPointReached(sn *simNode) {
	if !sn.disk.crashNow {
		return
	}
	open := s.open[:0]
	for _, sp := range s.open {
		if sp.node == sn.id {
			sp.state = propUnknown
			s.stats.unknown++
			s.logf("p%d unanswered: n%d died", sp.id, sn.id)
			continue
		}
		open = append(open, sp)
	}
	s.open = open
	s.crash(sn)
	sn.disk.crashNow = false
	s.after(s.rng.Int64N(500), func() {
		if sn.node == nil && !s.healed {
			s.start(sn)
		}
	})
}

// crash kills a node: its unsynced writes are lost or torn, and its
// waiting proposals are never answered.
func (s *sim) crash(sn *simNode) {
	if sn.node == nil {
		return
	}
	s.logf("n%d CRASH", sn.id)
	s.stats.crashes++
	sn.node.log.close()
	sn.node = nil
	sn.inc++
	sn.disk.crash(sn.dir)
}

// chaos picks the next fault until chaosEnd, then heals everything.
func (s *sim) chaos() {
	if s.now >= s.chaosEnd {
		s.heal()
		return
	}
	live := s.live()
	switch k := s.rng.IntN(12); {
	case k < 3 && len(live) > 0:
		sn := live[s.rng.IntN(len(live))]
		s.crash(sn)
		if s.rng.IntN(4) > 0 {
			s.after(s.rng.Int64N(800), func() {
				if sn.node == nil && !s.healed {
					s.start(sn)
				}
			})
		}
	case k < 5 && len(s.ids) > 1:
		s.partition()
	case k < 8:
		sn := s.nodes[s.ids[s.rng.IntN(len(s.ids))]]
		sn.disk.startFault(s.rng.Int64N(600))
	case k < 9:
		s.net.drop = []float64{0, 0, 0.05, 0.2, 0.5}[s.rng.IntN(5)]
		s.net.dup = []float64{0, 0, 0.05}[s.rng.IntN(3)]
		s.logf("network: drop %.2f, duplicate %.2f", s.net.drop, s.net.dup)
	}
	s.after(30+s.rng.Int64N(300), s.chaos)
}

// heal ends every fault: crashed nodes restart, partitions and message
// loss end, disks work. From now on the quorum must make progress.
func (s *sim) heal() {
	s.logf("HEAL")
	s.healed, s.healedAt = true, s.now
	s.net.drop, s.net.dup = 0, 0
	clear(s.net.group)
	for _, id := range s.ids {
		sn := s.nodes[id]
		sn.disk.mode = diskOK
		if sn.node == nil {
			s.start(sn)
		}
	}
}

func (s *sim) live() []*simNode {
	var out []*simNode
	for _, id := range s.ids {
		if sn := s.nodes[id]; sn.node != nil {
			out = append(out, sn)
		}
	}
	return out
}

func (s *sim) leaders() []*simNode {
	var out []*simNode
	for _, sn := range s.live() {
		if sn.node.broken == nil && sn.node.rn.BasicStatus().RaftState == etcdraft.StateLeader {
			out = append(out, sn)
		}
	}
	return out
}

func (s *sim) describe() string {
	var b strings.Builder
	for _, id := range s.ids {
		sn := s.nodes[id]
		if sn.node == nil {
			fmt.Fprintf(&b, "n%d down; ", id)
			continue
		}
		n := sn.node
		bs := n.rn.BasicStatus()
		last, _ := n.storage.LastIndex()
		fmt.Fprintf(&b, "n%d %s term %d lead %d commit %d applied %d last %d broken %v; ",
			id, bs.RaftState, bs.GetTerm(), bs.Lead, bs.GetCommit(), n.applied, last, n.broken != nil)
	}
	return b.String()
}

// errorsIsAny reports whether err is one of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
