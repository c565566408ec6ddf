package broker

// SyncGroup, versions 0-5.
//
// Behavior: The leader's assignments are handed to every member; followers wait
// for the leader. The group's metadata is persisted before answering.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleSyncGroup(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SyncGroupRequest)
	resp := b.cfg.Groups.SyncGroup(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
