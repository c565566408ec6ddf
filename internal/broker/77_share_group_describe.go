package broker

// ShareGroupDescribe, version 1 (KIP-932).
//
// Behavior: each group is described by its coordinator: state (Empty or
// Stable), group and assignment epochs, the "simple" assignor and every
// member with its subscription and assignment. A group that does not
// exist, or is not a share group, is GROUP_ID_NOT_FOUND; without DESCRIBE
// on the group, GROUP_AUTHORIZATION_FAILED. While share groups are off
// every group is answered UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleShareGroupDescribe(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	resp.Version = req.Version
	failed := func(id string, code int16) kmsg.ShareGroupDescribeResponseGroup {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID, dg.ErrorCode = id, code
		return dg
	}
	if !b.shareGroupsEnabled() {
		for _, g := range req.GroupIDs {
			resp.Groups = append(resp.Groups, failed(g, kerr.UnsupportedVersion.Code))
		}
		return resp, nil
	}
	z := b.authz(c)
	allowed := make([]bool, len(req.GroupIDs))
	sub := *req
	sub.GroupIDs = nil
	for i, g := range req.GroupIDs {
		if allowed[i] = z.group(kmsg.ACLOperationDescribe, g); allowed[i] {
			sub.GroupIDs = append(sub.GroupIDs, g)
		}
	}
	described := b.cfg.Groups.ShareGroupDescribe(ctx, &sub).Groups
	for i, g := range req.GroupIDs {
		if !allowed[i] {
			resp.Groups = append(resp.Groups, failed(g, kerr.GroupAuthorizationFailed.Code))
			continue
		}
		dg := described[0]
		described = described[1:]
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = z.authorizedOps(kmsg.ACLResourceTypeGroup, dg.GroupID)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
