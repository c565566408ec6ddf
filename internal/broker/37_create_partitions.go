package broker

// CreatePartitions, versions 0-3.
//
// Behavior: the controller decides (counts may only grow) and commits; the
// new partitions' logs are created when the change is published.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleCreatePartitions(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := b.cfg.Controller.Forward(ctx, req).(*kmsg.CreatePartitionsResponse)
	resp.Version = req.Version
	return resp, nil
}
