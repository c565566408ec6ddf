package broker

// DescribeGroups, versions 0-5.
//
// Behavior: Groups whose __consumer_offsets partition this node leads: state,
// protocol and members with their metadata and assignments.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeGroups(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := b.cfg.Groups.DescribeGroups(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
