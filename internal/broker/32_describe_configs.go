package broker

// DescribeConfigs, versions 1-4.
//
// Behavior:
//   - Topic resources (type 2): every topic config with its value and
//     source — DYNAMIC_TOPIC_CONFIG for overrides set on the topic, else the
//     broker setting it inherits (DYNAMIC_BROKER_CONFIG,
//     DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG) or
//     DEFAULT_CONFIG. Unknown topics get UNKNOWN_TOPIC_OR_PARTITION.
//   - Broker resources (type 4): this broker's configs, dynamic ones
//     included, when the name is its node id; only the cluster-default
//     dynamic configs when the name is empty, as Kafka answers; another
//     broker's id is INVALID_REQUEST (ask that broker).
//   - BROKER_LOGGER (type 8) for this node: the "root" logger and its
//     level, source DYNAMIC_BROKER_LOGGER_CONFIG.
//   - GROUP (type 32): the share.* group configs, GROUP_CONFIG where the
//     group sets one, else the broker's default.
//   - config_names filters; synonyms (v1+) and documentation (v3+) are sent
//     only when asked for.
//   - Authorization (Kafka's ConfigHelper): DESCRIBE_CONFIGS on the
//     cluster for BROKER and BROKER_LOGGER resources, on the topic for
//     TOPIC ones; a refused resource answers CLUSTER_ or
//     TOPIC_AUTHORIZATION_FAILED with no configs (before any check of the
//     topic's existence).

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeConfigs(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	resp.Version = req.Version
	img := b.cfg.Image()
	z := b.authz(c)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType = rr.ResourceType
		sr.ResourceName = rr.ResourceName
		var entries []config.Entry
		if ok, denied := z.configResource(kmsg.ACLOperationDescribeConfigs, rr.ResourceType, rr.ResourceName); !ok {
			sr.ErrorCode = denied.Code
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if _, ok := img.Topic(rr.ResourceName); !ok {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				sr.ErrorMessage = strPtr("topic " + rr.ResourceName + " does not exist")
				break
			}
			entries = b.config().DescribeTopic(img.Configs(metadata.ResourceTopic, rr.ResourceName))
		case kmsg.ConfigResourceTypeBroker:
			if rr.ResourceName == "" {
				entries = b.config().DescribeDefaults()
				break
			}
			if rr.ResourceName != strconv.Itoa(int(b.cfg.NodeID)) {
				sr.ErrorCode = kerr.InvalidRequest.Code
				sr.ErrorMessage = strPtr("broker " + rr.ResourceName + " is not this broker (node " + strconv.Itoa(int(b.cfg.NodeID)) + "); ask it directly")
				break
			}
			entries = b.config().Describe()
		case kmsg.ConfigResourceTypeBrokerLogger:
			if rr.ResourceName != strconv.Itoa(int(b.cfg.NodeID)) {
				sr.ErrorCode = kerr.InvalidRequest.Code
				sr.ErrorMessage = strPtr("broker " + rr.ResourceName + " is not this broker (node " + strconv.Itoa(int(b.cfg.NodeID)) + "); ask it directly")
				break
			}
			entries = []config.Entry{{
				Name:   rootLogger,
				Value:  strPtr(levelName(b.currentLogLevel())),
				Source: kmsg.ConfigSourceDynamicBrokerLoggerConfig,
				Type:   kmsg.ConfigTypeString,
			}}
		case kmsg.ConfigResourceTypeGroupConfig:
			entries = b.config().DescribeGroup(img.Configs(metadata.ResourceGroup, rr.ResourceName))
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			sr.ErrorMessage = strPtr("describing resource type " + rr.ResourceType.String() + " is not supported yet")
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.Name) {
				continue
			}
			sr.Configs = append(sr.Configs, describeEntry(e, req))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func describeEntry(e config.Entry, req *kmsg.DescribeConfigsRequest) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.Name
	c.Value = e.Value
	c.ReadOnly = e.ReadOnly
	c.Source = e.Source
	c.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
	c.IsSensitive = e.IsSensitive
	c.ConfigType = e.Type
	if req.IncludeDocumentation {
		doc := e.Documentation
		c.Documentation = &doc
	}
	if req.IncludeSynonyms {
		for _, s := range e.Synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name = s.Name
			cs.Value = s.Value
			cs.Source = s.Source
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	return c
}
