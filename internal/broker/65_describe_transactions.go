package broker

// DescribeTransactions, version 0.
//
// Behavior: each transactional id owned by this node's transaction
// coordinator is described (state, producer id and epoch, timeout, start
// time, partitions); ids owned elsewhere get NOT_COORDINATOR and unknown
// ids TRANSACTIONAL_ID_NOT_FOUND. Admin clients send one request per
// coordinator, found with FindCoordinator type 1.
//
// Authorization (KafkaApis): an id without DESCRIBE answers
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a described transaction lists
// only the topics the client may DESCRIBE.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeTransactions(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	z := b.authz(c)
	allowed := make([]bool, len(req.TransactionalIDs))
	sub := *req
	sub.TransactionalIDs = nil
	for i, id := range req.TransactionalIDs {
		if allowed[i] = z.txnID(kmsg.ACLOperationDescribe, id); allowed[i] {
			sub.TransactionalIDs = append(sub.TransactionalIDs, id)
		}
	}
	req = &sub
	var resp *kmsg.DescribeTransactionsResponse
	if b.cfg.Txns == nil {
		resp = req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for _, id := range req.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			st.StartTimestamp, st.ProducerID, st.ProducerEpoch = -1, -1, -1
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	} else {
		resp = b.cfg.Txns.DescribeTransactions(ctx, req)
	}
	resp.Version = req.Version
	if !z.on() {
		return resp, nil
	}
	describable := z.topics(kmsg.ACLOperationDescribe)
	got := resp.TransactionStates
	resp.TransactionStates = nil
	for i, id := range kreq.(*kmsg.DescribeTransactionsRequest).TransactionalIDs {
		if !allowed[i] {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
			st.StartTimestamp, st.ProducerID, st.ProducerEpoch = -1, -1, -1
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		if len(got) == 0 {
			break
		}
		st := got[0]
		got = got[1:]
		st.Topics = slices.DeleteFunc(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
			return !describable(t.Topic)
		})
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
