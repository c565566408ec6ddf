package broker

// AlterPartitionReassignments, versions 0-1.
//
// Behavior: forwarded to the active controller, which starts, changes or
// cancels (null replicas) each partition's move (KIP-455). This broker
// starts hosting a new replica when the published Replicas include it, and
// drops a removed one when they no longer do: data moves by replication.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleAlterPartitionReassignments(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := b.cfg.Controller.Forward(ctx, req).(*kmsg.AlterPartitionAssignmentsResponse)
	resp.Version = req.Version
	return resp, nil
}
