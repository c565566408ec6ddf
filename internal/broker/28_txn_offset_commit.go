package broker

// TxnOffsetCommit, versions 0-3.
//
// Behavior: the group coordinator writes the offsets as a transactional
// batch of the producer to __consumer_offsets, fenced by the producer's
// epoch there (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH before v3). They
// stay invisible to OffsetFetch until the transaction's COMMIT marker
// reaches the partition and are dropped by an ABORT. v4 (KIP-890's
// TRANSACTION_ABORTABLE) and v5 (transaction version 2) are not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleTxnOffsetCommit(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	resp := b.cfg.Groups.TxnOffsetCommit(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
