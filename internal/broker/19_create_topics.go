package broker

// CreateTopics, versions 2-7.
//
// Behavior: the controller validates, decides and commits; the broker only
// sets the response version. The controller answers after the new topics
// are applied to the metadata image this broker serves from, so a Metadata
// request that follows sees them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleCreateTopics(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := b.cfg.Controller.CreateTopics(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
