package group_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnCommitReq(version int16, pid int64, epoch int16, topic string, offsets ...int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = version
	r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "tx", testGroup, pid, epoch
	r.Generation = -1
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topic
	for i, o := range offsets {
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = int32(i), o, 3, kmsg.StringPtr("txn")
		t.Partitions = append(t.Partitions, p)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func txnCodes(r *kmsg.TxnOffsetCommitResponse) string {
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return fmt.Sprint(out)
}

// fetchStable is OffsetFetch v8 with require_stable of topic t partitions
// 0 and 1, as "offset/code" per partition.
func (e *env) fetchStable(stable bool) string {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = 8, stable
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: testGroup, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 1}}}}}
	r := e.c.OffsetFetch(e.ctx, req)
	var out []string
	for _, p := range r.Groups[0].Topics[0].Partitions {
		out = append(out, fmt.Sprintf("%d/%d", p.Offset, p.ErrorCode))
	}
	return fmt.Sprint(out)
}

func expectEq(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func TestTxnOffsetCommitVisibleOnCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		p := e.c.PartitionFor(testGroup)
		expectEq(t, "plain commit", commitCodes(e.c.OffsetCommit(e.ctx, commitReq(-1, "", "t", 5))), "[0]")
		expectEq(t, "txn commit", txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(3, 42, 0, "t", 10, 20))), "[0 0]")
		recs := e.log.Records()
		expectEq(t, "txn records", []any{len(recs), recs[1].Transactional, recs[1].ProducerID, recs[2].Transactional}, []any{3, true, 42, true})

		expectEq(t, "pending invisible", e.fetchStable(false), "[5/0 -1/0]")
		expectEq(t, "require_stable", e.fetchStable(true), "[-1/88 -1/88]")
		e.c.CompleteTransaction(p+1, 42, true) // another partition: no effect
		expectEq(t, "other partition's marker", e.fetchStable(true), "[-1/88 -1/88]")
		e.c.CompleteTransaction(p, 42, true)
		expectEq(t, "after commit", e.fetchStable(true), "[10/0 20/0]")
		f := e.fetchAll()
		expectEq(t, "fetch all", f, map[string]int64{"t-0": 10, "t-1": 20})

		// Abort drops them.
		expectEq(t, "txn commit 2", txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(3, 42, 0, "t", 30, 40))), "[0 0]")
		e.c.CompleteTransaction(p, 42, false)
		expectEq(t, "after abort", e.fetchStable(true), "[10/0 20/0]")

		// A plain commit written after the transactional one wins when the
		// transaction commits later (Kafka compares log positions).
		txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(3, 43, 0, "t", 50, 60)))
		commitCodes(e.c.OffsetCommit(e.ctx, commitReq(-1, "", "t", 55)))
		e.c.CompleteTransaction(p, 43, true)
		expectEq(t, "later plain commit kept", e.fetchStable(true), "[55/0 60/0]")
	})
}

func TestTxnOffsetCommitErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, group.Config{}, nil)
		txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(3, 42, 5, "t", 1)))
		expectEq(t, "fenced v3", txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(3, 42, 4, "t", 1))), "[90]")
		expectEq(t, "fenced v2", txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(2, 42, 4, "t", 1))), "[47]")
		r := txnCommitReq(3, 42, 5, "t", 1)
		r.Generation, r.MemberID = 4, "m"
		expectEq(t, "generation for unknown group", txnCodes(e.c.TxnOffsetCommit(e.ctx, r)), "[22]")
		r.Group = ""
		expectEq(t, "empty group", txnCodes(e.c.TxnOffsetCommit(e.ctx, r)), "[24]")
		members, gen := e.stableGroup(1)
		r = txnCommitReq(3, 42, 5, "t", 7)
		r.Generation, r.MemberID = gen+1, members[0]
		expectEq(t, "stale generation", txnCodes(e.c.TxnOffsetCommit(e.ctx, r)), "[22]")
		r.Generation, r.MemberID = gen, "nobody"
		expectEq(t, "unknown member", txnCodes(e.c.TxnOffsetCommit(e.ctx, r)), "[25]")
		r.MemberID = members[0]
		expectEq(t, "member commit", txnCodes(e.c.TxnOffsetCommit(e.ctx, r)), "[0]")
	})
}

// TestTxnOffsetReplay loads a log with transactional offsets of three
// producers: one committed, one aborted, one still open.
func TestTxnOffsetReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		e := newEnv(t, group.Config{}, log)
		txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(3, 1, 0, "t", 10, 11)))
		commitCodes(e.c.OffsetCommit(e.ctx, commitReq(-1, "", "t", 5, 6)))
		txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(3, 2, 0, "t", 20, 21)))
		log.Marker(2, true) // written after the plain commit: its offsets win
		log.Marker(1, true) // commits too, but its records precede the plain commit
		txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(3, 3, 0, "t", 30)))
		txnCodes(e.c.TxnOffsetCommit(e.ctx, txnCommitReq(3, 4, 0, "t", 40, 41)))
		log.Marker(4, false)
		e.c.Close()

		e2 := newEnv(t, group.Config{}, log)
		expectEq(t, "replayed", e2.fetchStable(false), "[20/0 21/0]")
		expectEq(t, "producer 3 pending", e2.fetchStable(true), "[-1/88 21/0]")
		e2.c.CompleteTransaction(e2.c.PartitionFor(testGroup), 3, true)
		expectEq(t, "producer 3 committed", e2.fetchStable(true), "[30/0 21/0]")
	})
}
