// Command failover measures how long acks=all produce stalls when a
// partition leader of a running Samsa (or Kafka) cluster dies.
//
// It creates a topic with replication factor 3 and min.insync.replicas=2,
// picks a partition, and produces to it one record at a time (ProduceSync,
// linger 0, acks=all, idempotent) in a tight loop. After a warm-up it sends
// --signal to the partition leader's process (its PID comes from --pids),
// then keeps producing until another broker has acknowledged a write, plus
// --after. It reports:
//
//   - recovery: from the signal to the first acks=all write acknowledged by
//     a broker other than the signalled one (the client's produce hook says
//     which broker answered; after SIGKILL this is simply the first ack),
//   - how long the signalled node itself still acknowledged writes (after
//     SIGTERM it serves until its controlled shutdown moves leadership),
//   - max gap: the longest time between two consecutive acknowledgements
//     over the whole run (warm-up included), i.e. the produce outage,
//
// together with the killed node, whether it was the active controller, and
// the partition's new leader. The client retries every 50 ms and refreshes
// metadata at most every 50 ms, so the figures are dominated by the
// cluster (failure detection, election) rather than by client back-off.
//
//	failover --bootstrap 127.0.0.1:9092,... --pids 1:123,2:124,3:125 --signal KILL
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// result is what one measurement prints (--json), or one --tsv line.
type result struct {
	Signal    string `json:"signal"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// SignalAt is when the signal was sent, to match the nodes' logs.
	SignalAt      time.Time `json:"signal_at"`
	KilledNode    int32     `json:"killed_node"`
	WasController bool      `json:"killed_node_was_active_controller"`
	NewLeader     int32     `json:"new_leader"`
	RecoveryMs    float64   `json:"recovery_ms"`
	// OldLeaderLastMs is how long after the signal the signalled node
	// still acknowledged writes (controlled shutdown); 0 if it never did.
	// After SIGKILL it can only be a fraction of a millisecond: a write
	// answered just before the signal whose hook ran just after.
	OldLeaderLastMs float64 `json:"old_leader_last_ack_ms"`
	MaxGapMs        float64 `json:"max_gap_ms"`
	AcksBefore      int     `json:"acks_before_signal"`
	AcksAfter       int     `json:"acks_after_signal"`
	ProduceErrors   int     `json:"produce_errors"`
	BeforeP50Ms     float64 `json:"produce_p50_ms_before_signal"`
	RetryBackoffMs  int64   `json:"client_retry_backoff_ms"`
	MetaMinAgeMs    int64   `json:"client_metadata_min_age_ms"`
}

const tsvHeader = "signal killed_node was_controller new_leader recovery_ms max_gap_ms old_leader_last_ack_ms acks_before acks_after errors p50_before_ms"

type opts struct {
	bootstrap  string
	pids       map[int32]int
	signal     syscall.Signal
	sigName    string
	controller string // "avoid", "prefer" or "any"
	warmup     time.Duration
	after      time.Duration
	timeout    time.Duration
	backoff    time.Duration
	jsonOut    bool
	tsvOut     bool

	writes *writeLog
}

// writeLog hears from the client which broker wrote each produced batch
// (franz-go runs the hook on its own goroutine, right after the response).
type writeLog struct {
	mu struct {
		sync.Mutex
		victim   int32
		sigAt    time.Time
		firstNew time.Time // first write by another broker after the signal
		lastOld  time.Time // last write by the victim after the signal
	}
}

// signal notes the victim and returns the time of the signal.
func (w *writeLog) signal(victim int32) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.victim, w.mu.sigAt = victim, time.Now()
	return w.mu.sigAt
}

func (w *writeLog) result() (firstNew, lastOld time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.firstNew, w.mu.lastOld
}

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (w *writeLog) OnProduceBatchWritten(meta kgo.BrokerMetadata, _ string, _ int32, _ kgo.ProduceBatchMetrics) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.mu.sigAt.IsZero():
	case meta.NodeID == w.mu.victim:
		w.mu.lastOld = now
	case w.mu.firstNew.IsZero():
		w.mu.firstNew = now
	}
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "failover: %v\n", err)
		os.Exit(2)
	}
	res, err := o.run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "failover: %v\n", err)
		os.Exit(1)
	}
	switch {
	case o.jsonOut:
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Println(string(b))
	case o.tsvOut:
		fmt.Printf("%s\t%d\t%t\t%d\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t%.2f\n", res.Signal, res.KilledNode, res.WasController,
			res.NewLeader, res.RecoveryMs, res.MaxGapMs, res.OldLeaderLastMs, res.AcksBefore, res.AcksAfter, res.ProduceErrors, res.BeforeP50Ms)
	default:
		fmt.Printf("SIG%s to node %d (active controller: %t), leader of %s-%d; new leader %d\n",
			res.Signal, res.KilledNode, res.WasController, res.Topic, res.Partition, res.NewLeader)
		fmt.Printf("recovery (signal to the first acks=all write by another broker): %.1f ms\n", res.RecoveryMs)
		fmt.Printf("the signalled node still wrote until: %.1f ms after the signal\n", res.OldLeaderLastMs)
		fmt.Printf("longest gap between consecutive acks: %.1f ms\n", res.MaxGapMs)
		fmt.Printf("acks before/after the signal: %d/%d, errors %d, p50 before %.2f ms\n",
			res.AcksBefore, res.AcksAfter, res.ProduceErrors, res.BeforeP50Ms)
	}
}

func parseFlags(args []string) (*opts, error) {
	fs := flag.NewFlagSet("failover", flag.ContinueOnError)
	o := &opts{}
	var pids, sig string
	fs.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "comma-separated `host:port` seed brokers")
	fs.StringVar(&pids, "pids", "", "`id:pid,...`: the process of each node id (required)")
	fs.StringVar(&sig, "signal", "KILL", "signal for the leader's process: KILL (crash) or TERM (controlled shutdown)")
	fs.StringVar(&o.controller, "controller", "avoid", "which leader to signal: avoid (not the active controller), prefer (the active controller) or any")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "produce this long before the signal")
	fs.DurationVar(&o.after, "after", 2*time.Second, "keep producing this long after recovery")
	fs.DurationVar(&o.timeout, "timeout", 90*time.Second, "give up if produce has not recovered within this long")
	fs.DurationVar(&o.backoff, "backoff", 50*time.Millisecond, "client retry back-off and metadata min age")
	fs.BoolVar(&o.jsonOut, "json", false, "print one JSON object")
	fs.BoolVar(&o.tsvOut, "tsv", false, "print one tab-separated line: "+tsvHeader)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch strings.TrimPrefix(strings.ToUpper(sig), "SIG") {
	case "KILL":
		o.signal, o.sigName = syscall.SIGKILL, "KILL"
	case "TERM":
		o.signal, o.sigName = syscall.SIGTERM, "TERM"
	default:
		return nil, fmt.Errorf("invalid --signal %q: want KILL or TERM", sig)
	}
	if o.controller != "avoid" && o.controller != "prefer" && o.controller != "any" {
		return nil, fmt.Errorf("invalid --controller %q: want avoid, prefer or any", o.controller)
	}
	o.pids = map[int32]int{}
	for kv := range strings.SplitSeq(pids, ",") {
		id, pid, ok := strings.Cut(strings.TrimSpace(kv), ":")
		n, err1 := strconv.Atoi(id)
		p, err2 := strconv.Atoi(pid)
		if !ok || err1 != nil || err2 != nil || p <= 0 {
			return nil, fmt.Errorf("invalid --pids entry %q: want node-id:pid", kv)
		}
		o.pids[int32(n)] = p
	}
	if len(o.pids) == 0 {
		return nil, errors.New("--pids is required")
	}
	return o, nil
}

func (o *opts) run() (*result, error) {
	res := &result{Signal: o.sigName, Topic: fmt.Sprintf("samsa-failover-%08x", rand.Uint32()),
		RetryBackoffMs: o.backoff.Milliseconds(), MetaMinAgeMs: o.backoff.Milliseconds()}
	o.writes = &writeLog{}
	cl, err := kgo.NewClient(
		kgo.WithHooks(o.writes),
		kgo.SeedBrokers(strings.Split(o.bootstrap, ",")...),
		kgo.ClientID("samsa-failover"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return o.backoff }),
		kgo.MetadataMinAge(o.backoff),
		kgo.DialTimeout(time.Second),
		kgo.RecordDeliveryTimeout(o.timeout),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	partitions := int32(len(o.pids))
	minISR := "2"
	cr, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, res.Topic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		return nil, fmt.Errorf("create topic %s: %w", res.Topic, err)
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		adm.DeleteTopic(dctx, res.Topic)
	}()
	if err := o.pickPartition(ctx, adm, res); err != nil {
		return nil, err
	}
	pid, ok := o.pids[res.KilledNode]
	if !ok {
		return nil, fmt.Errorf("no --pids entry for node %d, the leader of partition %d", res.KilledNode, res.Partition)
	}

	// The producer loop records every acknowledgement; the hook learns
	// which broker wrote each batch.
	var (
		acks  []time.Time
		lat   []time.Duration
		sigAt time.Time
		start = time.Now()
	)
	rec := &kgo.Record{Topic: res.Topic, Partition: res.Partition, Value: make([]byte, 1024)}
	for ctx.Err() == nil {
		now := time.Now()
		if sigAt.IsZero() && now.Sub(start) >= o.warmup {
			sigAt = o.writes.signal(res.KilledNode)
			if err := syscall.Kill(pid, o.signal); err != nil {
				return nil, fmt.Errorf("signal node %d (pid %d): %w", res.KilledNode, pid, err)
			}
			now = sigAt
		}
		if first, _ := o.writes.result(); !first.IsZero() && now.Sub(first) >= o.after {
			break
		}
		r := *rec
		err := cl.ProduceSync(ctx, &r).FirstErr()
		done := time.Now()
		if err != nil {
			res.ProduceErrors++
			fmt.Fprintf(os.Stderr, "failover: produce at +%v: %v\n", done.Sub(start).Round(time.Millisecond), err)
			continue
		}
		acks = append(acks, done)
		if sigAt.IsZero() {
			res.AcksBefore++
			lat = append(lat, done.Sub(now))
		} else {
			res.AcksAfter++
		}
	}
	firstNew, lastOld := o.writes.result()
	if firstNew.IsZero() {
		return nil, fmt.Errorf("no broker but node %d acknowledged an acks=all produce within %v", res.KilledNode, o.timeout)
	}
	res.SignalAt = sigAt.UTC()
	res.RecoveryMs = ms(firstNew.Sub(sigAt))
	if !lastOld.IsZero() {
		res.OldLeaderLastMs = ms(lastOld.Sub(sigAt))
	}
	for i := 1; i < len(acks); i++ {
		res.MaxGapMs = max(res.MaxGapMs, ms(acks[i].Sub(acks[i-1])))
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		res.BeforeP50Ms = ms(lat[(len(lat)-1)/2])
	}
	md, err := adm.Metadata(ctx, res.Topic)
	if err == nil {
		if p, ok := md.Topics[res.Topic].Partitions[res.Partition]; ok {
			res.NewLeader = p.Leader
		}
	}
	return res, nil
}

// pickPartition waits until every partition has a leader and a full ISR,
// then chooses the partition whose leader is signalled.
func (o *opts) pickPartition(ctx context.Context, adm *kadm.Client, res *result) error {
	for {
		md, err := adm.Metadata(ctx, res.Topic)
		if err == nil {
			t := md.Topics[res.Topic]
			ready := t.Err == nil && len(t.Partitions) > 0
			for _, p := range t.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0 && len(p.ISR) == 3
			}
			if ready {
				return o.choose(md, t, res)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: partitions without a leader and 3 in-sync replicas: %w", res.Topic, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (o *opts) choose(md kadm.Metadata, t kadm.TopicDetail, res *result) error {
	for _, p := range t.Partitions.Sorted() {
		isCtl := p.Leader == md.Controller
		if o.controller == "any" || (o.controller == "avoid") != isCtl {
			res.Partition, res.KilledNode, res.WasController = p.Partition, p.Leader, isCtl
			return nil
		}
	}
	return fmt.Errorf("no partition of %s fits --controller %s (controller %d)", res.Topic, o.controller, md.Controller)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
