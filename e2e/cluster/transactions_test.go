package cluster

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionsSurviveCoordinatorKill copies an input topic to an
// output topic with a GroupTransactSession (consume, produce, commit
// offsets in one transaction) on a 3-node cluster and kills the
// transaction coordinator with SIGKILL in the middle of a transaction —
// its records produced, not yet committed. A read_committed reader of the
// output must see every input record exactly once.
func TestTransactionsSurviveCoordinatorKill(t *testing.T) {
	const (
		in, out = "txn-in", "txn-out"
		records = 2000
		txnID   = "copier"
	)
	c := startCluster(t, 3, "transaction.state.log.num.partitions=6", "offsets.topic.num.partitions=6")
	adm := kadm.NewClient(client(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	minISR := "2"
	for _, topic := range []string{in, out} {
		if resp, err := adm.CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	prod := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(in))
	for i := range records {
		prod.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce input: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// The copier: one transaction per poll of at most 50 records.
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup("copiers"),
		kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(10*time.Second),
		kgo.RetryTimeout(30*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	var committed, aborted atomic.Int64
	// killCoordinator is set by the test; the copier runs it once, inside
	// a transaction, after producing and before committing.
	var killCoordinator atomic.Pointer[func()]
	cctx, stopCopier := context.WithCancel(ctx)
	copierDone := make(chan struct{})
	go func() {
		defer close(copierDone)
		defer sess.Close()
		for cctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(cctx, time.Second)
			fs := sess.PollRecords(pctx, 50)
			pcancel()
			recs := fs.Records()
			if len(recs) == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				t.Errorf("Begin: %v", err)
				return
			}
			for _, r := range recs {
				sess.Produce(cctx, &kgo.Record{Topic: out, Value: r.Value}, nil)
			}
			if kill := killCoordinator.Swap(nil); kill != nil {
				if err := sess.Client().Flush(cctx); err != nil {
					t.Logf("flush before the kill: %v", err)
				}
				(*kill)()
			}
			ok, err := sess.End(cctx, kgo.TryCommit)
			switch {
			case ok:
				committed.Add(1)
			case err != nil && cctx.Err() == nil:
				aborted.Add(1)
				t.Logf("transaction not committed: %v", err)
			}
		}
	}()

	// A read_committed reader of the output, counting each input index.
	seen := make([]int, records)
	var distinct atomic.Int64
	reader := client(t, c, kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	readerDone := make(chan struct{})
	rctx, stopReader := context.WithCancel(ctx)
	go func() {
		defer close(readerDone)
		for rctx.Err() == nil {
			reader.PollFetches(rctx).EachRecord(func(r *kgo.Record) {
				i, err := strconv.Atoi(string(r.Value))
				if err != nil || i < 0 || i >= records {
					t.Errorf("output record %q", r.Value)
					return
				}
				if seen[i]++; seen[i] == 1 {
					distinct.Add(1)
				}
			})
		}
	}()

	waitFor(t, 60*time.Second, "a quarter copied", func() (bool, string) {
		return distinct.Load() >= records/4, fmt.Sprint(distinct.Load())
	})
	var coordinator int32 = -1
	adm.FindTxnCoordinators(ctx, txnID).Each(func(d kadm.FindCoordinatorResponse) { coordinator = d.NodeID })
	if coordinator < 0 {
		t.Fatal("no transaction coordinator")
	}
	killed := make(chan struct{})
	kill := func() {
		t.Logf("killing transaction coordinator node %d inside transaction %d", coordinator, committed.Load()+aborted.Load()+1)
		c.Node(coordinator).Kill()
		close(killed)
	}
	killCoordinator.Store(&kill)
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		t.Fatal("the copier made no transaction to kill the coordinator in")
	}

	waitFor(t, 120*time.Second, "every record copied", func() (bool, string) {
		return distinct.Load() == records, fmt.Sprintf("%d of %d", distinct.Load(), records)
	})
	stopCopier()
	<-copierDone
	if err := c.Node(coordinator).Start(); err != nil {
		t.Fatal(err)
	}
	// Anything still to come (a duplicate) would arrive within a few polls.
	time.Sleep(2 * time.Second)
	stopReader()
	<-readerDone
	dups := 0
	for i, n := range seen {
		if n != 1 {
			dups++
			if dups <= 10 {
				t.Errorf("input record %d is in the committed output %d times", i, n)
			}
		}
	}
	t.Logf("%d records copied exactly once in %d transactions (%d not committed) through a coordinator kill",
		distinct.Load(), committed.Load(), aborted.Load())
}
