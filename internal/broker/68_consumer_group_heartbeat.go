package broker

// ConsumerGroupHeartbeat, versions 0-1 (KIP-848).
//
// Behavior: The coordinator owns the assignment: a member joins with epoch
// 0, heartbeats with the epoch it was given, revokes partitions before new
// ones are assigned, and leaves with epoch -1 (or -2 for a static member
// that will come back). v1 members name themselves and may subscribe by
// regex. Without READ on the group: GROUP_AUTHORIZATION_FAILED. While
// the cluster's group.version is below 1 (KIP-848 not finalized, as in a
// log formatted with --release-version 3.9) every heartbeat is answered
// UNSUPPORTED_VERSION, as Kafka does.

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleConsumerGroupHeartbeat(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !b.consumerProtocolEnabled() {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.Version = req.Version
		resp.ErrorCode, resp.ErrorMessage = kerr.UnsupportedVersion.Code, kmsg.StringPtr(kerr.UnsupportedVersion.Description)
		return resp, nil
	}
	if !b.authz(c).group(kmsg.ACLOperationRead, req.Group) {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.Version = req.Version
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	clientID := ""
	if id := requestHeader(ctx).ClientID; id != nil {
		clientID = *id
	}
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	resp := b.cfg.Groups.ConsumerGroupHeartbeat(group.WithClient(ctx, clientID, "/"+host), req)
	resp.Version = req.Version
	return resp, nil
}

// consumerProtocolEnabled reports whether KIP-848 groups are on: the
// cluster's finalized group.version is at least 1.
func (b *Broker) consumerProtocolEnabled() bool {
	return b.cfg.Image().Features()[metadata.GroupVersionFeature] >= 1
}
