package broker

// OffsetCommit, versions 0-9.
//
// Behavior: Commits go to the group coordinator, which checks the member and
// generation (a generation of -1 with no member id is a standalone commit),
// writes OffsetCommit records to __consumer_offsets and answers once they are
// committed.
//
// Authorization (KafkaApis): without READ on the group every partition
// answers GROUP_AUTHORIZATION_FAILED; a topic without READ answers
// TOPIC_AUTHORIZATION_FAILED and only the others are committed (none
// left: the coordinator is not asked).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleOffsetCommit(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	z := b.authz(c)
	if !z.group(kmsg.ACLOperationRead, req.Group) {
		resp := kmsg.NewPtrOffsetCommitResponse()
		resp.Version = req.Version
		resp.Topics = offsetCommitErrors(req.Topics, kerr.GroupAuthorizationFailed)
		return resp, nil
	}
	readable := z.topics(kmsg.ACLOperationRead)
	name := func(t kmsg.OffsetCommitRequestTopic) string { return t.Topic }
	sub := *req
	var cut bool
	sub.Topics, cut = splitTopics(req.Topics, name, readable)
	resp := kmsg.NewPtrOffsetCommitResponse()
	if len(sub.Topics) > 0 || !cut {
		resp = b.cfg.Groups.OffsetCommit(ctx, &sub)
	}
	resp.Version = req.Version
	if cut {
		resp.Topics = mergeTopics(req.Topics, name, readable, resp.Topics, func(t kmsg.OffsetCommitRequestTopic) kmsg.OffsetCommitResponseTopic {
			return offsetCommitErrors([]kmsg.OffsetCommitRequestTopic{t}, kerr.TopicAuthorizationFailed)[0]
		})
	}
	return resp, nil
}

// offsetCommitErrors answers every partition of topics with err.
func offsetCommitErrors(topics []kmsg.OffsetCommitRequestTopic, err *kerr.Error) []kmsg.OffsetCommitResponseTopic {
	var out []kmsg.OffsetCommitResponseTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, err.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
