package broker

// OffsetFetch, versions 0-9.
//
// Behavior: Answered by the group coordinator from its in-memory offsets; v8+
// batches several groups. A partition without a committed offset answers
// offset -1.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleOffsetFetch(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := b.cfg.Groups.OffsetFetch(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
