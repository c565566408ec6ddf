package server

// Power loss: the node's files are cut to what was fsynced (internal/powerloss)
// and the node restarts on them. A node in this process cannot be switched
// off, so it is frozen through its Fault hook (every later segment write and
// fsync fails), its directories are copied as the disk would hold them after
// the power came back, and the copy is what the node restarts on; the frozen
// original is closed and thrown away.

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/powerloss"
	"github.com/samsa-io/samsa/internal/storage"
)

// poweredNode is one node with a power-loss disk.
type poweredNode struct {
	props []string // config overrides except log.dirs
	dir   string
	disk  *powerloss.Disk
	s     *Server
}

func (n *poweredNode) start(t *testing.T, seed uint64) {
	t.Helper()
	cfg, warnings, err := config.Load("", append([]string{"log.dirs=" + n.dir}, n.props...))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	cfg.ClusterID = "MkU3OEVBNTcwNTJENDM2Qg"
	n.disk = powerloss.New(true, seed)
	if n.s, err = StartWithHooks(context.Background(), cfg, quiet(), nil, Hooks{Fault: n.disk.Fault}); err != nil {
		t.Fatal(err)
	}
}

// powerCycle switches the node off, loses what it had not fsynced, and
// starts it again on what is left.
func (n *poweredNode) powerCycle(t *testing.T, seed uint64) {
	t.Helper()
	n.disk.PowerOff()
	image := filepath.Join(t.TempDir(), "after-power-loss")
	losses, err := n.disk.Image(n.dir, image)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range losses {
		t.Logf("power loss: %v", l)
		if strings.Contains(l.Path, storage.MetadataLogDirName) {
			t.Errorf("the metadata log had unsynced bytes: %v", l)
		}
	}
	n.s.Close() // the frozen node: its own directory is thrown away
	n.dir = image
	n.start(t, seed)
}

func (n *poweredNode) close() {
	if n.s != nil {
		n.s.Close()
	}
}

// padding makes 500 records about 2 MiB: two segments of 1 MiB, the
// smallest segment.bytes.
var padding = strings.Repeat("x", 4000)

// produceAcked produces n records "v<i>:<padding>" one batch of 25 at a time with
// the given acks and returns how many were acknowledged (all, or the test
// fails).
func produceAcked(t *testing.T, addr, topic string, acks kgo.Acks, n int) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(kgo.NoCompression())}
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < n; i += 25 {
		var recs []*kgo.Record
		for j := i; j < min(i+25, n); j++ {
			recs = append(recs, &kgo.Record{Partition: 0, Value: []byte("v" + strconv.Itoa(j) + ":" + padding)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce record %d: %v", i, err)
		}
	}
}

// awaitEndOffset waits up to 30 s for partition 0's high watermark to
// reach want and returns the last one seen. A new leader's high watermark
// may start below what the old leader acknowledged (it learned the old
// one a fetch late) and moves up once its in-sync followers fetch from it,
// as in Kafka; one that never gets there lost acknowledged records.
func awaitEndOffset(t *testing.T, addr, topic string, want int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var hw int64 = -1
	for ctx.Err() == nil {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err == nil {
			if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
				if hw = o.Offset; hw >= want {
					return hw
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return hw
}

// readAll reads partition 0 of topic up to its high watermark and checks
// that it is records "v0:...", "v1:...", ... at offsets 0, 1, ...: a prefix of
// what was produced, nothing corrupt, nothing out of place. It returns the
// high watermark.
func readAll(t *testing.T, addr, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var hw int64 = -1
	for hw < 0 {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err == nil {
			if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
				hw = o.Offset
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("list end offsets: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var next int64
	for next < hw {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", next, hw, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		for _, r := range fs.Records() {
			if v, _, _ := strings.Cut(string(r.Value), ":"); r.Offset != next || v != "v"+strconv.FormatInt(next, 10) {
				t.Fatalf("record at offset %d is %q, want offset %d v%d", r.Offset, v, next, next)
			}
			next++
		}
	}
	return hw
}

// TestPowerLossSingleNode produces acknowledged records to one node,
// cuts its power, and restarts it. With Kafka's default flush policy
// (log.flush.interval.messages and log.flush.interval.ms unset: no fsync
// until a segment rolls) the acknowledged records of the active segment
// are lost — Kafka leaves durability to replication — but recovery is
// clean: what is served is a prefix of what was acknowledged, nothing
// corrupt; the topic (metadata log, fsynced by raft) is there; offsets
// go on from the recovered end. With log.flush.interval.messages=1 every
// append is fsynced before it is acknowledged, and nothing acknowledged
// is lost.
func TestPowerLossSingleNode(t *testing.T) {
	const n = 500
	for _, tc := range []struct {
		name  string
		props []string // broker configs (log.*) and topic configs
		acks  kgo.Acks
		loss  loss
		seed  uint64
	}{
		{"default flush acks=1", nil, kgo.LeaderAck(), mustLose, 1},
		{"default flush acks=all", nil, kgo.AllISRAcks(), mustLose, 2},
		// Small segments: rolled segments are fsynced (in the
		// background), the active one is not; torn tails.
		{"default flush small segments seed 3", []string{"segment.bytes=1048576"}, kgo.AllISRAcks(), mayLose, 3},
		{"default flush small segments seed 4", []string{"segment.bytes=1048576"}, kgo.LeaderAck(), mayLose, 4},
		{"default flush small segments seed 5", []string{"segment.bytes=1048576"}, kgo.LeaderAck(), mayLose, 5},
		{"flush.messages=1 acks=1", []string{"log.flush.interval.messages=1"}, kgo.LeaderAck(), noLoss, 6},
		{"flush.messages=1 acks=all", []string{"log.flush.interval.messages=1"}, kgo.AllISRAcks(), noLoss, 7},
		{"flush.messages=1 small segments", []string{"log.flush.interval.messages=1", "segment.bytes=1048576"}, kgo.LeaderAck(), noLoss, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &poweredNode{dir: t.TempDir(), props: []string{"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0"}}
			topicConfigs := map[string]*string{}
			for _, p := range tc.props {
				if k, v, _ := strings.Cut(p, "="); strings.HasPrefix(k, "log.") {
					node.props = append(node.props, p)
				} else {
					topicConfigs[k] = &v
				}
			}
			node.start(t, tc.seed)
			defer func() { node.close() }()
			const topic = "power"
			cl, err := kgo.NewClient(kgo.SeedBrokers(node.s.Addr("PLAINTEXT")))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, topicConfigs, topic); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			produceAcked(t, node.s.Addr("PLAINTEXT"), topic, tc.acks, n)

			node.powerCycle(t, tc.seed)
			addr := node.s.Addr("PLAINTEXT")
			hw := readAll(t, addr, topic)
			lost := n - hw
			t.Logf("%s: %d of %d acknowledged records lost", tc.name, lost, n)
			switch {
			case hw > n:
				t.Fatalf("high watermark %d after power loss, only %d records were produced", hw, n)
			case tc.loss == mustLose && lost == 0:
				t.Fatalf("no record lost without fsync: the crash model lost nothing")
			case tc.loss == noLoss && lost != 0:
				t.Fatalf("%d acknowledged records lost with log.flush.interval.messages=1", lost)
			}
			// The node takes new records after the recovered ones.
			produceMore(t, addr, topic, hw, 10)
			if got := readAll(t, addr, topic); got != hw+10 {
				t.Fatalf("high watermark %d after 10 more records, want %d", got, hw+10)
			}
		})
	}
}

type loss int

const (
	noLoss   loss = iota // nothing acknowledged may be lost
	mayLose              // unsynced records may be lost (torn tails may keep some)
	mustLose             // nothing was fsynced: the crash must lose records
)

// produceMore appends records "v<from>"... with acks=all, which must land
// at offsets from, from+1, ...
func produceMore(t *testing.T, addr, topic string, from int64, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range int64(n) {
		r := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(fmt.Sprintf("v%d", from+i))})
		if rec, err := r.First(); err != nil || rec.Offset != from+i {
			t.Fatalf("produce after power loss: offset %v, %v; want %d", rec, err, from+i)
		}
	}
}

// kill takes the node down as a power failure does: no controlled
// shutdown (heartbeats stop; the controller fences it when its session
// expires), then every part closed. The node must have been frozen
// (PowerOff) first, so nothing it writes on the way down matters.
func (n *poweredNode) kill() {
	if n.s.lifecycle != nil {
		n.s.lifecycle.Shutdown(0)
	}
	n.s.Close()
	n.s = nil
}

// TestPowerLossOneOfThreeReplicas runs three combined nodes in this
// process, produces with acks=all to a partition with three replicas
// (min.insync.replicas=2) under Kafka's default flush policy (nothing is
// fsynced), and cuts the power of the partition's leader. The other two
// have every acknowledged record in their page cache: after the leader
// restarts on what its disk kept (it loses everything unsynced) and
// catches up, nothing acknowledged is missing; then the two others are
// cut too, one at a time, and nothing is lost either.
func TestPowerLossOneOfThreeReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("three nodes")
	}
	const n, topic = 300, "replicated"
	addrs := freeAddrs(t, 3)
	voters := fmt.Sprintf("controller.quorum.voters=1@%s,2@%s,3@%s", addrs[0], addrs[1], addrs[2])
	nodes := make([]*poweredNode, 3)
	for i := range nodes {
		nodes[i] = &poweredNode{dir: t.TempDir(), props: []string{
			"node.id=" + strconv.Itoa(i+1), voters,
			"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://" + addrs[i],
			"broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=300",
			"replica.lag.time.max.ms=3000",
			"replica.fetch.backoff.ms=50", "replica.fetch.wait.max.ms=100",
		}}
	}
	defer func() {
		for _, nd := range nodes {
			nd.close()
		}
	}()
	startAll := func(ns []*poweredNode, seed uint64) {
		t.Helper()
		errs := make(chan error, len(ns))
		for i, nd := range ns {
			go func() {
				defer func() { errs <- nil }()
				nd.start(t, seed+uint64(i))
			}()
		}
		for range ns {
			<-errs
		}
	}
	startAll(nodes, 10)
	bootstrap := func() []string {
		var out []string
		for _, nd := range nodes {
			if nd.s != nil {
				out = append(out, nd.s.Addr("PLAINTEXT"))
			}
		}
		return out
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	isr2 := "2"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &isr2}, topic); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	produceAcked(t, bootstrap()[0], topic, kgo.AllISRAcks(), n)

	// partition describes partition 0 as the cluster sees it now.
	partition := func() kadm.PartitionDetail {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap()...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for {
			md, err := kadm.NewClient(cl).Metadata(ctx, topic)
			if err == nil {
				if p, ok := md.Topics[topic].Partitions[0]; ok && p.Err == nil && p.Leader >= 0 {
					return p
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("metadata of %s: %v", topic, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// waitISR waits until all three replicas are in sync again.
	waitISR := func() {
		t.Helper()
		for {
			p := partition()
			if len(p.ISR) == 3 {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("ISR %v, want all three replicas", p.ISR)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitISR()
	// The leader first, then the two others, each once.
	first := partition().Leader
	for round, id := range []int32{first, first%3 + 1, (first+1)%3 + 1} {
		nd := nodes[id-1]
		leader := partition().Leader
		nd.disk.PowerOff()
		image := filepath.Join(t.TempDir(), "after-power-loss")
		losses, err := nd.disk.Image(nd.dir, image)
		if err != nil {
			t.Fatal(err)
		}
		lostBytes := int64(0)
		for _, l := range losses {
			lostBytes += l.Size - l.Kept
			t.Logf("round %d: %v", round, l)
		}
		nd.kill()
		t.Logf("round %d: power loss of node %d (leader %d): %d unsynced bytes lost in %d files", round, id, leader, lostBytes, len(losses))
		nd.dir = image
		nd.start(t, uint64(20+round))
		if hw := awaitEndOffset(t, bootstrap()[0], topic, n); hw != n {
			t.Fatalf("round %d: high watermark %d after node %d's power loss, %d records were acknowledged", round, hw, id, n)
		}
		readAll(t, bootstrap()[0], topic)
		waitISR()
	}
	// Two of three at once: the leader and one follower lose their
	// unsynced bytes (and the metadata quorum its majority until they
	// are back); the third has every acknowledged record, and it must
	// be the one they follow.
	leader := partition().Leader
	cut := []*poweredNode{nodes[leader-1], nodes[leader%3]}
	for _, nd := range cut {
		nd.disk.PowerOff()
	}
	for _, nd := range cut {
		image := filepath.Join(t.TempDir(), "after-power-loss")
		losses, err := nd.disk.Image(nd.dir, image)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range losses {
			t.Logf("two of three: %v", l)
		}
		nd.kill()
		nd.dir = image
	}
	startAll(cut, 30)
	if hw := awaitEndOffset(t, bootstrap()[0], topic, n); hw != n {
		t.Fatalf("high watermark %d after two of three replicas lost power, %d records were acknowledged", hw, n)
	}
	readAll(t, bootstrap()[0], topic)
	waitISR()
	produceMore(t, bootstrap()[0], topic, n, 10)
	if hw := readAll(t, bootstrap()[0], topic); hw != n+10 {
		t.Fatalf("high watermark %d at the end, want %d", hw, n+10)
	}
}

// TestPowerLossConcurrentProducersFsyncEach: with
// log.flush.interval.messages=1, three producers (acks=all idempotent,
// acks=all, acks=1) write to four partitions at once, so produce
// requests carry several partitions and appends to one partition share
// fsyncs (group commit). After a power cut every acknowledged record is
// on the node that comes back.
func TestPowerLossConcurrentProducersFsyncEach(t *testing.T) {
	const (
		topic      = "durable"
		partitions = 4
		perClient  = 600
	)
	node := &poweredNode{dir: t.TempDir(), props: []string{"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"log.flush.interval.messages=1"}}
	node.start(t, 11)
	defer func() { node.close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(node.s.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	admCl.Close()

	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		wg    sync.WaitGroup
	)
	for c, opts := range [][]kgo.Opt{
		{kgo.RequiredAcks(kgo.AllISRAcks())},
		{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite()},
		{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()},
	} {
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(node.s.Addr("PLAINTEXT")), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for i := range perClient {
				v := fmt.Sprintf("c%d-%d", c, i)
				cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce %s: %v", v, err)
						return
					}
					mu.Lock()
					acked[v] = true
					mu.Unlock()
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Errorf("flush: %v", err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	node.powerCycle(t, 11)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.s.Addr("PLAINTEXT")), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	for missing := len(acked); missing > 0; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after power loss %d of %d acknowledged records are missing", missing, len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if v := string(r.Value); acked[v] && !seen[v] {
				seen[v] = true
				missing--
			}
		})
	}
	t.Logf("%d acknowledged records, all read back after power loss", len(acked))
}
