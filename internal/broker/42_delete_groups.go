package broker

// DeleteGroups, versions 0-2.
//
// Behavior: Only empty groups can be deleted (NON_EMPTY_GROUP otherwise); their
// offsets go with them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDeleteGroups(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := b.cfg.Groups.DeleteGroups(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
