package broker

// OffsetDelete, version 0.
//
// Behavior: Deletes committed offsets of partitions the group is not subscribed
// to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleOffsetDelete(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := b.cfg.Groups.OffsetDelete(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
