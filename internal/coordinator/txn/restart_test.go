package txn_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRestart loads the log of a coordinator that stopped with one
// transaction in each of Ongoing, PrepareCommit (markers not yet written)
// and CompleteCommit.
func TestRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		e := newEnv(t, log, &fakeMarkers{hang: true})
		pa, ea := e.mustInit("ongoing")
		e.add("ongoing", pa, ea, "t", 0)
		pb, eb := e.mustInit("preparing")
		e.add("preparing", pb, eb, "t", 1)
		e.expect("end", e.end("preparing", pb, eb, true), 0)
		synctest.Wait() // markers hang: stays PrepareCommit
		e.c.Close()
		// CompleteCommit written by a previous owner that finished.
		pc, ec := int64(0), int16(0)
		{
			l := &memLog{}
			x := newEnv(t, l, nil)
			pc, ec = x.mustInit("done")
			x.add("done", pc, ec, "u", 3)
			x.end("done", pc, ec, true)
			synctest.Wait()
			x.c.Close()
			log.Add(l.Records()...)
		}

		m := &fakeMarkers{}
		e2 := newEnv(t, log, m)
		synctest.Wait()
		e2.expect("markers of the prepared txn on load", m.got(), []string{"commit 1001/0 ce7 [{t 1}]"})
		e2.expect("ongoing", e2.state("ongoing"), "Ongoing@1000/0")
		e2.expect("prepared completed", e2.state("preparing"), "CompleteCommit@1001/0")
		e2.expect("done", e2.state("done"), "CompleteCommit@1000/0")
		// The ongoing transaction continues with its producer.
		e2.expect("add after restart", e2.add("ongoing", pa, ea, "t", 2), 0)
		e2.expect("commit after restart", e2.end("ongoing", pa, ea, true), 0)
		synctest.Wait()
		e2.expect("state", e2.state("ongoing"), "CompleteCommit@1000/0")
		e2.expect("markers", m.got()[1], "commit 1000/0 ce7 [{t 0} {t 2}]")
		// Epochs survive: the next init bumps.
		e2.expect("reinit", e2.init("done", 1000).ProducerEpoch, 1)
	})
}

func TestListDescribeAndExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, nil)
		pa, ea := e.mustInit("a")
		e.add("a", pa, ea, "t", 0)
		time.Sleep(5 * time.Second)
		pb, eb := e.mustInit("b")
		e.add("b", pb, eb, "t", 1)
		e.mustInit("c")

		list := func(version int16, states []string, pids []int64, dur int64, pattern *string) (ids []string, unknown []string) {
			req := kmsg.NewPtrListTransactionsRequest()
			req.Version, req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis, req.TransactionalIDPattern = version, states, pids, dur, pattern
			r := e.c.ListTransactions(e.ctx, req)
			for _, s := range r.TransactionStates {
				ids = append(ids, s.TransactionalID+":"+s.TransactionState)
			}
			return ids, r.UnknownStateFilters
		}
		ids, _ := list(0, nil, nil, 0, nil)
		e.expect("all", ids, []string{"a:Ongoing", "b:Ongoing", "c:Empty"})
		ids, unknown := list(0, []string{"Empty", "Bogus"}, nil, 0, nil)
		e.expect("state filter", []any{ids, unknown}, []any{[]string{"c:Empty"}, []string{"Bogus"}})
		ids, _ = list(0, nil, []int64{pb}, 0, nil)
		e.expect("producer filter", ids, []string{"b:Ongoing"})
		ids, _ = list(1, nil, nil, 3000, nil)
		e.expect("running longer than 3 s", ids, []string{"a:Ongoing"})
		ids, _ = list(0, nil, nil, 3000, nil)
		e.expect("v0 ignores duration", len(ids), 3)
		ids, _ = list(2, nil, nil, -1, kmsg.StringPtr("^[bc]$"))
		e.expect("pattern", ids, []string{"b:Ongoing", "c:Empty"})
		// Kafka matches the whole id (re2j's Matcher.matches).
		ids, _ = list(2, nil, nil, -1, kmsg.StringPtr("[bc]|x"))
		e.expect("whole-id pattern", ids, []string{"b:Ongoing", "c:Empty"})
		ids, _ = list(2, nil, nil, -1, kmsg.StringPtr("(?m)a$|z"))
		e.expect("flags stay inside the pattern", ids, []string{"a:Ongoing"})
		ids, _ = list(2, nil, nil, -1, kmsg.StringPtr(""))
		e.expect("empty pattern", len(ids), 3)
		for _, bad := range []string{"(", "a)(b", `(a)\1`, "x*+"} {
			req := kmsg.NewPtrListTransactionsRequest()
			req.Version, req.StateFilters, req.TransactionalIDPattern = 2, []string{"Bogus"}, kmsg.StringPtr(bad)
			r := e.c.ListTransactions(e.ctx, req)
			e.expect("invalid pattern "+bad, []any{r.ErrorCode, len(r.UnknownStateFilters), len(r.TransactionStates)}, []any{kerr.InvalidRegularExpression.Code, 0, 0})
		}

		d := e.describe("a")
		e.expect("describe", []any{d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMillis, d.Topics[0].Topic, d.Topics[0].Partitions},
			[]any{"Ongoing", pa, ea, 60000, "t", []int32{0}})

		// a and b time out after 60 s and are aborted.
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		e.expect("a aborted", e.state("a"), "CompleteAbort@1000/1")
		ids, _ = list(0, nil, nil, 0, nil)
		e.expect("after timeout", ids, []string{"a:CompleteAbort", "b:CompleteAbort", "c:Empty"})
		// transactional.id.expiration.ms: ids idle for 7 days are removed
		// by the hourly check.
		time.Sleep(7*24*time.Hour - time.Minute)
		synctest.Wait()
		e.expect("c kept", e.state("c"), "Empty@1002/0")
		time.Sleep(time.Hour)
		synctest.Wait()
		e.expect("c expired", e.describe("c").ErrorCode, 105)
		ids, _ = list(0, nil, nil, 0, nil)
		e.expect("after expiry", len(ids), 0)
		e.expect("tombstones", states(e.log)[len(states(e.log))-3:], []string{"a:tombstone", "b:tombstone", "c:tombstone"})
	})
}

func TestVerifyOnlyV4(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, nil)
		pid, epoch := e.mustInit("tx")
		e.add("tx", pid, epoch, "t", 0)
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4
		mk := func(id string, epoch int16, verify bool, parts ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
			return kmsg.AddPartitionsToTxnRequestTransaction{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, VerifyOnly: verify,
				Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: parts}}}
		}
		req.Transactions = append(req.Transactions, mk("tx", epoch, true, 0, 1), mk("tx", epoch+1, true, 0), mk("tx", epoch, false, 2))
		r := e.c.AddPartitionsToTxn(e.ctx, req)
		var got [][]int16
		for _, tx := range r.Transactions {
			var codes []int16
			for _, p := range tx.Topics[0].Partitions {
				codes = append(codes, p.ErrorCode)
			}
			got = append(got, codes)
		}
		e.expect("codes", got, [][]int16{{0, 120}, {90}, {0}}) // TRANSACTION_ABORTABLE: not in the transaction
		e.expect("added", e.describe("tx").Topics[0].Partitions, []int32{0, 2})
	})
}
