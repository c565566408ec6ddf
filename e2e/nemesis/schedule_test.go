package nemesis

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-io/samsa/e2e/nemesis/slowfs"
)

// kind is a fault.
type kind string

const (
	// isolate cuts one node off the others both ways: the minority side
	// of a majority/minority split, with or without the controller.
	isolate kind = "isolate"
	// oneWay drops one node's packets to one other node only.
	oneWay kind = "one-way"
	// ring is a cyclic partition: node i's packets to node i+1 are
	// dropped, so every node still reaches one peer and no two agree on
	// who is reachable.
	ring kind = "ring"
	// loss drops a random fraction of every node's packets.
	loss kind = "loss"
	// pause stops a node with SIGSTOP and continues it with SIGCONT.
	pause kind = "pause"
	// kill kills a node with SIGKILL and restarts it.
	kill kind = "kill"
	// diskFull fills a node's log directory (a tmpfs) to the last byte
	// and frees it again.
	diskFull kind = "disk-full"
	// slowDisk makes every operation of some kinds on a node's log
	// directory wait a while (the FUSE layer of package slowfs), and
	// makes it fast again.
	slowDisk kind = "slow-disk"
)

// allKinds is the order of kinds the scheduler draws from; isolate and
// kill come twice to weigh them by how often real clusters see them.
var allKinds = []kind{isolate, isolate, oneWay, ring, loss, pause, kill, kill, diskFull, slowDisk}

// slowDelays are the delays a slow disk adds to each operation: from a
// busy disk to one that is failing.
var slowDelays = []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	200 * time.Millisecond, 500 * time.Millisecond}

// slowOps are the kinds of operation a slow disk slows: only fsync (the
// page cache absorbs writes, flushing is slow), writes and fsync, or
// everything including reads and directory changes.
var slowOps = []slowfs.Ops{slowfs.Sync, slowfs.Write | slowfs.Sync, slowfs.All}

// role says which node a fault hits; the node is resolved when the fault
// starts, from a fresh metadata request.
type role string

const (
	controller    role = "controller"     // the active controller
	notController role = "non-controller" // any node but the active controller
	leader        role = "leader"         // the leader of a partition of the main topic
	anyNode       role = "any"
)

var allRoles = []role{controller, notController, leader, anyNode}

// step is one fault of a schedule: inject, hold, heal, then a quiet gap.
type step struct {
	Kind kind
	Role role
	// Pick chooses among candidate nodes (and the peer of a one-way cut,
	// the direction of a ring) reproducibly.
	Pick int
	// Loss is the fraction of packets dropped, for loss.
	Loss float64
	// Slow is the delay of each operation of the kinds SlowOps, for
	// slowDisk.
	Slow    time.Duration
	SlowOps slowfs.Ops
	Hold    time.Duration
	Gap     time.Duration
}

func (s step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s", s.Kind)
	switch s.Kind {
	case ring:
	case loss:
		fmt.Fprintf(&b, " p=%.2f", s.Loss)
	case slowDisk:
		fmt.Fprintf(&b, " role=%s ops=%s d=%v", s.Role, s.SlowOps, s.Slow)
	default:
		fmt.Fprintf(&b, " role=%s", s.Role)
	}
	fmt.Fprintf(&b, " pick=%d hold=%v gap=%v", s.Pick, s.Hold, s.Gap)
	return b.String()
}

// schedule is the reproducible list of faults for a seed and a length:
// steps are drawn until their holds and gaps fill the duration.
func schedule(seed uint64, duration time.Duration, kinds []kind) []step {
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65736973))
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond }
	var steps []step
	for total := time.Duration(0); total < duration; {
		s := step{
			Kind: kinds[rng.IntN(len(kinds))],
			Role: allRoles[rng.IntN(len(allRoles))],
			Pick: rng.IntN(1 << 16),
			Hold: ms(2000, 9000),
			Gap:  ms(1000, 4000),
		}
		switch s.Kind {
		case loss:
			s.Loss = []float64{0.05, 0.1, 0.2, 0.35}[rng.IntN(4)]
		case isolate:
			// Long enough, often, for the session to expire and the
			// controller (or its successor) to fence the node.
			s.Hold = ms(2000, 12000)
		case slowDisk:
			s.Slow = slowDelays[rng.IntN(len(slowDelays))]
			s.SlowOps = slowOps[rng.IntN(len(slowOps))]
		}
		steps = append(steps, s)
		total += s.Hold + s.Gap
	}
	return steps
}

// formatSchedule prints a schedule, one numbered step a line with the
// time it starts at if nothing waits (recovery adds to that).
func formatSchedule(steps []step) string {
	var b strings.Builder
	at := time.Duration(0)
	for i, s := range steps {
		fmt.Fprintf(&b, "  #%-3d t+%-7v %s\n", i+1, at.Round(time.Second), s)
		at += s.Hold + s.Gap
	}
	return b.String()
}

// settings are the environment's choice of seed, length and faults.
type settings struct {
	Seed     uint64
	Duration time.Duration
}

// defaultDuration is the short form, as CI runs it.
const defaultDuration = 45 * time.Second

func loadSettings() (settings, error) {
	s := settings{Seed: uint64(time.Now().UnixNano()), Duration: defaultDuration}
	if v := os.Getenv("SAMSA_NEMESIS_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("invalid SAMSA_NEMESIS_SEED %q: want an unsigned integer", v)
		}
		s.Seed = seed
	}
	if v := os.Getenv("SAMSA_NEMESIS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("invalid SAMSA_NEMESIS_DURATION %q: want a Go duration such as 30m", v)
		}
		s.Duration = d
	}
	return s, nil
}
