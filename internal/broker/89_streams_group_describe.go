package broker

// StreamsGroupDescribe, versions 0-1 (KIP-1071).
//
// Behavior: Streams groups whose __consumer_offsets partition this node
// leads: group and assignment epochs, the topology, and each member's
// process, endpoint and current and target tasks. Other group types answer
// GROUP_ID_NOT_FOUND, as in Kafka. A group without DESCRIBE answers
// GROUP_AUTHORIZATION_FAILED; with include_authorized_operations each
// described group carries the operations the client may do on it. v1's
// topology description is never stored: asked for, its status is
// NOT_STORED (1). While streams.version is below 1, every group answers
// UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleStreamsGroupDescribe(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.StreamsGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	if b.cfg.Groups == nil || !b.streamsProtocolEnabled() {
		for _, g := range req.Groups {
			dg := kmsg.NewStreamsGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.UnsupportedVersion.Code
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	}
	z := b.authz(c)
	allowed := make([]bool, len(req.Groups))
	sub := *req
	sub.Groups = nil
	for i, g := range req.Groups {
		if allowed[i] = z.group(kmsg.ACLOperationDescribe, g); allowed[i] {
			sub.Groups = append(sub.Groups, g)
		}
	}
	described := b.cfg.Groups.StreamsGroupDescribe(ctx, &sub)
	for i, g := range req.Groups {
		if !allowed[i] {
			dg := kmsg.NewStreamsGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg := described.Groups[0]
		described.Groups = described.Groups[1:]
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = z.authorizedOps(kmsg.ACLResourceTypeGroup, dg.Group)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
