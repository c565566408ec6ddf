package broker

// ElectLeaders, versions 0-2.
//
// Behavior: forwarded to the active controller, which runs preferred
// (type 0) or unclean (type 1) elections; null topics means every
// partition (kafka-leader-election --all-topic-partitions), and then
// partitions that need no election are left out of the response.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleElectLeaders(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ElectLeadersRequest)
	resp := b.cfg.Controller.Forward(ctx, req).(*kmsg.ElectLeadersResponse)
	resp.Version = req.Version
	return resp, nil
}
