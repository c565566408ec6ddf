package broker

// DeleteTopics, versions 1-6.
//
// Behavior: topics are named, or from v6 given by id; the controller
// decides and commits, and the logs are deleted when the removal is
// published to this broker.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDeleteTopics(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := b.cfg.Controller.Forward(ctx, req).(*kmsg.DeleteTopicsResponse)
	resp.Version = req.Version
	return resp, nil
}
