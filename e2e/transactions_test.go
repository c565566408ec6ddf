package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// Transactions end to end: consume-transform-produce loops with franz-go's
// GroupTransactSession and librdkafka's transactional producer, whose
// transforming process is killed (and, separately, whose broker restarts)
// in the middle of transactions, and a read_committed consumer of the
// output that must see every input record exactly once; a zombie producer
// fenced; aborted records hidden from read_committed only; an expired
// transaction aborted by the coordinator.

// txnBroker is a Samsa server for transaction tests that can restart on
// its data directory. Few __transaction_state and __consumer_offsets
// partitions keep start-up and loading fast.
type txnBroker struct {
	t     *testing.T
	dir   string
	extra []string
	srv   *server.Server
}

func startTxnBroker(t *testing.T, extra ...string) *txnBroker {
	b := &txnBroker{t: t, dir: t.TempDir(), extra: append([]string{
		"group.initial.rebalance.delay.ms=0",
		"transaction.state.log.num.partitions=4",
		"offsets.topic.num.partitions=4",
	}, extra...)}
	b.srv = servertest.StartIn(t, b.dir, b.extra...)
	return b
}

func (b *txnBroker) addr() string { return servertest.Addr(b.srv) }

// restart stops the server cleanly and starts it again on the same data.
// The port changes, so clients must be made anew.
func (b *txnBroker) restart() {
	b.t.Helper()
	if err := b.srv.Close(); err != nil {
		b.t.Fatalf("stop: %v", err)
	}
	b.srv = servertest.StartIn(b.t, b.dir, b.extra...)
}

// idxOf is the input index a record carries in its idxHeader.
func idxOf(t *testing.T, headers []kgo.RecordHeader) int {
	t.Helper()
	for _, h := range headers {
		if h.Key == idxHeader {
			i, err := strconv.Atoi(string(h.Value))
			if err != nil {
				t.Fatalf("bad %s header %q", idxHeader, h.Value)
			}
			return i
		}
	}
	t.Fatalf("record without %s header", idxHeader)
	return -1
}

// readOutput consumes topic with the given isolation level until want
// records arrived, then a little longer so duplicates would show, and
// returns how often each input index was seen.
func readOutput(t *testing.T, ctx context.Context, addr, topic string, level kgo.IsolationLevel, want int) map[int]int {
	t.Helper()
	cl := newKgo(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	seen := map[int]int{}
	n := 0
	var settle <-chan time.Time
	for {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.Fatalf("consume %s[%d]: %v", tp, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			seen[idxOf(t, r.Headers)]++
			n++
		})
		if n >= want && settle == nil {
			settle = time.After(time.Second)
		}
		select {
		case <-settle:
			return seen
		case <-ctx.Done():
			t.Fatalf("read %d of %d records from %s: %v", n, want, topic, ctx.Err())
		default:
		}
	}
}

// checkExactlyOnce fails unless every index below n was seen exactly once.
func checkExactlyOnce(t *testing.T, seen map[int]int, n int) {
	t.Helper()
	var missing, dup []int
	for i := range n {
		switch c := seen[i]; {
		case c == 0:
			missing = append(missing, i)
		case c > 1:
			dup = append(dup, i)
		}
	}
	if len(missing) > 0 || len(dup) > 0 || len(seen) != n {
		t.Fatalf("exactly once violated: %d distinct of %d, missing %v, duplicated %v", len(seen), n, missing, dup)
	}
}

// checkKillsLeftAborted fails unless read_uncommitted sees more records
// than n: the killed incarnations' open transactions were really aborted
// (written, then hidden), not merely never started.
func checkKillsLeftAborted(t *testing.T, ctx context.Context, addr, topic string, n int) {
	t.Helper()
	total := 0
	for _, c := range readOutput(t, ctx, addr, topic, kgo.ReadUncommitted(), n) {
		total += c
	}
	if total <= n {
		t.Fatalf("read_uncommitted saw %d records, want more than %d: no aborted transaction in the output", total, n)
	}
	t.Logf("%d records written, %d of them in aborted transactions", total, total-n)
}

// franzTransformer is one incarnation of a GroupTransactSession copying
// input to output; kill abandons it mid-transaction.
type franzTransformer struct {
	sess   *kgo.GroupTransactSession
	dialer *cuttableDialer
}

func newFranzTransformer(t *testing.T, addr, in string) *franzTransformer {
	d := &cuttableDialer{}
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(addr),
		kgo.Dialer(d.dial),
		kgo.TransactionalID("eos-franz"),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup("eos-franz"),
		// Static membership: the next incarnation takes over at once
		// instead of waiting for the killed one's session to time out.
		kgo.InstanceID("transformer"),
		kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RequestTimeoutOverhead(5*time.Second),
		kgo.RetryTimeout(20*time.Second),
	)
	if err != nil {
		t.Fatalf("NewGroupTransactSession: %v", err)
	}
	return &franzTransformer{sess: sess, dialer: d}
}

// run commits up to txns transactions (forever if txns < 0) of at most 15
// records each. With kill set it then begins one more, produces its
// records, and dies without ending it. It returns how many it committed.
func (f *franzTransformer) run(t *testing.T, ctx context.Context, out string, txns int, kill bool) int {
	committed := 0
	for txns < 0 || committed < txns || kill {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := f.sess.PollRecords(pctx, 15)
		cancel()
		if ctx.Err() != nil {
			return committed
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := f.sess.Begin(); err != nil {
			t.Fatalf("Begin: %v", err)
		}
		outs := make([]*kgo.Record, len(recs))
		for i, r := range recs {
			outs[i] = &kgo.Record{Topic: out, Key: r.Key, Value: r.Value, Headers: r.Headers}
		}
		if err := f.sess.ProduceSync(ctx, outs...).FirstErr(); err != nil {
			t.Logf("produce in transaction: %v (the transaction aborts)", err)
		}
		if kill && (txns < 0 || committed >= txns) {
			f.kill()
			return committed
		}
		ok, err := f.sess.End(ctx, kgo.TryCommit)
		if err != nil && ctx.Err() == nil {
			t.Logf("End: %v", err)
		}
		if ok {
			committed++
		}
	}
	return committed
}

// kill cuts the session off the network and closes it: no EndTxn, no
// LeaveGroup reach the broker, as when the process dies.
func (f *franzTransformer) kill() {
	f.dialer.sever()
	f.sess.Close()
}

func TestTxnFranzExactlyOnce(t *testing.T) {
	// A new cluster runs transaction.version 2 (KIP-890: franz-go bumps
	// the epoch with every EndTxn and lets its produce requests add the
	// partitions); kill-tv0 runs at the level older clusters have.
	for _, mode := range []string{"kill", "restart", "kill-tv0"} {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			b := startTxnBroker(t)
			if mode == "kill-tv0" {
				setTransactionVersion(t, ctx, b.addr(), 0)
			}
			const n = 240
			groupSetup(t, ctx, b.addr(), "eos-in", 3, 7, n)
			franzCreate(t, ctx, newKadm(t, b.addr()), "eos-out", 3, nil)

			// Three incarnations die in the middle of a transaction after
			// committing a few; in restart mode the broker restarts while
			// that transaction is open.
			for range 3 {
				f := newFranzTransformer(t, b.addr(), "eos-in")
				f.run(t, ctx, "eos-out", 2, true)
				if mode == "restart" {
					b.restart()
				}
			}
			last := newFranzTransformer(t, b.addr(), "eos-in")
			defer last.sess.Close()
			rctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				last.run(t, rctx, "eos-out", -1, false)
			}()
			seen := readOutput(t, ctx, b.addr(), "eos-out", kgo.ReadCommitted(), n)
			stop()
			<-done
			checkExactlyOnce(t, seen, n)
			checkKillsLeftAborted(t, ctx, b.addr(), "eos-out", n)
		})
	}
}

// rdTransformer is one incarnation of a librdkafka consumer and
// transactional producer copying input to output.
type rdTransformer struct {
	c *kafka.Consumer
	p *kafka.Producer
}

func newRdTransformer(t *testing.T, ctx context.Context, l *rdLogs, addr, in string) *rdTransformer {
	c, err := kafka.NewConsumer(l.config(addr, kafka.ConfigMap{
		"group.id":           "eos-rd",
		"group.instance.id":  "transformer",
		"enable.auto.commit": false,
		"isolation.level":    "read_committed",
		"auto.offset.reset":  "earliest",
		"fetch.wait.max.ms":  100,
	}))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	if err := c.Subscribe(in, nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	p, err := kafka.NewProducer(l.config(addr, kafka.ConfigMap{
		"transactional.id":       "eos-rd",
		"transaction.timeout.ms": 20000,
	}))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	return &rdTransformer{c: c, p: p}
}

// run commits txns transactions (until ctx ends if txns < 0) of up to 15
// records; with kill it then produces one more transaction's records and
// closes both clients without ending it.
func (r *rdTransformer) run(t *testing.T, ctx context.Context, out string, txns int, kill bool) {
	committed := 0
	for ctx.Err() == nil && (txns < 0 || committed < txns || kill) {
		var msgs []*kafka.Message
		for len(msgs) < 15 {
			ev := r.c.Poll(100)
			if ev == nil {
				break
			}
			switch e := ev.(type) {
			case *kafka.Message:
				msgs = append(msgs, e)
			case kafka.Error:
				t.Logf("consumer: %v", e)
			}
		}
		if len(msgs) == 0 {
			continue
		}
		if err := r.p.BeginTransaction(); err != nil {
			t.Fatalf("BeginTransaction: %v", err)
		}
		// Wait for the delivery reports, so a killed incarnation's records
		// are really in the log. (Flush would also wait for the Events
		// channel, which nobody reads.)
		reports := make(chan kafka.Event, len(msgs))
		for _, m := range msgs {
			err := r.p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &out, Partition: kafka.PartitionAny},
				Key: m.Key, Value: m.Value, Headers: m.Headers}, reports)
			if err != nil {
				t.Fatalf("Produce: %v", err)
			}
		}
		for range msgs {
			select {
			case ev := <-reports:
				if m, ok := ev.(*kafka.Message); ok && m.TopicPartition.Error != nil {
					t.Logf("delivery in transaction: %v", m.TopicPartition.Error)
				}
			case <-ctx.Done():
				r.p.Close()
				r.c.Close()
				return
			}
		}
		if kill && (txns < 0 || committed >= txns) {
			r.p.Close()
			r.c.Close()
			return
		}
		pos, err := r.c.Position(assignedOf(t, r.c))
		if err != nil {
			t.Fatalf("Position: %v", err)
		}
		meta, err := r.c.GetConsumerGroupMetadata()
		if err != nil {
			t.Fatalf("GetConsumerGroupMetadata: %v", err)
		}
		if err := r.p.SendOffsetsToTransaction(ctx, pos, meta); err != nil {
			t.Fatalf("SendOffsetsToTransaction: %v", err)
		}
		if err := r.p.CommitTransaction(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			t.Fatalf("CommitTransaction: %v", err)
		}
		committed++
	}
	r.p.Close()
	r.c.Close()
}

func assignedOf(t *testing.T, c *kafka.Consumer) []kafka.TopicPartition {
	tps, err := c.Assignment()
	if err != nil {
		t.Fatalf("Assignment: %v", err)
	}
	return tps
}

func TestTxnConfluentExactlyOnce(t *testing.T) {
	for _, mode := range []string{"kill", "restart"} {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			l := newRdLogs(t)
			b := startTxnBroker(t)
			const n = 150
			groupSetup(t, ctx, b.addr(), "eos-rd-in", 3, 11, n)
			franzCreate(t, ctx, newKadm(t, b.addr()), "eos-rd-out", 3, nil)
			for range 3 {
				newRdTransformer(t, ctx, l, b.addr(), "eos-rd-in").run(t, ctx, "eos-rd-out", 2, true)
				if mode == "restart" {
					b.restart()
				}
			}
			rctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			last := newRdTransformer(t, ctx, l, b.addr(), "eos-rd-in")
			go func() {
				defer close(done)
				last.run(t, rctx, "eos-rd-out", -1, false)
			}()
			seen := readOutput(t, ctx, b.addr(), "eos-rd-out", kgo.ReadCommitted(), n)
			stop()
			<-done
			checkExactlyOnce(t, seen, n)
			checkKillsLeftAborted(t, ctx, b.addr(), "eos-rd-out", n)
		})
	}
}

// txnProducer is a franz-go transactional producer.
func txnProducer(t *testing.T, addr, id string, opts ...kgo.Opt) *kgo.Client {
	return newKgo(t, addr, append([]kgo.Opt{kgo.TransactionalID(id), kgo.DefaultProduceTopic("txn-vis")}, opts...)...)
}

// produceTxn produces the values as one transaction and ends it.
func produceTxn(t *testing.T, ctx context.Context, cl *kgo.Client, commit bool, idx ...int) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, i := range idx {
		r := &kgo.Record{Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: idxHeader, Value: []byte(strconv.Itoa(i))}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("EndTransaction(commit=%v): %v", commit, err)
	}
}

func TestTxnAbortedVisibility(t *testing.T) {
	ctx := testContext(t)
	b := startTxnBroker(t)
	adm := newKadm(t, b.addr())
	franzCreate(t, ctx, adm, "txn-vis", 1, nil)
	cl := txnProducer(t, b.addr(), "vis")
	produceTxn(t, ctx, cl, true, 0, 1, 2) // offsets 0-2, commit marker 3
	produceTxn(t, ctx, cl, false, 3, 4)   // offsets 4-5, abort marker 6
	produceTxn(t, ctx, cl, true, 5, 6, 7) // offsets 7-9, commit marker 10

	committed := readOutput(t, ctx, b.addr(), "txn-vis", kgo.ReadCommitted(), 6)
	for _, i := range []int{0, 1, 2, 5, 6, 7} {
		if committed[i] != 1 {
			t.Errorf("read_committed saw record %d %d times, want once", i, committed[i])
		}
	}
	if committed[3]+committed[4] != 0 {
		t.Errorf("read_committed saw aborted records: %v", committed)
	}
	uncommitted := readOutput(t, ctx, b.addr(), "txn-vis", kgo.ReadUncommitted(), 8)
	for i := range 8 {
		if uncommitted[i] != 1 {
			t.Errorf("read_uncommitted saw record %d %d times, want once", i, uncommitted[i])
		}
	}

	// The raw answer: read_committed gets the aborted transaction and the
	// last stable offset; read_uncommitted gets no list. (kgo sends the
	// newest version, which names topics by id.)
	td, err := adm.ListTopics(ctx, "txn-vis")
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(level int8) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.IsolationLevel = -1, 1<<20, level
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "txn-vis", td["txn-vis"].ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	rc := fetch(1)
	pid := rc.AbortedTransactions
	if rc.ErrorCode != 0 || rc.HighWatermark != 11 || rc.LastStableOffset != 11 || len(pid) != 1 || pid[0].FirstOffset != 4 || pid[0].ProducerID < 0 {
		t.Errorf("read_committed fetch: error %d hw %d lso %d aborted %+v; want hw 11 lso 11, one aborted txn from offset 4",
			rc.ErrorCode, rc.HighWatermark, rc.LastStableOffset, rc.AbortedTransactions)
	}
	if ru := fetch(0); ru.ErrorCode != 0 || ru.LastStableOffset != 11 || ru.AbortedTransactions != nil {
		t.Errorf("read_uncommitted fetch: error %d lso %d aborted %+v; want lso 11 and no list", ru.ErrorCode, ru.LastStableOffset, ru.AbortedTransactions)
	}

	// An open transaction holds the last stable offset at its first record.
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	listLatest := func(level int8) int64 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID, req.IsolationLevel = -1, level
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "txn-vis"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].Offset
	}
	if got := listLatest(1); got != 11 {
		t.Errorf("ListOffsets latest read_committed with an open transaction at 11: %d, want 11", got)
	}
	if got := listLatest(0); got != 12 {
		t.Errorf("ListOffsets latest read_uncommitted: %d, want 12", got)
	}
	if got := fetch(1); got.LastStableOffset != 11 || got.HighWatermark != 12 {
		t.Errorf("fetch with an open transaction: lso %d hw %d, want 11 and 12", got.LastStableOffset, got.HighWatermark)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// The commit's markers are written after EndTxn answers, as in
	// Kafka: the last stable offset gets there a moment later.
	got := listLatest(1)
	for deadline := time.Now().Add(10 * time.Second); got != 13 && time.Now().Before(deadline); got = listLatest(1) {
		time.Sleep(20 * time.Millisecond)
	}
	if got != 13 {
		t.Errorf("ListOffsets latest read_committed after commit: %d, want 13", got)
	}
}

func TestTxnZombieFenced(t *testing.T) {
	ctx := testContext(t)
	b := startTxnBroker(t)
	franzCreate(t, ctx, newKadm(t, b.addr()), "txn-vis", 1, nil)
	zombie := txnProducer(t, b.addr(), "zombie", kgo.RecordRetries(2))
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rec := func(i int) *kgo.Record {
		return &kgo.Record{Value: []byte("z"), Headers: []kgo.RecordHeader{{Key: idxHeader, Value: []byte(strconv.Itoa(i))}}}
	}
	if err := zombie.ProduceSync(ctx, rec(0)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A new instance with the same transactional id bumps the epoch: the
	// zombie's open transaction is aborted, and it is fenced.
	fresh := txnProducer(t, b.addr(), "zombie")
	produceTxn(t, ctx, fresh, true, 1, 2)

	err := zombie.ProduceSync(ctx, rec(3)).FirstErr()
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Errorf("zombie produce: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Error("zombie committed its transaction")
	}

	// The commit's markers are written after EndTxn is answered: wait
	// for them (PrepareCommit meanwhile).
	adm := newKadm(t, b.addr())
	var d kadm.DescribedTransaction
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		dt, err := adm.DescribeTransactions(ctx, "zombie")
		if err != nil {
			t.Fatal(err)
		}
		if d = dt["zombie"]; d.State != "PrepareCommit" || time.Now().After(deadline) {
			break
		}
	}
	if d.Err != nil || d.ProducerEpoch < 1 || d.State != "CompleteCommit" {
		t.Errorf("zombie described: %+v, want CompleteCommit at epoch >= 1", d)
	}
	seen := readOutput(t, ctx, b.addr(), "txn-vis", kgo.ReadCommitted(), 2)
	if len(seen) != 2 || seen[1] != 1 || seen[2] != 1 {
		t.Errorf("read_committed after fencing: %v, want records 1 and 2 once", seen)
	}
}

func TestTxnTimeoutAborted(t *testing.T) {
	ctx := testContext(t)
	b := startTxnBroker(t, "transaction.abort.timed.out.transaction.cleanup.interval.ms=100")
	adm := newKadm(t, b.addr())
	franzCreate(t, ctx, adm, "txn-vis", 1, nil)
	cl := txnProducer(t, b.addr(), "slow", kgo.TransactionTimeout(time.Second), kgo.RecordRetries(2))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("late")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The coordinator aborts the transaction at a bumped epoch after its
	// one-second timeout.
	var d kadm.DescribedTransaction
	for {
		dt, err := adm.DescribeTransactions(ctx, "slow")
		if err != nil {
			t.Fatal(err)
		}
		d = dt["slow"]
		if d.State == "CompleteAbort" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("transaction still %q (%v) after its timeout", d.State, d.Err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if d.ProducerEpoch != 1 {
		t.Errorf("aborted at epoch %d, want 1 (the fence)", d.ProducerEpoch)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Error("commit after the coordinator aborted the transaction succeeded")
	}
	// The record is readable uncommitted and invisible committed; the
	// abort marker moved the last stable offset past it.
	for name, list := range map[string]func(context.Context, ...string) (kadm.ListedOffsets, error){
		"read_uncommitted": adm.ListEndOffsets, "read_committed": adm.ListCommittedOffsets,
	} {
		ends, err := list(ctx, "txn-vis")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := ends.Lookup("txn-vis", 0); o.Offset != 2 {
			t.Errorf("%s end offset %d, want 2 (record and abort marker)", name, o.Offset)
		}
	}
	ru := newKgo(t, b.addr(), kgo.ConsumeTopics("txn-vis"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	uctx, ucancel := context.WithTimeout(ctx, 5*time.Second)
	defer ucancel()
	if fs := ru.PollFetches(uctx); fs.NumRecords() != 1 || string(fs.Records()[0].Value) != "late" {
		t.Errorf("read_uncommitted saw %d records, want the aborted one", fs.NumRecords())
	}
	rc := newKgo(t, b.addr(), kgo.ConsumeTopics("txn-vis"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if fs := rc.PollFetches(pctx); fs.NumRecords() != 0 {
		t.Errorf("read_committed saw %d records of an aborted transaction", fs.NumRecords())
	}
}

// rawTxn drives one transactional id with raw requests, as a client would
// send them at the versions given, so a test can send what a well-behaved
// client never sends: a write after its transaction ended.
type rawTxn struct {
	t      *testing.T
	ctx    context.Context
	cl     *kgo.Client
	id     string
	pid    int64
	epoch  int16
	seq    int32
	topic  string
	tv2    bool // EndTxn v5 and Produce v12 (transaction version 2)
	offset int64
}

func newRawTxn(t *testing.T, ctx context.Context, addr, id, topic string, tv2 bool) *rawTxn {
	t.Helper()
	// The client sends each request at the highest version both know:
	// cap those that choose the transaction version.
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.AddPartitionsToTxn.Int16(), 3)
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 11)
	v.SetMaxKeyVersion(kmsg.EndTxn.Int16(), 3)
	if tv2 {
		v.SetMaxKeyVersion(kmsg.Produce.Int16(), 12)
		v.SetMaxKeyVersion(kmsg.EndTxn.Int16(), 5)
	}
	r := &rawTxn{t: t, ctx: ctx, cl: newKgo(t, addr, kgo.MaxVersions(v)), id: id, topic: topic, tv2: tv2}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, r.cl)
		if err == nil && resp.ErrorCode == 0 {
			r.pid, r.epoch = resp.ProducerID, resp.ProducerEpoch
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("InitProducerId: %v %v", err, resp)
		}
	}
}

// add adds the partition with the client's AddPartitionsToTxn v3 (a
// transaction version 1 client; a version 2 client lets the produce add it).
func (r *rawTxn) add() {
	r.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = r.id, r.pid, r.epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: r.topic, Partitions: []int32{0}}}
	resp, err := r.cl.Request(r.ctx, req)
	if err != nil || resp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode != 0 {
		r.t.Fatalf("AddPartitionsToTxn: %v %+v", err, resp)
	}
}

// produce sends one transactional record at the current epoch and the
// next sequence, and returns the partition's error code.
func (r *rawTxn) produce(value string) int16 {
	r.t.Helper()
	batch := record.Build(record.BuildOptions{
		Producer:      &record.ProducerInfo{ID: r.pid, Epoch: r.epoch, BaseSequence: r.seq},
		Transactional: true,
	}, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte(value)}})
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &r.id, -1, 10000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: r.topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}}}
	resp, err := r.cl.Request(r.ctx, req)
	if err != nil {
		r.t.Fatalf("produce: %v", err)
	}
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode == 0 {
		r.seq++
	}
	return p.ErrorCode
}

// end ends the transaction and waits until its markers are written (the
// next AddPartitionsToTxn or EndTxn no longer meets CONCURRENT_TRANSACTIONS).
func (r *rawTxn) end(commit bool) {
	r.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = r.id, r.pid, r.epoch, commit
	kresp, err := r.cl.Request(r.ctx, req)
	if err != nil || kresp.(*kmsg.EndTxnResponse).ErrorCode != 0 {
		r.t.Fatalf("EndTxn: %v %+v", err, kresp)
	}
	resp := kresp.(*kmsg.EndTxnResponse)
	if r.tv2 && (resp.ProducerID != r.pid || resp.ProducerEpoch != r.epoch+1) {
		r.t.Fatalf("EndTxn v5 answered %d/%d, want the epoch bumped from %d/%d", resp.ProducerID, resp.ProducerEpoch, r.pid, r.epoch)
	}
	adm := kadm.NewClient(r.cl)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		dt, err := adm.DescribeTransactions(r.ctx, r.id)
		if err == nil && strings.HasPrefix(dt[r.id].State, "Complete") {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("transaction never completed: %v %+v", err, dt)
		}
	}
}

// stableOffsets are the partition's high watermark and last stable offset.
func (r *rawTxn) stableOffsets() (hw, lso int64) {
	r.t.Helper()
	adm := kadm.NewClient(r.cl)
	end, err := adm.ListEndOffsets(r.ctx, r.topic)
	if err != nil {
		r.t.Fatal(err)
	}
	committed, err := adm.ListCommittedOffsets(r.ctx, r.topic)
	if err != nil {
		r.t.Fatal(err)
	}
	e, _ := end.Lookup(r.topic, 0)
	c, _ := committed.Lookup(r.topic, 0)
	return e.Offset, c.Offset
}

// TestTxnLateWriteRefused is KIP-890's hanging transaction: a write of a
// transaction that arrives at the partition after the transaction's
// markers must not open a new transaction there, which nobody would ever
// end and which would hold every read_committed consumer at its first
// offset. Part 1 refuses it after asking the coordinator (a version 1
// client, Produce v11: TRANSACTION_ABORTABLE, the partition is not in the
// transaction), part 2 by the epoch the commit bumped (Produce v12:
// INVALID_PRODUCER_EPOCH). With transaction.partition.verification.enable
// off the version 1 write opens the hanging transaction, as in Kafka.
func TestTxnLateWriteRefused(t *testing.T) {
	ctx := testContext(t)
	b := startTxnBroker(t)
	adm := newKadm(t, b.addr())
	for _, tc := range []struct {
		name     string
		tv2      bool
		verify   bool
		wantLate int16
	}{
		{"v1", false, true, kerr.TransactionAbortable.Code},
		{"v2", true, true, kerr.InvalidProducerEpoch.Code},
		{"v1 unverified", false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "late-" + strings.ReplaceAll(tc.name, " ", "-")
			franzCreate(t, ctx, adm, topic, 1, nil)
			setVerification(t, ctx, adm, tc.verify)
			r := newRawTxn(t, ctx, b.addr(), "tx-"+topic, topic, tc.tv2)
			if !tc.tv2 {
				r.add()
			}
			if code := r.produce("a"); code != 0 {
				t.Fatalf("produce in the transaction: %v", kerr.ErrorForCode(code))
			}
			r.end(true)
			hw, lso := r.stableOffsets()
			if hw != 2 || lso != 2 {
				t.Fatalf("after the commit: high watermark %d, last stable offset %d; want 2, 2", hw, lso)
			}
			// The late write: same producer, same epoch as the ended
			// transaction, next sequence.
			if code := r.produce("late"); code != tc.wantLate {
				t.Errorf("late write: %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(tc.wantLate))
			}
			hw, lso = r.stableOffsets()
			if tc.wantLate != 0 && (hw != 2 || lso != 2) {
				t.Errorf("after the refused late write: high watermark %d, last stable offset %d; want 2, 2", hw, lso)
			}
			if tc.wantLate == 0 && (hw != 3 || lso != 2) {
				t.Errorf("unverified late write: high watermark %d, last stable offset %d; want 3 and a hanging transaction at 2", hw, lso)
			}
		})
	}
}

// setVerification sets transaction.partition.verification.enable as a
// cluster default and waits until the broker applies it.
func setVerification(t *testing.T, ctx context.Context, adm *kadm.Client, on bool) {
	t.Helper()
	v := strconv.FormatBool(on)
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "transaction.partition.verification.enable", Value: &v}})
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rc, err := adm.DescribeBrokerConfigs(ctx)
		if err == nil {
			if c, cerr := rc.On("", nil); cerr == nil {
				for _, kv := range c.Configs {
					if kv.Key == "transaction.partition.verification.enable" && kv.MaybeValue() == v {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction.partition.verification.enable never became %s", v)
		}
	}
}

// setTransactionVersion finalizes transaction.version at level (a
// downgrade or an upgrade, as kafka-features does) and waits until the
// broker's ApiVersions reports it, which is what clients go by.
func setTransactionVersion(t *testing.T, ctx context.Context, addr string, level int16) {
	t.Helper()
	cl := newKgo(t, addr)
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", level, 2 // safe downgrade
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("UpdateFeatures transaction.version=%d: %v", level, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
		if err == nil {
			got := int16(0)
			for _, f := range av.FinalizedFeatures {
				if f.Name == "transaction.version" {
					got = f.MaxVersionLevel
				}
			}
			if got == level {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction.version never finalized at %d", level)
		}
	}
}

// TestTxnFranzTransactionV2 checks that franz-go really runs transaction
// version 2 against a new cluster: every EndTxn bumps the producer epoch
// (two transactions after InitProducerId's epoch 0 leave it at 2), and
// it sends no AddPartitionsToTxn of its own (the produce adds the
// partition), while read_committed consumers see exactly the committed
// records.
func TestTxnFranzTransactionV2(t *testing.T) {
	ctx := testContext(t)
	b := startTxnBroker(t)
	adm := newKadm(t, b.addr())
	franzCreate(t, ctx, adm, "txn-vis", 1, nil)
	sent := &keyCounter{}
	p := txnProducer(t, b.addr(), "franz-v2", kgo.WithHooks(sent))
	produceTxn(t, ctx, p, true, 0, 1)
	produceTxn(t, ctx, p, false, 2)
	produceTxn(t, ctx, p, true, 3)
	var d kadm.DescribedTransaction
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		dt, err := adm.DescribeTransactions(ctx, "franz-v2")
		if err != nil {
			t.Fatal(err)
		}
		if d = dt["franz-v2"]; d.State == "CompleteCommit" || time.Now().After(deadline) {
			break
		}
	}
	if d.State != "CompleteCommit" || d.ProducerEpoch != 3 {
		t.Errorf("described %s at epoch %d, want CompleteCommit at 3 (one bump per EndTxn)", d.State, d.ProducerEpoch)
	}
	if sent.count(kmsg.Produce) == 0 || sent.count(kmsg.EndTxn) != 3 {
		t.Errorf("hook counted %d Produce and %d EndTxn requests", sent.count(kmsg.Produce), sent.count(kmsg.EndTxn))
	}
	if n := sent.count(kmsg.AddPartitionsToTxn); n != 0 {
		t.Errorf("franz-go sent %d AddPartitionsToTxn requests, want none at transaction version 2", n)
	}
	seen := readOutput(t, ctx, b.addr(), "txn-vis", kgo.ReadCommitted(), 3)
	if len(seen) != 3 || seen[0] != 1 || seen[1] != 1 || seen[3] != 1 {
		t.Errorf("read_committed: %v, want records 0, 1 and 3 once", seen)
	}
}

// keyCounter is a kgo hook counting the requests written, by API key.
type keyCounter struct {
	mu sync.Mutex
	n  map[int16]int
}

func (k *keyCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n = map[int16]int{}
	}
	k.n[key]++
}

func (k *keyCounter) count(key kmsg.Key) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n[int16(key)]
}

// TestTxnEndTxnV2Answers checks EndTxn v5 (transaction version 2) at its
// edges, with the codes, producer ids and epochs a Kafka 4.4 broker
// answered to the same requests: a retry of a commit whose answer was lost
// gets the bumped epoch again; the other outcome, or a commit with no
// transaction, is INVALID_TXN_STATE; an abort with no transaction bumps the
// epoch once more; any other epoch is PRODUCER_FENCED.
func TestTxnEndTxnV2Answers(t *testing.T) {
	ctx := testContext(t)
	b := startTxnBroker(t)
	franzCreate(t, ctx, newKadm(t, b.addr()), "endtxn-v2", 1, nil)
	r := newRawTxn(t, ctx, b.addr(), "tx-endtxn-v2", "endtxn-v2", true)
	if code := r.produce("a"); code != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
	r.end(true) // answered r.pid at r.epoch+1
	end := func(epoch int16, commit bool) string {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = r.id, r.pid, epoch, commit
		resp, err := r.cl.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		x := resp.(*kmsg.EndTxnResponse)
		if x.ProducerID == -1 {
			return fmt.Sprintf("%d -1/%d", x.ErrorCode, x.ProducerEpoch)
		}
		return fmt.Sprintf("%d pid/+%d", x.ErrorCode, x.ProducerEpoch-r.epoch)
	}
	e := r.epoch
	for _, tc := range []struct {
		what   string
		epoch  int16
		commit bool
		want   string
	}{
		{"retried commit", e, true, "0 pid/+1"},
		{"retried commit as an abort", e, false, "48 -1/-1"},
		{"commit with no transaction", e + 1, true, "48 -1/-1"},
		{"abort with no transaction", e + 1, false, "0 pid/+2"},
		{"stale epoch", e, false, "90 -1/-1"},
		{"future epoch", e + 5, false, "90 -1/-1"},
	} {
		if got := end(tc.epoch, tc.commit); got != tc.want {
			t.Errorf("%s: EndTxn v5 answered %s, want %s", tc.what, got, tc.want)
		}
	}
}
