package txn_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCommitFlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, nil)
		pid, epoch := e.mustInit("tx")
		e.expect("init", []any{pid, epoch}, []any{1000, 0})
		e.expect("add", e.add("tx", pid, epoch, "t", 1, 0), 0)
		e.expect("add again (no write)", e.add("tx", pid, epoch, "t", 0), 0)
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.Version = 3
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx", pid, epoch, "grp"
		e.expect("add offsets", e.c.AddOffsetsToTxn(e.ctx, ao).ErrorCode, 0)
		d := e.describe("tx")
		e.expect("describe ongoing", []any{d.State, d.TimeoutMillis, d.StartTimestamp, len(d.Topics)},
			[]any{"Ongoing", 60000, time.Now().UnixMilli(), 2})

		e.expect("end", e.end("tx", pid, epoch, true), 0)
		synctest.Wait()
		e.expect("markers", e.markers.got(), []string{"commit 1000/0 ce7 [{__consumer_offsets 3} {t 0} {t 1}]"})
		e.expect("state", e.state("tx"), "CompleteCommit@1000/0")
		e.expect("log", states(e.log), []string{
			"tx:Empty@1000/0[]",
			"tx:Ongoing@1000/0[t-0 t-1]",
			"tx:Ongoing@1000/0[__consumer_offsets-3 t-0 t-1]",
			"tx:PrepareCommit@1000/0[__consumer_offsets-3 t-0 t-1]",
			"tx:CompleteCommit@1000/0[]",
		})
		// A retried commit succeeds; an abort of it is invalid; a new
		// transaction starts with the next AddPartitions.
		e.expect("retry commit", e.end("tx", pid, epoch, true), 0)
		e.expect("abort committed", e.end("tx", pid, epoch, false), 48)
		e.expect("next txn", e.add("tx", pid, epoch, "u", 5), 0)
		e.expect("state", e.state("tx"), "Ongoing@1000/0")
	})
}

func TestAbortRetriesMarkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, &fakeMarkers{failures: 2})
		pid, epoch := e.mustInit("tx")
		e.add("tx", pid, epoch, "t", 0)
		e.expect("end with no txn", e.end("other", pid, epoch, false), 49)
		e.expect("abort", e.end("tx", pid, epoch, false), 0)
		// While markers are pending the producer must wait.
		e.expect("add while aborting", e.add("tx", pid, epoch, "t", 1), 51)
		e.expect("abort again while aborting", e.end("tx", pid, epoch, false), 51)
		e.expect("commit while aborting", e.end("tx", pid, epoch, true), 48)
		time.Sleep(time.Second)
		e.expect("attempts", e.markers.attemptCount(), 3)
		e.expect("markers", e.markers.got(), []string{"abort 1000/0 ce7 [{t 0}]"})
		e.expect("state", e.state("tx"), "CompleteAbort@1000/0")
		e.expect("end on empty", e.end("tx", pid, epoch, true), 48)
	})
}

// Right after EndTxn, until the markers are written and the transaction
// is CompleteCommit, every request of its producer gets
// CONCURRENT_TRANSACTIONS and changes nothing, as in Kafka (the
// transaction's pendingState or its Prepare state): no AddPartitionsToTxn
// or AddOffsetsToTxn starts the next transaction, no EndTxn ends it
// twice, no InitProducerId bumps the epoch. Then the next transaction
// starts, after the Complete state in the log.
func TestNothingStartsBeforeMarkersAreWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		e := newEnv(t, nil, &fakeMarkers{gate: gate})
		pid, epoch := e.mustInit("tx")
		e.expect("add", e.add("tx", pid, epoch, "t", 0), 0)
		e.expect("commit", e.end("tx", pid, epoch, true), 0)
		synctest.Wait() // the markers are being written, and held

		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.Version = 3
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx", pid, epoch, "grp"
		for range 3 {
			e.expect("add partitions", e.add("tx", pid, epoch, "u", 1), 51)
			e.expect("add offsets", e.c.AddOffsetsToTxn(e.ctx, ao).ErrorCode, 51)
			e.expect("commit again", e.end("tx", pid, epoch, true), 51)
			e.expect("abort instead", e.end("tx", pid, epoch, false), 48)
			e.expect("init", e.init("tx", 60_000).ErrorCode, 51)
			e.expect("state", e.state("tx"), "PrepareCommit@1000/0")
			time.Sleep(time.Second) // however long the markers take
		}
		e.expect("markers while held", e.markers.got(), []string(nil))

		close(gate)
		synctest.Wait()
		e.expect("markers", e.markers.got(), []string{"commit 1000/0 ce7 [{t 0}]"})
		e.expect("state", e.state("tx"), "CompleteCommit@1000/0")
		e.expect("next txn", e.add("tx", pid, epoch, "u", 1), 0)
		e.expect("log", states(e.log), []string{
			"tx:Empty@1000/0[]",
			"tx:Ongoing@1000/0[t-0]",
			"tx:PrepareCommit@1000/0[t-0]",
			"tx:CompleteCommit@1000/0[]",
			"tx:Ongoing@1000/0[u-1]",
		})
	})
}

func TestZombieFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, nil)
		pid, old := e.mustInit("tx")
		pid2, cur := e.mustInit("tx")
		e.expect("re-init", []any{pid2, cur}, []any{pid, 1})
		e.expect("zombie add v3", e.add("tx", pid, old, "t", 0), 90)
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 1
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx", pid, old
		req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		e.expect("zombie add v1", e.c.AddPartitionsToTxn(e.ctx, req).Topics[0].Partitions[0].ErrorCode, 47)
		e.expect("wrong producer id", e.add("tx", pid+1, cur, "t", 0), 49)
		e.expect("new producer add", e.add("tx", pid, cur, "t", 0), 0)
		e.expect("zombie end", e.end("tx", pid, old, true), 90)
		end := kmsg.NewPtrEndTxnRequest()
		end.Version = 1
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx", pid, old, true
		e.expect("zombie end v1", e.c.EndTxn(e.ctx, end).ErrorCode, 47)
		e.expect("state", e.state("tx"), "Ongoing@1000/1")
	})
}

func TestInitDuringOngoingAbortsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, nil)
		pid, epoch := e.mustInit("tx")
		e.add("tx", pid, epoch, "t", 0, 1)
		e.expect("init while ongoing", e.init("tx", 60_000).ErrorCode, 51)
		synctest.Wait()
		// The abort ran at the fenced epoch, so the old producer's late
		// writes are rejected by the partitions.
		e.expect("markers", e.markers.got(), []string{"abort 1000/1 ce7 [{t 0} {t 1}]"})
		e.expect("state", e.state("tx"), "CompleteAbort@1000/1")
		e.expect("old producer end", e.end("tx", pid, epoch, true), 90)
		pid2, epoch2 := e.mustInit("tx")
		e.expect("retried init", []any{pid2, epoch2}, []any{1000, 2})
		e.expect("log tail", states(e.log)[2:], []string{
			"tx:PrepareAbort@1000/1[t-0 t-1]",
			"tx:CompleteAbort@1000/1[]",
			"tx:Empty@1000/2[]",
		})
	})
}

func TestTimedOutTransactionAborted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, nil)
		r := e.init("tx", 15_000)
		pid, epoch := r.ProducerID, r.ProducerEpoch
		e.add("tx", pid, epoch, "t", 0)
		time.Sleep(10*time.Second + time.Millisecond) // first check: not yet timed out
		synctest.Wait()
		e.expect("state at 10s", e.state("tx"), "Ongoing@1000/0")
		time.Sleep(10 * time.Second) // second check, 20 s > 15 s
		synctest.Wait()
		e.expect("markers", e.markers.got(), []string{"abort 1000/1 ce7 [{t 0}]"})
		e.expect("state", e.state("tx"), "CompleteAbort@1000/1")
		e.expect("timed-out producer commits", e.end("tx", pid, epoch, true), 90)
	})
}

func TestInitValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, nil)
		e.expect("timeout 0", e.init("tx", 0).ErrorCode, 50)
		e.expect("timeout over max", e.init("tx", 15*60_000+1).ErrorCode, 50)
		e.expect("empty id", e.init("", 1000).ErrorCode, 42)
		// Idempotent producers get a fresh id at epoch 0.
		r := e.c.InitProducerID(e.ctx, kmsg.NewPtrInitProducerIDRequest())
		e.expect("idempotent", []any{r.ErrorCode, r.ProducerID, r.ProducerEpoch}, []any{0, 1000, 0})
		e.expect("not found", e.describe("tx").ErrorCode, 105)
		e.c.Unload(0)
		e.expect("unloaded init", e.init("tx", 1000).ErrorCode, 16)
		e.expect("unloaded describe", e.describe("tx").ErrorCode, 16)
	})
}

func TestLoadInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{Block: make(chan struct{})}
		e := newEnv(t, nil, nil)
		e.c.Load(0, 8, log)
		synctest.Wait()
		e.expect("loading", e.init("tx", 1000).ErrorCode, 14)
		e.expect("list while loading", e.c.ListTransactions(e.ctx, kmsg.NewPtrListTransactionsRequest()).ErrorCode, 14)
		close(log.Block)
		synctest.Wait()
		e.expect("loaded", e.init("tx", 1000).ErrorCode, 0)
	})
}

// TestKIP360 covers InitProducerId with the client's last producer id and
// epoch: a bump, a retry of a bump whose answer was lost, a stale epoch,
// and rotation to a new producer id when the epoch is exhausted.
func TestKIP360(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, nil)
		pid, epoch := e.mustInit("tx")
		init := func(pid int64, epoch int16) *kmsg.InitProducerIDResponse {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version = 4
			req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 1000
			req.ProducerID, req.ProducerEpoch = pid, epoch
			return e.c.InitProducerID(e.ctx, req)
		}
		r := init(pid, epoch)
		e.expect("bump", []any{r.ErrorCode, r.ProducerID, r.ProducerEpoch}, []any{0, 1000, 1})
		r = init(pid, epoch)
		e.expect("retry of the bump", []any{r.ErrorCode, r.ProducerID, r.ProducerEpoch}, []any{0, 1000, 1})
		e.mustInit("tx") // epoch 2
		r = init(pid, epoch)
		e.expect("stale epoch", r.ErrorCode, 90)
		r = init(pid+5, 2)
		e.expect("unknown producer id", r.ErrorCode, 90)

		// Exhaustion: an id at epoch MaxInt16-1 rotates to a new producer id.
		log := &memLog{}
		v := kmsg.NewTxnMetadataValue()
		v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = 77, math.MaxInt16-1, 1000, kmsg.TransactionState(txn.StateCompleteCommit)
		v.StartTimestamp, v.LastUpdateTimestamp = 5, time.Now().UnixMilli()
		k := kmsg.TxnMetadataKey{TransactionalID: "tx"}
		log.Add(coordinator.KV{Key: k.AppendTo(nil), Value: v.AppendTo(nil)})
		e2 := newEnv(t, log, nil)
		r = func() *kmsg.InitProducerIDResponse { e = e2; return init(77, math.MaxInt16-1) }()
		e.expect("rotated", []any{r.ErrorCode, r.ProducerID, r.ProducerEpoch}, []any{0, 1000, 0})
		r = init(77, math.MaxInt16-1)
		e.expect("retry of the rotation", []any{r.ErrorCode, r.ProducerID, r.ProducerEpoch}, []any{0, 1000, 0})
		r = init(1000, 0)
		e.expect("bump after rotation", []any{r.ErrorCode, r.ProducerID, r.ProducerEpoch}, []any{0, 1000, 1})
		e.mustInit("tx") // epoch 2, forgetting epoch 1
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 3
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr("tx"), 1000, 1000, 0
		e.expect("v3 fenced", e.c.InitProducerID(e.ctx, req).ErrorCode, 47)
	})
}
