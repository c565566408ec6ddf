package broker

// CreatePartitions, versions 0-3 (API key 37).
//
// Behavior: forwarded to the active controller, which adds the
// partitions (internal/controller's CreatePartitions); each broker
// creates the new partitions' logs when it applies the change.
//
// Authorization (Kafka's ControllerApis, decided here before forwarding):
// a topic without ALTER answers TOPIC_AUTHORIZATION_FAILED and is not
// sent to the controller; a name given twice is left to the controller's
// "Duplicate topic name." whatever the ACLs.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleCreatePartitions(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	z := b.authz(c)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	alterable := func(name string) bool { return count[name] > 1 || z.topic(kmsg.ACLOperationAlter, name) }
	name := func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic }
	sub := *req
	var cut bool
	sub.Topics, cut = splitTopics(req.Topics, name, alterable)
	if !cut {
		return b.forward(ctx, c, req), nil
	}
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	if len(sub.Topics) > 0 {
		resp = b.cfg.Controller.Forward(forClient(ctx, c), &sub).(*kmsg.CreatePartitionsResponse)
	}
	resp.Version = req.Version
	resp.Topics = mergeTopics(req.Topics, name, alterable, resp.Topics, func(t kmsg.CreatePartitionsRequestTopic) kmsg.CreatePartitionsResponseTopic {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		return rt
	})
	return resp, nil
}
