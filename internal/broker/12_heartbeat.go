package broker

// Heartbeat, versions 0-4.
//
// Behavior: Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to
// rejoin.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleHeartbeat(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.HeartbeatRequest)
	resp := b.cfg.Groups.Heartbeat(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
