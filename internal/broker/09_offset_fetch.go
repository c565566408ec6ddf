package broker

// OffsetFetch, versions 0-10.
//
// Behavior: Answered by the group coordinator from its in-memory offsets; v8+
// batches several groups. A partition without a committed offset answers
// offset -1.
//
// v10 (KIP-848) names topics by id, resolved through the metadata image,
// and answers with ids: an id the image does not know answers
// UNKNOWN_TOPIC_ID (offset -1) for its partitions, and asking for every
// committed partition leaves out topics that no longer exist (they have
// no id to give), as Kafka's KafkaApis does.
//
// Authorization (KafkaApis): a group without DESCRIBE answers
// GROUP_AUTHORIZATION_FAILED (before v2, which has no group error, on
// each requested partition). Offsets of topics without DESCRIBE are not
// shown: left out when every committed partition is asked for, and
// answered TOPIC_AUTHORIZATION_FAILED (offset -1) when named.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleOffsetFetch(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	z := b.authz(c)
	if !z.on() {
		resp := b.cfg.Groups.OffsetFetch(ctx, req)
		resp.Version = req.Version
		return resp, nil
	}
	if req.Version >= 8 {
		return b.offsetFetchGroups(ctx, z, req), nil
	}
	describable := z.topics(kmsg.ACLOperationDescribe)
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	if !z.group(kmsg.ACLOperationDescribe, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		if req.Version < 2 {
			for _, t := range req.Topics {
				resp.Topics = append(resp.Topics, offsetFetchDenied(t.Topic, t.Partitions, kerr.GroupAuthorizationFailed))
			}
		}
		return resp, nil
	}
	name := func(t kmsg.OffsetFetchRequestTopic) string { return t.Topic }
	sub := *req
	if req.Topics != nil {
		sub.Topics, _ = splitTopics(req.Topics, name, describable)
		if sub.Topics == nil {
			sub.Topics = []kmsg.OffsetFetchRequestTopic{}
		}
	}
	resp = b.cfg.Groups.OffsetFetch(ctx, &sub)
	resp.Version = req.Version
	switch {
	case req.Topics == nil:
		resp.Topics = slices.DeleteFunc(resp.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return !describable(t.Topic) })
	case resp.ErrorCode == 0:
		resp.Topics = mergeTopics(req.Topics, name, describable, resp.Topics, func(t kmsg.OffsetFetchRequestTopic) kmsg.OffsetFetchResponseTopic {
			return offsetFetchDenied(t.Topic, t.Partitions, kerr.TopicAuthorizationFailed)
		})
	}
	return resp, nil
}

// offsetFetchGroups is OffsetFetch v8+, several groups at once. At v10
// the topics are named from their ids first, to be authorized; one whose
// id is unknown goes on to the coordinator, which answers
// UNKNOWN_TOPIC_ID for it.
func (b *Broker) offsetFetchGroups(ctx context.Context, z authz, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	byID := req.Version >= 10
	img := b.cfg.Image()
	readable := z.topics(kmsg.ACLOperationDescribe)
	describable := func(name string) bool { return (byID && name == "") || readable(name) }
	name := func(t kmsg.OffsetFetchRequestGroupTopic) string { return t.Topic }
	req = offsetFetchByID(img, req)
	allowed := make([]bool, len(req.Groups))
	sub := *req
	sub.Groups = nil
	for i, g := range req.Groups {
		if allowed[i] = z.group(kmsg.ACLOperationDescribe, g.Group); !allowed[i] {
			continue
		}
		if g.Topics != nil {
			g.Topics, _ = splitTopics(g.Topics, name, describable)
			if g.Topics == nil {
				g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			}
		}
		sub.Groups = append(sub.Groups, g)
	}
	got := b.cfg.Groups.OffsetFetch(ctx, &sub)
	resp := *got
	resp.Version = req.Version
	resp.Groups = nil
	for i, g := range req.Groups {
		if !allowed[i] {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if len(got.Groups) == 0 {
			break
		}
		rg := got.Groups[0]
		got.Groups = got.Groups[1:]
		switch {
		case rg.ErrorCode != 0:
		case g.Topics == nil:
			rg.Topics = slices.DeleteFunc(rg.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return !describable(t.Topic) })
		default:
			rg.Topics = mergeTopics(g.Topics, name, describable, rg.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroupTopic {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = t.Topic, t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.Metadata, rp.ErrorCode = p, -1, strPtr(""), kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				return rt
			})
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return &resp
}

// offsetFetchDenied answers a topic's partitions with err (offset -1).
func offsetFetchDenied(topic string, partitions []int32, err *kerr.Error) kmsg.OffsetFetchResponseTopic {
	rt := kmsg.NewOffsetFetchResponseTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata, rp.ErrorCode = p, -1, strPtr(""), err.Code
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// offsetFetchByID is req with the names of its v10 topic ids in img (""
// for an id it does not know); other versions are returned as they are.
func offsetFetchByID(img *metadata.Image, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchRequest {
	if req.Version < 10 {
		return req
	}
	named := *req
	named.Groups = make([]kmsg.OffsetFetchRequestGroup, len(req.Groups))
	for i, g := range req.Groups {
		if g.Topics != nil {
			topics := make([]kmsg.OffsetFetchRequestGroupTopic, len(g.Topics))
			for j, t := range g.Topics {
				t.Topic = ""
				if ti, ok := img.TopicByID(metadata.Uuid(t.TopicID)); ok {
					t.Topic = ti.Name
				}
				topics[j] = t
			}
			g.Topics = topics
		}
		named.Groups[i] = g
	}
	return &named
}
