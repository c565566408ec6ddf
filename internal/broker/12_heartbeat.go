package broker

// Heartbeat, versions 0-4.
//
// Behavior: Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to
// rejoin. Without READ on the group: GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleHeartbeat(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.HeartbeatRequest)
	var resp *kmsg.HeartbeatResponse
	if !b.authz(c).group(kmsg.ACLOperationRead, req.Group) {
		resp = kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	} else {
		resp = b.cfg.Groups.Heartbeat(ctx, req)
	}
	resp.Version = req.Version
	return resp, nil
}
