package broker

// AddPartitionsToTxn, versions 0-5.
//
// Behavior:
//   - The transaction coordinator adds the partitions to the producer's
//     transaction, starting one if none is ongoing; every partition gets
//     the same code.
//   - Partitions of unknown topics, or beyond a topic's partition count, get
//     UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED
//     without asking the coordinator, as Kafka answers.
//   - v4+ is KIP-890's batched broker-to-broker form, which partition
//     leaders send to verify (VerifyOnly) or add the partitions of their
//     transactional writes (txn.PartitionAdder). The sender needs
//     CLUSTER_ACTION on the cluster, else the request answers
//     CLUSTER_AUTHORIZATION_FAILED at the top level. Each transaction is
//     checked for unknown partitions as v0-v3 are, and the rest go to the
//     coordinator in one request.
//   - Authorization (KafkaApis): without WRITE on the transactional id
//     every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED. A
//     topic without WRITE answers TOPIC_AUTHORIZATION_FAILED, as does an
//     internal topic, which a client never adds itself (Kafka answers so
//     even without an authorizer); then the other partitions answer
//     OPERATION_NOT_ATTEMPTED, unknown ones UNKNOWN_TOPIC_OR_PARTITION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleAddPartitionsToTxn(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	if req.Version >= 4 {
		return b.addPartitionsForBrokers(ctx, c, req), nil
	}
	z := b.authz(c)
	if !z.txnID(kmsg.ACLOperationWrite, req.TransactionalID) {
		resp := addPartitionsAnswer(req, func(string, int32) int16 { return kerr.TransactionalIDAuthorizationFailed.Code })
		resp.Version = req.Version
		return resp, nil
	}
	writable := z.topics(kmsg.ACLOperationWrite)
	img := b.cfg.Image()
	denied := map[string]bool{}
	unknown := make(map[string]map[int32]bool)
	for _, t := range req.Topics {
		if isInternalTopic(t.Topic) || !writable(t.Topic) {
			denied[t.Topic] = true
			continue
		}
		ti, ok := img.Topic(t.Topic)
		for _, p := range t.Partitions {
			if !ok || p < 0 || int(p) >= len(ti.Partitions) {
				if unknown[t.Topic] == nil {
					unknown[t.Topic] = map[int32]bool{}
				}
				unknown[t.Topic][p] = true
			}
		}
	}
	var resp *kmsg.AddPartitionsToTxnResponse
	switch {
	case len(unknown) > 0 || len(denied) > 0:
		resp = addPartitionsAnswer(req, func(topic string, p int32) int16 {
			switch {
			case denied[topic]:
				return kerr.TopicAuthorizationFailed.Code
			case unknown[topic][p]:
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		})
	case b.cfg.Txns == nil:
		resp = addPartitionsAnswer(req, func(string, int32) int16 { return kerr.CoordinatorNotAvailable.Code })
	default:
		resp = b.cfg.Txns.AddPartitionsToTxn(ctx, req)
	}
	resp.Version = req.Version
	return resp, nil
}

// addPartitionsAnswer answers every requested partition with code(topic, p).
func addPartitionsAnswer(req *kmsg.AddPartitionsToTxnRequest, code func(topic string, p int32) int16) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code(t.Topic, p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// addPartitionsForBrokers serves v4+, the partition leaders' batched form.
func (b *Broker) addPartitionsForBrokers(ctx context.Context, c *network.Conn, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	resp.Version = req.Version
	switch {
	case !b.authz(c).cluster(kmsg.ACLOperationClusterAction):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	case b.cfg.Txns == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	img := b.cfg.Image()
	known := func(topic string, p int32) bool {
		t, ok := img.Topic(topic)
		return ok && p >= 0 && int(p) < len(t.Partitions)
	}
	sub := *req
	sub.Transactions = nil
	answered := map[string]kmsg.AddPartitionsToTxnResponseTransaction{}
	for _, tx := range req.Transactions {
		bad := false
		for _, t := range tx.Topics {
			for _, p := range t.Partitions {
				bad = bad || !known(t.Topic, p)
			}
		}
		if !bad {
			sub.Transactions = append(sub.Transactions, tx)
			continue
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for _, t := range tx.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.OperationNotAttempted.Code
				if !known(t.Topic, p) {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		answered[tx.TransactionalID] = rtx
	}
	var fromCoordinator map[string]kmsg.AddPartitionsToTxnResponseTransaction
	if len(sub.Transactions) > 0 {
		fromCoordinator = map[string]kmsg.AddPartitionsToTxnResponseTransaction{}
		for _, rtx := range b.cfg.Txns.AddPartitionsToTxn(ctx, &sub).Transactions {
			fromCoordinator[rtx.TransactionalID] = rtx
		}
	}
	for _, tx := range req.Transactions {
		if rtx, ok := answered[tx.TransactionalID]; ok {
			resp.Transactions = append(resp.Transactions, rtx)
		} else if rtx, ok := fromCoordinator[tx.TransactionalID]; ok {
			resp.Transactions = append(resp.Transactions, rtx)
		}
	}
	return resp
}
