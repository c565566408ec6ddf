package broker

// ListConfigResources, versions 0-1 (KIP-1000, renamed by KIP-1142).
//
// Behavior (compared with a Kafka 4.4 broker):
//   - v0 was ListClientMetricsResources: it lists only client-metrics
//     resources, whatever else exists.
//   - v1 lists the resources of the types asked for, all of them when the
//     list is empty: groups and client-metrics resources that have
//     explicitly set configs, every registered broker as a BROKER and a
//     BROKER_LOGGER resource, and every topic. Kafka's order: groups,
//     client metrics, broker loggers, brokers, topics, each by name.
//   - A type other than TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS and
//     GROUP answers UNSUPPORTED_VERSION with no resources, as Kafka does.
//   - Without DESCRIBE_CONFIGS on the cluster: CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

// listedConfigTypes are the types ListConfigResources lists, in the order
// Kafka answers with them.
var listedConfigTypes = []kmsg.ConfigResourceType{
	kmsg.ConfigResourceTypeGroupConfig,
	kmsg.ConfigResourceTypeClientMetrics,
	kmsg.ConfigResourceTypeBrokerLogger,
	kmsg.ConfigResourceTypeBroker,
	kmsg.ConfigResourceTypeTopic,
}

func handleListConfigResources(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	resp.Version = req.Version
	if !b.authz(c).cluster(kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	want := map[kmsg.ConfigResourceType]bool{}
	switch {
	case req.Version == 0:
		want[kmsg.ConfigResourceTypeClientMetrics] = true
	case len(req.ResourceTypes) == 0:
		for _, t := range listedConfigTypes {
			want[t] = true
		}
	default:
		for _, t := range req.ResourceTypes {
			if !slices.Contains(listedConfigTypes, kmsg.ConfigResourceType(t)) {
				resp.ErrorCode = kerr.UnsupportedVersion.Code
				return resp, nil
			}
			want[kmsg.ConfigResourceType(t)] = true
		}
	}
	img := b.cfg.Image()
	add := func(t kmsg.ConfigResourceType, name string) {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = name, int8(t)
		resp.ConfigResources = append(resp.ConfigResources, r)
	}
	for _, t := range listedConfigTypes {
		if !want[t] {
			continue
		}
		switch t {
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
			for _, br := range img.Brokers() {
				add(t, strconv.Itoa(int(br.ID)))
			}
		case kmsg.ConfigResourceTypeTopic:
			for _, tp := range img.Topics() {
				add(t, tp.Name)
			}
		default:
			for _, name := range img.ConfigResourceNames(int8(t)) {
				add(t, name)
			}
		}
	}
	return resp, nil
}
