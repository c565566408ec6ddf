package broker

// ListTransactions, versions 0-2.
//
// Behavior: lists the transactional ids of the partitions of
// __transaction_state this node leads, filtered by state names (unknown
// names are echoed back), producer ids, from v1 by running longer than
// duration_filter ms and from v2 by a regular expression the whole id
// must match (KIP-1152; RE2 syntax, as Kafka's re2j; null or empty: no
// filter). A pattern that does not compile answers
// INVALID_REGULAR_EXPRESSION and nothing else. Only the ids the client
// may DESCRIBE are listed.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleListTransactions(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListTransactionsRequest)
	var resp *kmsg.ListTransactionsResponse
	if b.cfg.Txns == nil {
		// No coordinator: nothing to list, as a broker leading no
		// partition of __transaction_state answers.
		resp = req.ResponseKind().(*kmsg.ListTransactionsResponse)
	} else {
		resp = b.cfg.Txns.ListTransactions(ctx, req)
	}
	resp.Version = req.Version
	z := b.authz(c)
	resp.TransactionStates = slices.DeleteFunc(resp.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
		return !z.txnID(kmsg.ACLOperationDescribe, s.TransactionalID)
	})
	return resp, nil
}
