package broker

// ListPartitionReassignments, version 0.
//
// Behavior: forwarded to the active controller, whose image is the most
// recent; null topics lists every partition being moved.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleListPartitionReassignments(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := b.cfg.Controller.Forward(ctx, req).(*kmsg.ListPartitionReassignmentsResponse)
	resp.Version = req.Version
	return resp, nil
}
