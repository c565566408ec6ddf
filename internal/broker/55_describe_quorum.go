package broker

// DescribeQuorum, versions 0-2.
//
// Behavior: forwarded to the active controller, as Kafka's brokers do: only
// the quorum leader knows each voter's log end offset and last fetch.
// Partition __cluster_metadata-0 is the only one described.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeQuorum(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeQuorumRequest)
	resp := b.cfg.Controller.Forward(ctx, req).(*kmsg.DescribeQuorumResponse)
	resp.Version = req.Version
	return resp, nil
}
