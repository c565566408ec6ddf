package broker

// TxnOffsetCommit, versions 0-3.
//
// Behavior: the group coordinator writes the offsets as a transactional
// batch of the producer to __consumer_offsets, fenced by the producer's
// epoch there (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH before v3). They
// stay invisible to OffsetFetch until the transaction's COMMIT marker
// reaches the partition and are dropped by an ABORT. v4 (KIP-890's
// TRANSACTION_ABORTABLE) and v5 (transaction version 2) are not served.
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

	"github.com/samsa-io/samsa/internal/network"
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
	readable := z.topics(kmsg.ACLOperationRead)
	name := func(t kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic }
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
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, err.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
