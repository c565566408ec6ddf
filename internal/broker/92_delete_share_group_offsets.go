package broker

// DeleteShareGroupOffsets, version 0 (KIP-932).
//
// Behavior: deletes an empty share group's state of the topics, so that
// it starts over at share.auto.offset.reset (NON_EMPTY_GROUP while it has
// members). Without DELETE on the group: GROUP_AUTHORIZATION_FAILED; a
// topic without READ is TOPIC_AUTHORIZATION_FAILED. While share groups are
// off: UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDeleteShareGroupOffsets(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	fail := func(code int16) (kmsg.Response, error) {
		resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
		resp.Version, resp.ErrorCode = req.Version, code
		return resp, nil
	}
	z := b.authz(c)
	switch {
	case !b.shareGroupsEnabled():
		return fail(kerr.UnsupportedVersion.Code)
	case !z.group(kmsg.ACLOperationDelete, req.GroupID):
		return fail(kerr.GroupAuthorizationFailed.Code)
	}
	sub := *req
	sub.Topics = nil
	var denied []kmsg.DeleteShareGroupOffsetsResponseTopic
	for _, t := range req.Topics {
		if z.topic(kmsg.ACLOperationRead, t.Topic) {
			sub.Topics = append(sub.Topics, t)
			continue
		}
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		denied = append(denied, rt)
	}
	resp := b.cfg.Groups.DeleteShareGroupOffsets(ctx, &sub)
	resp.Version = req.Version
	if resp.ErrorCode == 0 {
		resp.Topics = append(resp.Topics, denied...)
	}
	return resp, nil
}
