package broker

// CreateTopics, versions 2-7.
//
// Behavior: the controller validates, decides and commits. The controller
// answers after the new topics are applied to the metadata image this broker
// serves from, so a Metadata request that follows sees them. From v5 the
// broker adds every config of each created topic with its value and source,
// as Kafka does (the Java AdminClient needs the list even when the request
// set no configs).
//
// Authorization (Kafka's ControllerApis, decided here before forwarding):
// a topic needs CREATE on the cluster or on itself, else it answers
// TOPIC_AUTHORIZATION_FAILED ("Authorization failed.") and is not sent
// to the controller; a name given twice is left to the controller's
// "Duplicate topic name." whatever the ACLs. A created topic whose
// configs the client may not DESCRIBE_CONFIGS carries
// topic_config_error_code TOPIC_AUTHORIZATION_FAILED and no configs.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleCreateTopics(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	z := b.authz(c)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	clusterCreate := z.cluster(kmsg.ACLOperationCreate)
	creatable := func(name string) bool {
		return count[name] > 1 || name == metadata.MetadataTopicName || clusterCreate || z.topic(kmsg.ACLOperationCreate, name)
	}
	name := func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic }
	sub := *req
	var cut bool
	sub.Topics, cut = splitTopics(req.Topics, name, creatable)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	if len(sub.Topics) > 0 || !cut {
		resp = b.cfg.Controller.Forward(forClient(ctx, c), &sub).(*kmsg.CreateTopicsResponse)
	}
	resp.Version = req.Version
	if cut {
		resp.Topics = mergeTopics(req.Topics, name, creatable, resp.Topics, func(t kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, -1, -1
			rt.ErrorCode, rt.ErrorMessage = kerr.TopicAuthorizationFailed.Code, strPtr("Authorization failed.")
			return rt
		})
	}
	if req.Version < 5 {
		return resp, nil
	}
	overrides := make(map[string]map[string]string, len(req.Topics))
	for _, t := range req.Topics {
		o := make(map[string]string, len(t.Configs))
		for _, c := range t.Configs {
			if c.Value != nil {
				o[c.Name] = *c.Value
			}
		}
		overrides[t.Topic] = o
	}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		if rt.ErrorCode != 0 {
			continue
		}
		if !z.topic(kmsg.ACLOperationDescribeConfigs, rt.Topic) {
			rt.ConfigErrorCode, rt.Configs = kerr.TopicAuthorizationFailed.Code, nil
			continue
		}
		rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		for _, e := range b.config().DescribeTopic(overrides[rt.Topic]) {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.IsSensitive
			rt.Configs = append(rt.Configs, c)
		}
	}
	return resp, nil
}
