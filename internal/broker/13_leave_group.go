package broker

// LeaveGroup, versions 0-5.
//
// Behavior: Removes members (batched from v3, by member id or group instance
// id) and starts a rebalance for the rest. Without READ on the group:
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleLeaveGroup(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	var resp *kmsg.LeaveGroupResponse
	if !b.authz(c).group(kmsg.ACLOperationRead, req.Group) {
		resp = kmsg.NewPtrLeaveGroupResponse()
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	} else {
		resp = b.cfg.Groups.LeaveGroup(ctx, req)
	}
	resp.Version = req.Version
	return resp, nil
}
