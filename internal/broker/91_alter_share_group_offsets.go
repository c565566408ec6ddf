package broker

// AlterShareGroupOffsets, version 0 (KIP-932).
//
// Behavior: sets the start offsets of an empty share group's partitions
// (NON_EMPTY_GROUP while it has members; GROUP_ID_NOT_FOUND for no such
// share group). Without READ on the group: GROUP_AUTHORIZATION_FAILED; a
// topic without READ is TOPIC_AUTHORIZATION_FAILED for its partitions.
// While share groups are off: UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleAlterShareGroupOffsets(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	fail := func(code int16) (kmsg.Response, error) {
		resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
		resp.Version, resp.ErrorCode = req.Version, code
		return resp, nil
	}
	z := b.authz(c)
	switch {
	case !b.shareGroupsEnabled():
		return fail(kerr.UnsupportedVersion.Code)
	case !z.group(kmsg.ACLOperationRead, req.GroupID):
		return fail(kerr.GroupAuthorizationFailed.Code)
	}
	sub := *req
	sub.Topics = nil
	var denied []kmsg.AlterShareGroupOffsetsResponseTopic
	for _, t := range req.Topics {
		if z.topic(kmsg.ACLOperationRead, t.Topic) {
			sub.Topics = append(sub.Topics, t)
			continue
		}
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	resp := b.cfg.Groups.AlterShareGroupOffsets(ctx, &sub)
	resp.Version = req.Version
	if resp.ErrorCode == 0 {
		resp.Topics = append(resp.Topics, denied...)
	}
	return resp, nil
}
