package broker

// DeleteGroups, versions 0-3.
//
// Behavior: Only empty groups can be deleted (NON_EMPTY_GROUP otherwise); their
// offsets go with them. A group without DELETE answers
// GROUP_AUTHORIZATION_FAILED. v3 adds a per-group error message, which
// Kafka 4.4 sets only when its streams-group topology plugin fails to
// delete a group's topology (Samsa has no streams groups): like Kafka's,
// every other error, GROUP_ID_NOT_FOUND and NON_EMPTY_GROUP included,
// has none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDeleteGroups(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	z := b.authz(c)
	allowed := make([]bool, len(req.Groups))
	sub := *req
	sub.Groups = nil
	for i, g := range req.Groups {
		if allowed[i] = z.group(kmsg.ACLOperationDelete, g); allowed[i] {
			sub.Groups = append(sub.Groups, g)
		}
	}
	deleted := b.cfg.Groups.DeleteGroups(ctx, &sub)
	resp := *deleted
	resp.Version = req.Version
	resp.Groups = nil
	for i, g := range req.Groups {
		if !allowed[i] {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		resp.Groups = append(resp.Groups, deleted.Groups[0])
		deleted.Groups = deleted.Groups[1:]
	}
	return &resp, nil
}
