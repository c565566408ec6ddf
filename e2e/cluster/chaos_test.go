package cluster

// The kill-loop tests (TestAcknowledgedRecordsSurviveKills and its
// secured variant) pick their victims and downtimes from a seeded random
// source and log the seed first. To rerun a failure with the same
// choices:
//
//	go test ./e2e/cluster -run TestAcknowledgedRecordsSurviveKills -chaos.seed=N
//
// (or SAMSA_CHAOS_SEED=N). Process timing still varies between runs; the
// seed fixes which node is killed each round and for how long.
// -chaos.rounds=N (or SAMSA_CHAOS_ROUNDS=N) runs N kill rounds in each
// test instead of its default, for a longer soak.

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/devcluster"
)

var (
	chaosSeed   = flag.Uint64("chaos.seed", 0, "seed of the chaos tests' random choices (0: SAMSA_CHAOS_SEED, else the clock)")
	chaosRoundN = flag.Int("chaos.rounds", 0, "kill rounds of each kill-loop test (0: SAMSA_CHAOS_ROUNDS, else the test's default)")
)

// chaosRand returns the chaos test's random source and logs its seed.
func chaosRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *chaosSeed
	if seed == 0 {
		if env := os.Getenv("SAMSA_CHAOS_SEED"); env != "" {
			var err error
			if seed, err = strconv.ParseUint(env, 10, 64); err != nil {
				t.Fatalf("SAMSA_CHAOS_SEED=%q: want an unsigned integer", env)
			}
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos seed %d (rerun with -chaos.seed=%d)", seed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed with chaos seed %d", seed)
		}
	})
	return rand.New(rand.NewPCG(seed, 5))
}

// chaosRounds is the number of kill rounds: -chaos.rounds, else
// SAMSA_CHAOS_ROUNDS, else def.
func chaosRounds(t *testing.T, def int) int {
	t.Helper()
	n := *chaosRoundN
	if env := os.Getenv("SAMSA_CHAOS_ROUNDS"); n == 0 && env != "" {
		var err error
		if n, err = strconv.Atoi(env); err != nil || n < 1 {
			t.Fatalf("SAMSA_CHAOS_ROUNDS=%q: want a positive integer", env)
		}
	}
	if n == 0 {
		n = def
	}
	return n
}

// ack is a record the broker acknowledged: where it went and its sequence
// number (the record's value).
type ack struct {
	offset int64
	seq    int
}

// TestAcknowledgedRecordsSurviveKills runs the kill loop (killLoop.run)
// on three combined nodes with PLAINTEXT listeners and no authorizer.
func TestAcknowledgedRecordsSurviveKills(t *testing.T) {
	c := startCluster(t, 3)
	killLoop{rounds: chaosRounds(t, 6), admin: kadm.NewClient(client(t, c))}.run(t, chaosRand(t), c)
}

// killLoop is the workload and the checks of the kill-loop tests, run
// on a cluster each test sets up (plaintext, secured).
//
// It writes continuously with acks=all to a topic with replication
// factor 3 and min.insync.replicas 2 while, round after round, a
// partition leader or the active controller is killed with SIGKILL and
// restarted. At the end every acknowledged record must be in the log
// exactly once, at the offset it was acknowledged with and in order, and
// every record a consumer saw during the chaos must still be there
// (nothing it read was later lost).
type killLoop struct {
	rounds int
	// admin creates the topic and watches leaders and the ISR.
	admin *kadm.Client
	// clientOpts are added to the producer and the consumers (TLS and
	// SASL on a secured cluster).
	clientOpts []kgo.Opt
	// consumerOpts are added to the consumer that reads during the chaos.
	consumerOpts []kgo.Opt
	// nodeCheck, when set, runs on every node once the topic is fully
	// replicated, and on each killed node as soon as it serves clients
	// again (before the round waits for its replicas to catch up); an
	// error fails the test.
	nodeCheck func(ctx context.Context, node int32) error
	// whileDown, when set, runs while each round's victim is down, after
	// the kill (the downtime lasts until it returns if it takes longer);
	// an error fails the test.
	whileDown func(ctx context.Context, round int) error
}

// chaosTopic is the kill loop's topic.
const chaosTopic = "chaos"

func (k killLoop) run(t *testing.T, rng *rand.Rand, c *devcluster.Cluster) {
	const partitions = 3
	topic, adm := chaosTopic, k.admin
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+time.Duration(k.rounds)*30*time.Second)
	defer cancel()
	minISR := "2"
	resp, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitFullISR(t, adm, topic, 30*time.Second)
	if k.nodeCheck != nil {
		for _, n := range c.Nodes {
			if err := k.nodeCheck(ctx, n.ID); err != nil {
				t.Fatalf("node %d before the chaos: %v", n.ID, err)
			}
		}
	}
	clientWith := func(opts ...kgo.Opt) *kgo.Client {
		return client(t, c, append(slices.Clone(k.clientOpts), opts...)...)
	}

	// Producer: sequence numbers per partition, acks=all, idempotent.
	prod := clientWith(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5*time.Second),
		kgo.RecordDeliveryTimeout(4*time.Minute),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(200*time.Millisecond),
	)
	var (
		mu     sync.Mutex
		acked  [partitions][]ack
		failed atomic.Int64
		stop   atomic.Bool
		wg     sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for seq := 0; !stop.Load(); seq++ {
			for p := range int32(partitions) {
				r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(strconv.Itoa(seq))}
				s := seq
				prod.Produce(ctx, r, func(r *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
						return
					}
					mu.Lock()
					acked[r.Partition] = append(acked[r.Partition], ack{r.Offset, s})
					mu.Unlock()
				})
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()

	// Consumer: everything it sees, by partition and offset.
	var seenMu sync.Mutex
	seen := [partitions]map[int64]string{{}, {}, {}}
	cons := clientWith(append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.MetadataMinAge(200 * time.Millisecond)}, k.consumerOpts...)...)
	cctx, ccancel := context.WithCancel(ctx)
	var consumerDone sync.WaitGroup
	consumerDone.Add(1)
	go func() {
		defer consumerDone.Done()
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			seenMu.Lock()
			fs.EachRecord(func(r *kgo.Record) { seen[r.Partition][r.Offset] = string(r.Value) })
			seenMu.Unlock()
		}
	}()

	// ackedPer counts acknowledgements per partition so far.
	ackedPer := func() []int {
		mu.Lock()
		defer mu.Unlock()
		n := make([]int, partitions)
		for p := range n {
			n[p] = len(acked[p])
		}
		return n
	}
	for round := 1; round <= k.rounds; round++ {
		time.Sleep(time.Second)
		parts, controller, err := describe(ctx, adm, topic)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		victim, why := parts[int32(rng.IntN(partitions))].Leader, "partition leader"
		if round%3 == 0 && controller > 0 {
			victim, why = controller, "active controller"
		}
		if victim <= 0 {
			t.Fatalf("round %d: no victim in %+v", round, parts)
		}
		t.Logf("round %d: killing node %d (%s)", round, victim, why)
		c.Node(victim).Kill()
		back := time.Now().Add(time.Duration(1500+rng.IntN(2500)) * time.Millisecond)
		if k.whileDown != nil {
			if err := k.whileDown(ctx, round); err != nil {
				t.Fatalf("round %d, node %d down: %v", round, victim, err)
			}
		}
		time.Sleep(time.Until(back))
		if err := c.Node(victim).Start(); err != nil {
			t.Fatalf("round %d: restart node %d: %v", round, victim, err)
		}
		if k.nodeCheck != nil {
			if err := k.nodeCheck(ctx, victim); err != nil {
				t.Fatalf("round %d, node %d restarted: %v", round, victim, err)
			}
		}
		waitFullISR(t, adm, topic, 60*time.Second)
		// Progress: once the victim is back, every partition must take
		// new acknowledged writes (a liveness bound, not a speed one).
		if err := waitProgress(ackedPer, 30*time.Second); err != nil {
			t.Fatalf("round %d, after node %d (%s) came back: %v", round, victim, why, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	ccancel()
	consumerDone.Wait()

	// Read every partition from the start to its high watermark.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	final := [partitions][]ack{}
	reader := clientWith(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	remaining := 0
	ends.Each(func(o kadm.ListedOffset) { remaining += int(o.Offset) })
	for read := 0; read < remaining; {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading back: %d of %d records", read, remaining)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seq, _ := strconv.Atoi(string(r.Value))
			final[r.Partition] = append(final[r.Partition], ack{r.Offset, seq})
			read++
		})
	}

	mu.Lock()
	defer mu.Unlock()
	total := 0
	for p := range partitions {
		byOffset := map[int64]int{}
		for i, r := range final[p] {
			if i > 0 && r.seq <= final[p][i-1].seq {
				t.Errorf("partition %d: offset %d holds seq %d after seq %d: out of order or duplicated", p, r.offset, r.seq, final[p][i-1].seq)
			}
			byOffset[r.offset] = r.seq
		}
		for _, a := range acked[p] {
			got, ok := byOffset[a.offset]
			if !ok || got != a.seq {
				t.Errorf("partition %d: acknowledged seq %d at offset %d is lost (found %v, %v)", p, a.seq, a.offset, got, ok)
			}
		}
		seenMu.Lock()
		for off, v := range seen[p] {
			if got, ok := byOffset[off]; !ok || strconv.Itoa(got) != v {
				t.Errorf("partition %d: a consumer read %q at offset %d, which is no longer there", p, v, off)
			}
		}
		seenMu.Unlock()
		total += len(acked[p])
		t.Logf("partition %d: %d acknowledged, %d in the log, %d seen by the consumer", p, len(acked[p]), len(final[p]), len(seen[p]))
	}
	t.Logf("checked %d acknowledged records over %d kill rounds (%d produce attempts failed)", total, k.rounds, failed.Load())
}

// waitProgress waits until every partition's count from counts grows past
// what it is now, for at most limit.
func waitProgress(counts func() []int, limit time.Duration) error {
	from := counts()
	for deadline := time.Now().Add(limit); ; {
		now := counts()
		stuck := -1
		for p := range now {
			if now[p] <= from[p] {
				stuck = p
				break
			}
		}
		if stuck < 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("partition %d acknowledged nothing new in %v (%d acknowledged in all)", stuck, limit, now[stuck])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
