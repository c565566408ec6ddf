package broker

// JoinGroup, versions 0-9.
//
// Behavior: The response is delayed until the group's rebalance completes (or
// the rebalance timeout passes), as in Kafka. From v4 a first join without a
// member id gets MEMBER_ID_REQUIRED and an id to rejoin with. Without READ
// on the group: GROUP_AUTHORIZATION_FAILED.

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/network"
)

func handleJoinGroup(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.JoinGroupRequest)
	if !b.authz(c).group(kmsg.ACLOperationRead, req.Group) {
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.Version = req.Version
		resp.ErrorCode, resp.Generation = kerr.GroupAuthorizationFailed.Code, -1
		return resp, nil
	}
	clientID := ""
	if id := requestHeader(ctx).ClientID; id != nil {
		clientID = *id
	}
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	resp := b.cfg.Groups.JoinGroup(group.WithClient(ctx, clientID, "/"+host), req)
	resp.Version = req.Version
	return resp, nil
}
