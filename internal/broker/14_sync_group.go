package broker

// SyncGroup, versions 0-5.
//
// Behavior: The leader's assignments are handed to every member; followers wait
// for the leader. The group's metadata is persisted before answering.
// Without READ on the group: GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleSyncGroup(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SyncGroupRequest)
	var resp *kmsg.SyncGroupResponse
	if !b.authz(c).group(kmsg.ACLOperationRead, req.Group) {
		resp = kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.MemberAssignment = []byte{}
	} else {
		resp = b.cfg.Groups.SyncGroup(ctx, req)
	}
	resp.Version = req.Version
	return resp, nil
}
