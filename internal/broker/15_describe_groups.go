package broker

// DescribeGroups, versions 0-6.
//
// Behavior: Groups whose __consumer_offsets partition this node leads: state,
// protocol and members with their metadata and assignments. A group
// without DESCRIBE answers GROUP_AUTHORIZATION_FAILED; with
// include_authorized_operations (v3+) each described group carries the
// operations the client may do on it.
//
// A group that does not exist is Dead with no error before v6; from v6
// (KIP-1043) it answers GROUP_ID_NOT_FOUND with the message "Group <id>
// not found." (the coordinator's). Other errors carry no message, as in
// Kafka. Unlike Kafka 4.4, which describes classic groups only, a KIP-848
// consumer group is described in the classic view (internal/coordinator/
// group's describe says why).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeGroups(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	z := b.authz(c)
	allowed := make([]bool, len(req.Groups))
	sub := *req
	sub.Groups = nil
	for i, g := range req.Groups {
		if allowed[i] = z.group(kmsg.ACLOperationDescribe, g); allowed[i] {
			sub.Groups = append(sub.Groups, g)
		}
	}
	described := b.cfg.Groups.DescribeGroups(ctx, &sub)
	resp := *described
	resp.Version = req.Version
	resp.Groups = nil
	for i, g := range req.Groups {
		if !allowed[i] {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg := described.Groups[0]
		described.Groups = described.Groups[1:]
		if req.Version >= 3 && req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = z.authorizedOps(kmsg.ACLResourceTypeGroup, dg.Group)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return &resp, nil
}
