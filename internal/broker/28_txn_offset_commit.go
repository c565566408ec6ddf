package broker

// TxnOffsetCommit, versions 0-6.
//
// Behavior: the group coordinator writes the offsets as a transactional
// batch of the producer to __consumer_offsets, fenced by the producer's
// epoch there (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH before v3). They
// stay invisible to OffsetFetch until the transaction's COMMIT marker
// reaches the partition and are dropped by an ABORT. v6 names topics by
// id (UNKNOWN_TOPIC_ID for one the image does not know).
//
// KIP-890: before the write, when the producer has no transaction open on
// the group's partition of __consumer_offsets, the transaction
// coordinator is asked to add that partition to the transaction (v5+,
// transaction version 2, whose clients send no AddOffsetsToTxn) or, with
// transaction.partition.verification.enable, to confirm it is in it
// (v0-v4). A refusal answers every partition: INVALID_TXN_STATE
// (TRANSACTION_ABORTABLE from v4), INVALID_PRODUCER_EPOCH for a fenced
// producer, COORDINATOR_NOT_AVAILABLE, which clients retry, while the
// transaction coordinator is busy or unreachable (Kafka's group
// coordinator maps the leader's NOT_ENOUGH_REPLICAS so). As a produce's,
// the offsets' append is tied to the check by its verification guard
// (Kafka's group coordinator passes it to the append): a marker of the
// producer that lands between them voids the check and the append is
// refused (COORDINATOR_NOT_AVAILABLE; the client's retry is checked
// again), so a late commit cannot open a transaction nobody ends.
//
// Authorization (KafkaApis): every partition answers
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED without WRITE on the
// transactional id, GROUP_AUTHORIZATION_FAILED without READ on the group;
// a topic without READ answers TOPIC_AUTHORIZATION_FAILED and only the
// others are committed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/replica"
)

func handleTxnOffsetCommit(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	z := b.authz(c)
	var denied *kerr.Error
	switch {
	case !z.txnID(kmsg.ACLOperationWrite, req.TransactionalID):
		denied = kerr.TransactionalIDAuthorizationFailed
	case !z.group(kmsg.ACLOperationRead, req.Group):
		denied = kerr.GroupAuthorizationFailed
	}
	if denied != nil {
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		resp.Version = req.Version
		resp.Topics = txnOffsetCommitErrors(req.Topics, denied)
		return resp, nil
	}
	ctx, verified, err := b.addOffsetsPartition(ctx, req)
	if err != nil {
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		resp.Version = req.Version
		resp.Topics = txnOffsetCommitErrors(req.Topics, err)
		return resp, nil
	}
	defer verified()
	readable := z.topics(kmsg.ACLOperationRead)
	img := b.cfg.Image()
	name := func(t kmsg.TxnOffsetCommitRequestTopic) string {
		if req.Version < 6 {
			return t.Topic
		}
		if ti, ok := img.TopicByID(metadata.Uuid(t.TopicID)); ok {
			return ti.Name
		}
		return "" // the group coordinator answers UNKNOWN_TOPIC_ID
	}
	if req.Version >= 6 {
		auth := readable
		readable = func(topic string) bool { return topic == "" || auth(topic) }
	}
	sub := *req
	var cut bool
	sub.Topics, cut = splitTopics(req.Topics, name, readable)
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	if len(sub.Topics) > 0 || !cut {
		resp = b.cfg.Groups.TxnOffsetCommit(ctx, &sub)
	}
	resp.Version = req.Version
	if cut {
		resp.Topics = mergeTopics(req.Topics, name, readable, resp.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) kmsg.TxnOffsetCommitResponseTopic {
			return txnOffsetCommitErrors([]kmsg.TxnOffsetCommitRequestTopic{t}, kerr.TopicAuthorizationFailed)[0]
		})
	}
	return resp, nil
}

// txnOffsetCommitErrors answers every partition of topics with err.
func txnOffsetCommitErrors(topics []kmsg.TxnOffsetCommitRequestTopic, err *kerr.Error) []kmsg.TxnOffsetCommitResponseTopic {
	var out []kmsg.TxnOffsetCommitResponseTopic
	for _, t := range topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, err.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// addOffsetsPartition verifies (v0-v4, when verification is on) or adds
// (v5+) the group's partition of __consumer_offsets in the producer's
// transaction, unless the producer has a transaction open there already.
// Only the partition's leader checks: elsewhere the group coordinator
// answers NOT_COORDINATOR. After a check it returns ctx carrying the
// verification guard for the offsets' append, and done, to call once the
// write is over.
func (b *Broker) addOffsetsPartition(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (_ context.Context, done func(), _ *kerr.Error) {
	none := func() {}
	add := req.Version >= 5
	if b.cfg.TxnPartitions == nil || b.cfg.Groups == nil || (!add && !b.txnVerification()) {
		return ctx, none, nil
	}
	tp := txn.TopicPartition{Topic: "__consumer_offsets", Partition: b.cfg.Groups.PartitionFor(req.Group)}
	p, err := b.leaderPartition(tp.Topic, tp.Partition)
	if err != nil {
		return ctx, none, nil
	}
	guard, needed := p.StartTxnVerification(req.ProducerID, req.ProducerEpoch)
	if !needed {
		return ctx, none, nil
	}
	end := func() { p.EndTxnVerification(req.ProducerID, guard) }
	code := b.cfg.TxnPartitions.AddOrVerify(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}, add)[tp]
	switch code {
	case 0:
		// The append (replica.AppendAsCoordinator) goes on under the
		// guard; end drops it if the append never used it.
		return replica.WithVerificationGuard(ctx, guard), end, nil
	case kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		end()
		return ctx, none, kerr.CoordinatorNotAvailable
	case kerr.TransactionAbortable.Code:
		if req.Version < 4 {
			end()
			return ctx, none, kerr.InvalidTxnState
		}
	}
	end()
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return ctx, none, e
	}
	return ctx, none, kerr.InvalidTxnState
}
