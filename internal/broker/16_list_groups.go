package broker

// ListGroups, versions 0-5.
//
// Behavior: The groups this node coordinates; v4 filters by state, v5 by type.
// A client with DESCRIBE on the cluster sees them all, others only the
// groups they may DESCRIBE (Kafka's rule).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleListGroups(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	z := b.authz(c)
	all := z.cluster(kmsg.ACLOperationDescribe)
	resp := b.cfg.Groups.ListGroups(ctx, req)
	resp.Version = req.Version
	if !all {
		resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return !z.group(kmsg.ACLOperationDescribe, g.Group)
		})
	}
	return resp, nil
}
