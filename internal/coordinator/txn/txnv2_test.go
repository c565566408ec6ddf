package txn_test

import (
	"math"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// addV5 adds partitions of topic as a partition leader does for a
// transaction version 2 client (AddPartitionsToTxn v5, not VerifyOnly).
func (e *env) addV5(id string, pid int64, epoch int16, topic string, parts ...int32) int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = id, pid, epoch
	tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: parts}}
	req.Transactions = append(req.Transactions, tx)
	return e.c.AddPartitionsToTxn(e.ctx, req).Transactions[0].Topics[0].Partitions[0].ErrorCode
}

// endV5 is EndTxn v5; it returns the code and the id and epoch answered.
func (e *env) endV5(id string, pid int64, epoch int16, commit bool) (int16, int64, int16) {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 5
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	r := e.c.EndTxn(e.ctx, req)
	return r.ErrorCode, r.ProducerID, r.ProducerEpoch
}

func TestTransactionV2EpochBump(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, nil)
		pid, epoch := e.mustInit("tx")
		e.expect("implicit add", e.addV5("tx", pid, epoch, "t", 0), 0)
		code, npid, nepoch := e.endV5("tx", pid, epoch, true)
		e.expect("commit", []any{code, npid, nepoch}, []any{0, pid, epoch + 1})
		synctest.Wait()
		// The markers carry the bumped epoch, so a late write at the old
		// epoch is fenced on the partition.
		e.expect("markers", e.markers.got(), []string{"commit tv2 1000/1 ce7 [{t 0}]"})
		e.expect("state", e.state("tx"), "CompleteCommit@1000/1")
		// A retry whose answer was lost gets the new id and epoch; asking
		// for the other outcome is INVALID_TXN_STATE.
		code, npid, nepoch = e.endV5("tx", pid, epoch, true)
		e.expect("retry", []any{code, npid, nepoch}, []any{0, pid, epoch + 1})
		code, _, _ = e.endV5("tx", pid, epoch, false)
		e.expect("retry as abort", code, 48)
		// The old epoch is fenced for a new transaction.
		e.expect("add at old epoch", e.addV5("tx", pid, epoch, "t", 0), 90)
		// An abort with no transaction (the client does not know whether
		// its produce added a partition) bumps the epoch and writes no
		// marker; a commit with none is INVALID_TXN_STATE.
		code, _, _ = e.endV5("tx", pid, epoch+1, true)
		e.expect("empty commit", code, 48)
		code, npid, nepoch = e.endV5("tx", pid, epoch+1, false)
		e.expect("empty abort", []any{code, npid, nepoch}, []any{0, pid, epoch + 2})
		synctest.Wait()
		e.expect("state after empty abort", e.state("tx"), "CompleteAbort@1000/2")
		e.expect("no new marker", len(e.markers.got()), 1)
		// A stale epoch: PRODUCER_FENCED.
		code, _, _ = e.endV5("tx", pid, epoch, false)
		e.expect("stale", code, 90)
		// The log holds TxnMetadataValue v0 at transaction.version 0.
		for _, kv := range e.log.Records() {
			e.expect("value version", int(kv.Value[1]), 0)
		}
	})
}

func TestTransactionV2RotatesExhaustedEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A transactional id at epoch MaxInt16-2 in the log.
		log := &memLog{}
		log.Add(recordAt(t, "tx", 55, math.MaxInt16-2))
		e := newEnv(t, log, nil)
		pid, epoch := int64(55), int16(math.MaxInt16-2)
		e.expect("add", e.addV5("tx", pid, epoch, "t", 0), 0)
		code, npid, nepoch := e.endV5("tx", pid, epoch, true)
		e.expect("commit", []any{code, npid, nepoch}, []any{0, 55, math.MaxInt16 - 1})
		synctest.Wait()
		epoch++
		e.expect("add", e.addV5("tx", pid, epoch, "t", 0), 0)
		// MaxInt16-1 is exhausted: the markers go out at MaxInt16 and the
		// client gets a new producer id at epoch 0.
		code, npid, nepoch = e.endV5("tx", pid, epoch, false)
		e.expect("abort at exhausted epoch", []any{code, npid, nepoch}, []any{0, 1000, 0})
		synctest.Wait()
		e.expect("markers", e.markers.got()[1], "abort tv2 55/32767 ce7 [{t 0}]")
		e.expect("state", e.state("tx"), "CompleteAbort@1000/0")
		code, npid, nepoch = e.endV5("tx", pid, epoch, false)
		e.expect("retry over the rotation", []any{code, npid, nepoch}, []any{0, 1000, 0})
		e.expect("next txn under the new id", e.addV5("tx", 1000, 0, "t", 0), 0)
	})
}

// recordAt is the record of id in state CompleteCommit at pid/epoch.
func recordAt(t *testing.T, id string, pid int64, epoch int16) coordinator.KV {
	t.Helper()
	k := kmsg.TxnMetadataKey{TransactionalID: id}
	v := kmsg.NewTxnMetadataValue()
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = pid, epoch, 60000
	v.State = kmsg.TransactionState(4)
	v.StartTimestamp = -1
	return coordinator.KV{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// At transaction.version 2 the log holds TxnMetadataValue v1 with the
// client's transaction version, so a new coordinator (after a failover)
// still recognizes a retried EndTxn v5.
func TestTransactionV2RecordsSurviveLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnvTV(t, nil, nil, 2)
		pid, epoch := e.mustInit("tx")
		e.addV5("tx", pid, epoch, "t", 0)
		code, _, _ := e.endV5("tx", pid, epoch, true)
		e.expect("commit", code, 0)
		synctest.Wait()
		for _, kv := range e.log.Records() {
			var v kmsg.TxnMetadataValue
			if err := v.ReadFrom(kv.Value); err != nil {
				t.Fatal(err)
			}
			e.expect("value version", v.Version, 1)
		}
		e2 := newEnvTV(t, e.log, nil, 2)
		code, npid, nepoch := e2.endV5("tx", pid, epoch, true)
		e2.expect("retry on the new coordinator", []any{code, npid, nepoch}, []any{0, pid, epoch + 1})
	})
}
