package broker

// DescribeCluster, versions 0-2.
//
// Behavior:
//   - Lists the registered brokers with their endpoint on the listener the
//     request arrived on; fenced brokers only when asked (v2). A broker
//     whose session with the quorum lapsed shows itself fenced and the
//     controller id as -1, as Metadata does.
//   - EndpointType 2 (controllers) is refused with UNSUPPORTED_ENDPOINT_TYPE,
//     as Kafka's brokers do: that question goes to a controller listener.
//   - Any client may describe the cluster, as in Kafka;
//     include_cluster_authorized_operations fills the operations the
//     client may do on it (0 without DESCRIBE on it).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeCluster(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.Version = req.Version
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp, nil
	}
	img := b.cfg.Image()
	resp.ClusterID = img.ClusterID
	resp.ControllerID = b.controllerID(img)
	resp.EndpointType = 1
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.authz(c).clusterAuthorizedOps()
	}
	selfFenced := b.selfFenced()
	for _, br := range img.Brokers() {
		_, alive := b.brokerAlive(img, br.ID, selfFenced)
		if !alive && !req.IncludeFencedBrokers {
			continue
		}
		ep, ok := endpointFor(br, c.Listener())
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID = br.ID
		rb.Host = ep.Host
		rb.Port = int32(ep.Port)
		rb.Rack = br.Rack
		rb.IsFenced = !alive
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp, nil
}
