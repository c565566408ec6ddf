package broker

// OffsetCommit, versions 0-9.
//
// Behavior: Commits go to the group coordinator, which checks the member and
// generation (a generation of -1 with no member id is a standalone commit),
// writes OffsetCommit records to __consumer_offsets and answers once they are
// committed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleOffsetCommit(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := b.cfg.Groups.OffsetCommit(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
