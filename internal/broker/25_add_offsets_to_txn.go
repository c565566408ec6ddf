package broker

// AddOffsetsToTxn, versions 0-3.
//
// Behavior: the transaction coordinator adds the group's partition of
// __consumer_offsets to the transaction, so that the TxnOffsetCommit that
// follows is ended by the same markers as the produced records. v4 (which
// only adds the TRANSACTION_ABORTABLE code of KIP-890) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleAddOffsetsToTxn(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	var resp *kmsg.AddOffsetsToTxnResponse
	if b.cfg.Txns == nil {
		resp = req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	} else {
		resp = b.cfg.Txns.AddOffsetsToTxn(ctx, req)
	}
	resp.Version = req.Version
	return resp, nil
}
