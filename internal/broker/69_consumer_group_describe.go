package broker

// ConsumerGroupDescribe, versions 0-1 (KIP-848).
//
// Behavior: Consumer groups whose __consumer_offsets partition this node
// leads: group and assignment epochs, assignor, and each member's
// subscription, current and target assignment. Classic groups answer
// GROUP_ID_NOT_FOUND, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleConsumerGroupDescribe(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	resp := b.cfg.Groups.ConsumerGroupDescribe(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
