package broker

import (
	"context"
	"strconv"

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
