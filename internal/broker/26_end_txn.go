package broker

// EndTxn, versions 0-5.
//
// Behavior: the transaction coordinator writes PrepareCommit or
// PrepareAbort and answers; the markers and the Complete state follow in
// the background, and until then the producer's next request gets
// CONCURRENT_TRANSACTIONS (clients retry it). v4 only lets the answer be
// KIP-890's TRANSACTION_ABORTABLE. v5 is transaction version 2: every
// EndTxn bumps the producer epoch and answers the producer id and epoch
// of the next transaction (see coordinator/txn). Without WRITE on the
// transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleEndTxn(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.EndTxnRequest)
	var resp *kmsg.EndTxnResponse
	switch {
	case !b.authz(c).txnID(kmsg.ACLOperationWrite, req.TransactionalID):
		resp = req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case b.cfg.Txns == nil:
		resp = req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	default:
		resp = b.cfg.Txns.EndTxn(ctx, req)
	}
	resp.Version = req.Version
	return resp, nil
}
