package broker

// DeleteTopics, versions 1-6 (API key 20).
//
// Behavior: forwarded to the active controller, which deletes the topics
// (internal/controller's DeleteTopics); each broker deletes its logs when
// it applies the change.
//
// Authorization (Kafka's ControllerApis, decided here before forwarding):
// DELETE on the cluster allows every topic. Otherwise a topic named
// without DESCRIBE answers TOPIC_AUTHORIZATION_FAILED whether or not it
// exists; one that exists without DELETE too. A topic given by id that
// exists without DELETE answers TOPIC_AUTHORIZATION_FAILED, its name
// shown only with DESCRIBE. Refused topics are not sent to the
// controller; unknown ones, a name given twice and other malformed
// entries are left to its answer.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleDeleteTopics(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	z := b.authz(c)
	if !z.on() || z.cluster(kmsg.ACLOperationDelete) {
		return b.forward(ctx, c, req), nil
	}
	topics := req.Topics
	if len(topics) == 0 {
		for _, n := range req.TopicNames {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = &n
			topics = append(topics, t)
		}
	}
	names := map[string]int{}
	for _, t := range topics {
		if t.Topic != nil {
			names[*t.Topic]++
		}
	}
	img := b.cfg.Image()
	describable := z.topics(kmsg.ACLOperationDescribe)
	deletable := z.topics(kmsg.ACLOperationDelete)
	// refusal is a topic's TOPIC_AUTHORIZATION_FAILED answer, or nil
	// when the controller decides it.
	refusal := func(t kmsg.DeleteTopicsRequestTopic) *kmsg.DeleteTopicsResponseTopic {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, kerr.TopicAuthorizationFailed.Code
		switch {
		case t.Topic != nil && t.TopicID != [16]byte{}, t.Topic != nil && names[*t.Topic] > 1:
			return nil // malformed: the controller says why
		case t.Topic != nil:
			ti, ok := img.Topic(*t.Topic)
			if !describable(*t.Topic) || (ok && !deletable(ti.Name)) {
				return &rt
			}
		default:
			ti, ok := img.TopicByID(metadata.Uuid(t.TopicID))
			if ok && !deletable(ti.Name) {
				if describable(ti.Name) {
					rt.Topic = &ti.Name
				}
				return &rt
			}
		}
		return nil
	}
	var out []*kmsg.DeleteTopicsResponseTopic
	sub := *req
	sub.Topics, sub.TopicNames = nil, nil
	for _, t := range topics {
		r := refusal(t)
		out = append(out, r)
		switch {
		case r != nil:
		case len(req.Topics) == 0:
			sub.TopicNames = append(sub.TopicNames, *t.Topic)
		default:
			sub.Topics = append(sub.Topics, t)
		}
	}
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	if len(sub.Topics)+len(sub.TopicNames) > 0 {
		resp = b.cfg.Controller.Forward(forClient(ctx, c), &sub).(*kmsg.DeleteTopicsResponse)
	}
	got := resp.Topics
	resp.Topics = nil
	resp.Version = req.Version
	for _, r := range out {
		switch {
		case r != nil:
			resp.Topics = append(resp.Topics, *r)
		case len(got) > 0:
			resp.Topics = append(resp.Topics, got[0])
			got = got[1:]
		}
	}
	return resp, nil
}
