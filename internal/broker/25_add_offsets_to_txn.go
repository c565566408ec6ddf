package broker

// AddOffsetsToTxn, versions 0-4.
//
// Behavior: the transaction coordinator adds the group's partition of
// __consumer_offsets to the transaction, so that the TxnOffsetCommit that
// follows is ended by the same markers as the produced records. v4 only
// lets the answer be KIP-890's TRANSACTION_ABORTABLE. (A transaction
// version 2 client sends none: TxnOffsetCommit v5+ adds the partition.)
// Authorization (KafkaApis): WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleAddOffsetsToTxn(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	z := b.authz(c)
	var resp *kmsg.AddOffsetsToTxnResponse
	switch {
	case !z.txnID(kmsg.ACLOperationWrite, req.TransactionalID):
		resp = req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !z.group(kmsg.ACLOperationRead, req.Group):
		resp = req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case b.cfg.Txns == nil:
		resp = req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	default:
		resp = b.cfg.Txns.AddOffsetsToTxn(ctx, req)
	}
	resp.Version = req.Version
	return resp, nil
}
