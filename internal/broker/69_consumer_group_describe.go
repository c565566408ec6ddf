package broker

// ConsumerGroupDescribe, versions 0-1 (KIP-848).
//
// Behavior: Consumer groups whose __consumer_offsets partition this node
// leads: group and assignment epochs, assignor, and each member's
// subscription, current and target assignment. Classic groups answer
// GROUP_ID_NOT_FOUND, as in Kafka. A group without DESCRIBE answers
// GROUP_AUTHORIZATION_FAILED; with include_authorized_operations each
// described group carries the operations the client may do on it.
// While group.version is below 1, every group answers UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleConsumerGroupDescribe(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	if !b.consumerProtocolEnabled() {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, g := range req.Groups {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
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
	described := b.cfg.Groups.ConsumerGroupDescribe(ctx, &sub)
	resp := *described
	resp.Version = req.Version
	resp.Groups = nil
	for i, g := range req.Groups {
		if !allowed[i] {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
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
	return &resp, nil
}
