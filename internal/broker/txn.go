package broker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
)

// txnStateTopic is the internal topic holding transaction state.
const txnStateTopic = "__transaction_state"

// TxnCoordinator serves transactions; the broker routes transaction APIs to
// it and tells it which partitions of __transaction_state this node leads.
type TxnCoordinator interface {
	PartitionFor(transactionalID string) int32
	Load(partition, coordinatorEpoch int32, log coordinator.PartitionLog)
	Unload(partition int32)

	InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse
	AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse
	AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse
	EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse
	DescribeTransactions(ctx context.Context, req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse
	ListTransactions(ctx context.Context, req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse
}

// ensureTxnTopic creates __transaction_state on first use, as Kafka does
// when the first FindCoordinator for a transactional id arrives, with
// Kafka's configs for it: uncompressed, no unclean election, and
// min.insync.replicas from transaction.state.log.min.isr, so a transaction
// state write counts only once that many replicas have it. Unlike Kafka,
// min.insync.replicas never exceeds the replication factor (Kafka would
// leave a one-replica log unwritable for ever).
func (b *Broker) ensureTxnTopic(ctx context.Context) (*metadata.TopicImage, error) {
	return b.ensureInternalTopic(ctx, txnStateTopic)
}

// txnTopicSpec is how __transaction_state is created (ensureTxnTopic).
func (b *Broker) txnTopicSpec() kmsg.CreateTopicsRequestTopic {
	st := b.cfg.Static
	minISR := min(st.TransactionStateLogMinISR, int(st.TransactionStateLogReplicationFactor))
	return compactedTopic(txnStateTopic, st.TransactionStateLogNumPartitions, st.TransactionStateLogReplicationFactor, map[string]string{
		"compression.type":               "uncompressed",
		"segment.bytes":                  strconv.Itoa(int(st.TransactionStateLogSegmentBytes)),
		"min.insync.replicas":            strconv.Itoa(minISR),
		"unclean.leader.election.enable": "false",
	})
}

// publishTxnTopic loads the partitions of __transaction_state this node
// leads into the transaction coordinator, at their leader epoch (markers
// carry it), and unloads the rest.
func (b *Broker) publishTxnTopic(img *metadata.Image) {
	if b.cfg.Txns == nil {
		return
	}
	b.txnLoaded.Reconcile(img, txnStateTopic, b.cfg.NodeID, b.cfg.Replicas,
		func(partition, epoch int32, p *replica.Partition) {
			b.cfg.Txns.Load(partition, epoch, &coordinator.ReplicaLog{P: p, Now: b.cfg.Now, CommitTimeout: txn.WriteTimeout})
		}, b.cfg.Txns.Unload)
}

// TxnPartitionAdder asks a transaction coordinator, on a transactional
// producer's behalf, to verify (KIP-890 part 1) or add (part 2) partitions
// in its transaction; *txn.PartitionAdder implements it.
type TxnPartitionAdder interface {
	AddOrVerify(ctx context.Context, transactionalID string, producerID int64, epoch int16, parts []txn.TopicPartition, add bool) map[txn.TopicPartition]int16
}

// txnVerification reports transaction.partition.verification.enable
// (default true, dynamic).
func (b *Broker) txnVerification() bool {
	v, ok := b.config().Value("transaction.partition.verification.enable")
	on, isBool := v.(bool)
	return !ok || !isBool || on
}

// txnWrite is what the verification of one partition's transactional
// batch decided: the error to answer, or the guard to append with.
type txnWrite struct {
	guard replica.VerificationGuard
	err   error
}

// verifyTxnWrites is Kafka's ReplicaManager transaction verification for a
// produce request: each partition this node leads whose transactional
// batch would open a transaction there is verified with (before v12) or
// added to (v12+, transaction version 2) the producer's transaction by its
// coordinator, before anything is appended. partitions lists the
// request's partitions by topic name. The result has an entry for each
// transactional batch appended with verification; nil when verification
// is off and nothing is added.
func (b *Broker) verifyTxnWrites(ctx context.Context, req *kmsg.ProduceRequest, partitions func(fn func(topic string, p int32, batch parsedBatch))) map[txn.TopicPartition]*txnWrite {
	add := req.Version >= 12
	verify := b.txnVerification()
	if req.TransactionID == nil || b.cfg.TxnPartitions == nil || (!add && !verify) {
		return nil
	}
	type producer struct {
		id    int64
		epoch int16
	}
	writes := map[txn.TopicPartition]*txnWrite{}
	pending := map[producer][]txn.TopicPartition{}
	parts := map[txn.TopicPartition]*replica.Partition{}
	partitions(func(topic string, i int32, batch parsedBatch) {
		h := batch.h
		if batch.err != nil || !h.Transactional() || isInternalTopic(topic) {
			return
		}
		p, err := b.leaderPartition(topic, i)
		if err != nil {
			return // answered by the append
		}
		tp := txn.TopicPartition{Topic: topic, Partition: i}
		w := &txnWrite{}
		writes[tp] = w
		guard, needed := p.StartTxnVerification(h.ProducerID, h.ProducerEpoch)
		if needed {
			w.guard, parts[tp] = guard, p
			k := producer{h.ProducerID, h.ProducerEpoch}
			pending[k] = append(pending[k], tp)
		}
	})
	for pr, tps := range pending {
		codes := b.cfg.TxnPartitions.AddOrVerify(ctx, *req.TransactionID, pr.id, pr.epoch, tps, add)
		for _, tp := range tps {
			if code := produceVerificationCode(codes[tp], req.Version); code != 0 {
				writes[tp].err = fmt.Errorf("%w: verifying the partition is in the transaction: %v", kerr.ErrorForCode(code), kerr.ErrorForCode(codes[tp]))
				parts[tp].EndTxnVerification(pr.id, writes[tp].guard)
			}
		}
	}
	return writes
}

// produceVerificationCode is the code a produce of version v answers for
// the coordinator's code of a partition's verification (Kafka's
// ReplicaManager and AddPartitionsToTxnManager): retriable coordinator
// troubles become NOT_ENOUGH_REPLICAS, which every producer retries
// without refreshing metadata; TRANSACTION_ABORTABLE is known from v11.
func produceVerificationCode(code, v int16) int16 {
	switch code {
	case kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return kerr.NotEnoughReplicas.Code
	case kerr.UnknownProducerID.Code:
		return kerr.OutOfOrderSequenceNumber.Code
	case kerr.TransactionAbortable.Code:
		if v < 11 {
			return kerr.InvalidTxnState.Code
		}
	}
	return code
}
