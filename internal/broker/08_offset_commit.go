package broker

// OffsetCommit, versions 0-10.
//
// Behavior: Commits go to the group coordinator, which checks the member and
// generation (a generation of -1 with no member id is a standalone commit),
// writes OffsetCommit records to __consumer_offsets and answers once they are
// committed.
//
// v10 (KIP-848) names topics by id, resolved through the metadata image;
// the answer carries the ids. An id the image does not know answers
// UNKNOWN_TOPIC_ID for each of its partitions, before authorization (its
// name is not known to authorize), as Kafka's KafkaApis does.
//
// Authorization (KafkaApis): without READ on the group every partition
// answers GROUP_AUTHORIZATION_FAILED; a topic without READ answers
// TOPIC_AUTHORIZATION_FAILED and only the others are committed (none
// left: the coordinator is not asked).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
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
	topics := req.Topics
	byID := req.Version >= 10
	if byID {
		topics = commitTopicsByID(b.cfg.Image(), req.Topics)
	}
	readable := z.topics(kmsg.ACLOperationRead)
	allowed := func(name string) bool { return (!byID || name != "") && readable(name) }
	name := func(t kmsg.OffsetCommitRequestTopic) string { return t.Topic }
	sub := *req
	var cut bool
	sub.Topics, cut = splitTopics(topics, name, allowed)
	resp := kmsg.NewPtrOffsetCommitResponse()
	if len(sub.Topics) > 0 || !cut {
		resp = b.cfg.Groups.OffsetCommit(ctx, &sub)
	}
	resp.Version = req.Version
	if cut {
		resp.Topics = mergeTopics(topics, name, allowed, resp.Topics, func(t kmsg.OffsetCommitRequestTopic) kmsg.OffsetCommitResponseTopic {
			err := kerr.TopicAuthorizationFailed
			if byID && t.Topic == "" {
				err = kerr.UnknownTopicID
			}
			return offsetCommitErrors([]kmsg.OffsetCommitRequestTopic{t}, err)[0]
		})
	}
	return resp, nil
}

// commitTopicsByID is a v10 request's topics with the names of their ids
// in img ("" for an id it does not know).
func commitTopicsByID(img *metadata.Image, topics []kmsg.OffsetCommitRequestTopic) []kmsg.OffsetCommitRequestTopic {
	out := make([]kmsg.OffsetCommitRequestTopic, len(topics))
	for i, t := range topics {
		t.Topic = ""
		if ti, ok := img.TopicByID(metadata.Uuid(t.TopicID)); ok {
			t.Topic = ti.Name
		}
		out[i] = t
	}
	return out
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
