package broker

// ListGroups, versions 0-5.
//
// Behavior: The groups this node coordinates; v4 filters by state, v5 by type.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleListGroups(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := b.cfg.Groups.ListGroups(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
