package txn

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

// PartitionAdderConfig configures a PartitionAdder.
type PartitionAdderConfig struct {
	// NodeID is this broker's id.
	NodeID int32
	// Image returns the latest metadata image: the leaders of
	// __transaction_state, which are the coordinators.
	Image func() *metadata.Image
	// Coordinator is this node's transaction coordinator: it places
	// transactional ids, and answers for the ids this node coordinates
	// without a network hop.
	Coordinator *Coordinator
	// Channel carries the requests to other brokers (its kept connections).
	Channel *MarkerChannel
	// RetryBackoff and RetryMax pace and bound the retries of an add that
	// meets the previous transaction's markers
	// (add.partitions.to.txn.retry.backoff.ms, 20 ms when zero, and
	// add.partitions.to.txn.retry.backoff.max.ms: zero retries not at
	// all).
	RetryBackoff, RetryMax time.Duration
	Logger                 *slog.Logger
}

// PartitionAdder is the partition leader's side of KIP-890 (Kafka's
// AddPartitionsToTxnManager): before a transactional write opens a
// transaction on a partition, the leader asks the producer's transaction
// coordinator, with AddPartitionsToTxn v4+, either to confirm the
// partition is in the transaction (VerifyOnly: part 1, the defence against
// hanging transactions) or to add it (part 2: a transaction version 2
// client does not add partitions itself).
//
// Each call sends one request for one transaction; Kafka's manager
// additionally merges the transactions of concurrent produce requests
// bound for one coordinator into one request.
type PartitionAdder struct {
	cfg PartitionAdderConfig
}

// NewPartitionAdder returns the adder cfg describes.
func NewPartitionAdder(cfg PartitionAdderConfig) *PartitionAdder {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 20 * time.Millisecond
	}
	return &PartitionAdder{cfg: cfg}
}

// AddOrVerify asks the coordinator of transactionalID to add (add true)
// or verify the partitions in the transaction of producerID at epoch. It
// returns each partition's code, 0 when the write may go ahead, with
// Kafka's mapping for the leader's client: PRODUCER_FENCED becomes
// INVALID_PRODUCER_EPOCH (what producers expect here), a refused
// broker-to-broker request INVALID_TXN_STATE, no coordinator
// COORDINATOR_NOT_AVAILABLE, a network failure NETWORK_EXCEPTION. A
// coordinator that does not serve AddPartitionsToTxn v4 (an older broker)
// cannot verify: the write goes ahead, as in Kafka.
func (a *PartitionAdder) AddOrVerify(ctx context.Context, transactionalID string, producerID int64, epoch int16, parts []TopicPartition, add bool) map[TopicPartition]int16 {
	// An add meeting the previous transaction's markers still being
	// written (CONCURRENT_TRANSACTIONS) is retried here for a moment, as
	// Kafka does (add.partitions.to.txn.retry.backoff.ms, .max.ms): the
	// markers take milliseconds, the client's own retry far longer.
	backoff, limit := a.cfg.RetryBackoff, a.cfg.RetryMax
	start := time.Now()
	for {
		codes := a.addOrVerifyOnce(ctx, transactionalID, producerID, epoch, parts, add)
		concurrent := false
		for _, code := range codes {
			concurrent = concurrent || code == kerr.ConcurrentTransactions.Code
		}
		if !add || !concurrent || time.Since(start)+backoff > limit {
			return codes
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return codes
		}
	}
}

func (a *PartitionAdder) addOrVerifyOnce(ctx context.Context, transactionalID string, producerID int64, epoch int16, parts []TopicPartition, add bool) map[TopicPartition]int16 {
	codes := make(map[TopicPartition]int16, len(parts))
	all := func(code int16) map[TopicPartition]int16 {
		for _, tp := range parts {
			codes[tp] = code
		}
		return codes
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = transactionalID, producerID, epoch, !add
	byTopic(parts, func(topic string, ps []int32) {
		tx.Topics = append(tx.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: topic, Partitions: ps})
	})
	req.Transactions = append(req.Transactions, tx)

	leader := a.coordinatorNode(transactionalID)
	var resp *kmsg.AddPartitionsToTxnResponse
	switch {
	case leader < 0:
		return all(kerr.CoordinatorNotAvailable.Code)
	case leader == a.cfg.NodeID:
		resp = a.cfg.Coordinator.AddPartitionsToTxn(ctx, req)
	default:
		kresp, err := a.cfg.Channel.Send(ctx, leader, req)
		switch {
		case errors.Is(err, kerr.UnsupportedVersion):
			a.cfg.Logger.Warn("transaction coordinator cannot verify partitions (AddPartitionsToTxn v4 not served); writing unverified",
				"node.id", leader, "transactional.id", transactionalID)
			return codes
		case err != nil:
			a.cfg.Logger.Warn("AddPartitionsToTxn to the transaction coordinator failed", "node.id", leader, "err", err)
			return all(kerr.NetworkException.Code)
		}
		resp = kresp.(*kmsg.AddPartitionsToTxnResponse)
	}
	if resp.ErrorCode != 0 {
		code := resp.ErrorCode
		if code == kerr.ClusterAuthorizationFailed.Code {
			code = kerr.InvalidTxnState.Code // the client must not see the broker's authorization
		}
		return all(code)
	}
	all(kerr.InvalidTxnState.Code) // a partition the answer leaves out was not verified
	for _, rtx := range resp.Transactions {
		if rtx.TransactionalID != transactionalID {
			continue
		}
		for _, rt := range rtx.Topics {
			for _, rp := range rt.Partitions {
				tp := TopicPartition{rt.Topic, rp.Partition}
				if _, ok := codes[tp]; !ok {
					continue
				}
				code := rp.ErrorCode
				if code == kerr.ProducerFenced.Code {
					code = kerr.InvalidProducerEpoch.Code
				}
				codes[tp] = code
			}
		}
	}
	return codes
}

// coordinatorNode is the node leading transactionalID's partition of
// __transaction_state, -1 when there is none.
func (a *PartitionAdder) coordinatorNode(transactionalID string) int32 {
	t, ok := a.cfg.Image().Topic("__transaction_state")
	p := a.cfg.Coordinator.PartitionFor(transactionalID)
	if !ok || int(p) >= len(t.Partitions) {
		return -1
	}
	return t.Partitions[p].Leader
}
