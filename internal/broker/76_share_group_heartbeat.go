package broker

// ShareGroupHeartbeat, version 1 (KIP-932).
//
// Behavior: A share group member names itself, joins with epoch 0 and its
// subscribed topics, heartbeats with the epoch it was given and leaves
// with -1. The coordinator assigns with the simple assignor; members of a
// share group may share partitions. Without READ on the group:
// GROUP_AUTHORIZATION_FAILED; without DESCRIBE on a subscribed topic:
// TOPIC_AUTHORIZATION_FAILED. While the cluster's share.version is below 1
// (or this node has no share-state persister), every request is answered
// UNSUPPORTED_VERSION, as Kafka answers while share groups are disabled.

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleShareGroupHeartbeat(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	fail := func(code int16) (kmsg.Response, error) {
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.Version, resp.ErrorCode = req.Version, code
		return resp, nil
	}
	if !b.shareGroupsEnabled() {
		return fail(kerr.UnsupportedVersion.Code)
	}
	z := b.authz(c)
	if !z.group(kmsg.ACLOperationRead, req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed.Code)
	}
	for _, t := range req.SubscribedTopicNames {
		if !z.topic(kmsg.ACLOperationDescribe, t) {
			return fail(kerr.TopicAuthorizationFailed.Code)
		}
	}
	clientID := ""
	if id := requestHeader(ctx).ClientID; id != nil {
		clientID = *id
	}
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	resp := b.cfg.Groups.ShareGroupHeartbeat(group.WithClient(ctx, clientID, "/"+host), req)
	resp.Version = req.Version
	return resp, nil
}

// shareGroupsEnabled reports whether share groups are on: the cluster's
// finalized share.version is at least 1 and this node serves share
// partitions.
func (b *Broker) shareGroupsEnabled() bool {
	return b.cfg.ShareParts != nil && b.cfg.Image().Features()[metadata.ShareVersionFeature] >= 1
}
