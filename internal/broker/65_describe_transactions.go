package broker

// DescribeTransactions, version 0.
//
// Behavior: each transactional id owned by this node's transaction
// coordinator is described (state, producer id and epoch, timeout, start
// time, partitions); ids owned elsewhere get NOT_COORDINATOR and unknown
// ids TRANSACTIONAL_ID_NOT_FOUND. Admin clients send one request per
// coordinator, found with FindCoordinator type 1.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeTransactions(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
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
	return resp, nil
}
