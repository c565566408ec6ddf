package broker

// OffsetDelete, version 0.
//
// Behavior: Deletes committed offsets of partitions the group is not subscribed
// to (GROUP_SUBSCRIBED_TO_TOPIC otherwise). Without DELETE on the group:
// GROUP_AUTHORIZATION_FAILED; a topic without READ answers
// TOPIC_AUTHORIZATION_FAILED for its partitions and keeps its offsets.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleOffsetDelete(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	z := b.authz(c)
	if !z.group(kmsg.ACLOperationDelete, req.Group) {
		resp := kmsg.NewPtrOffsetDeleteResponse()
		resp.Version, resp.ErrorCode = req.Version, kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	readable := z.topics(kmsg.ACLOperationRead)
	name := func(t kmsg.OffsetDeleteRequestTopic) string { return t.Topic }
	sub := *req
	sub.Topics, _ = splitTopics(req.Topics, name, readable)
	resp := b.cfg.Groups.OffsetDelete(ctx, &sub)
	resp.Version = req.Version
	if resp.ErrorCode == 0 {
		resp.Topics = mergeTopics(req.Topics, name, readable, resp.Topics, func(t kmsg.OffsetDeleteRequestTopic) kmsg.OffsetDeleteResponseTopic {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
	}
	return resp, nil
}
