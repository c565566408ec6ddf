package broker

// CreateTopics, versions 2-7.
//
// Behavior: the controller validates, decides and commits. The controller
// answers after the new topics are applied to the metadata image this broker
// serves from, so a Metadata request that follows sees them. From v5 the
// broker adds every config of each created topic with its value and source,
// as Kafka does (the Java AdminClient needs the list even when the request
// set no configs).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleCreateTopics(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := b.cfg.Controller.Forward(ctx, req).(*kmsg.CreateTopicsResponse)
	resp.Version = req.Version
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
		rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		for _, e := range b.config().DescribeTopic(overrides[rt.Topic]) {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.IsSensitive
			rt.Configs = append(rt.Configs, c)
		}
	}
	return resp, nil
}
