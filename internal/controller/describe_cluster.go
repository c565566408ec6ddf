package controller

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster on the controller listener (KIP-919): how an admin
// client started with bootstrap.controllers (kafka-metadata-quorum
// --bootstrap-controller) finds the controllers and the active one.
// Versions 0-2.
//
// Behavior:
//   - Only EndpointType 2 (controllers) is answered; brokers are
//     described on broker listeners, so 1 (the default, and v0) is
//     UNSUPPORTED_ENDPOINT_TYPE, as Kafka's controller answers.
//   - Brokers lists the voters' controller endpoints (the listener of
//     Config.ControllerListener); ControllerID is the quorum leader, -1
//     while there is none.
//   - ClusterAuthorizedOperations is not computed (Kafka's "not
//     requested" value); the controller listener admits only nodes with
//     CLUSTER_ACTION.
func (c *Controller) DescribeCluster(ctx context.Context, req *kmsg.DescribeClusterRequest) *kmsg.DescribeClusterResponse {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	resp.ClusterAuthorizedOperations = -2147483648
	if req.Version < 1 || req.EndpointType != 2 {
		msg := fmt.Sprintf("endpoint type %d is not served by a controller: describe brokers through a broker", req.EndpointType)
		resp.ErrorCode, resp.ErrorMessage = kerr.UnsupportedEndpointType.Code, &msg
		return resp
	}
	resp.ClusterID = c.cfg.Loader.Image().ClusterID
	resp.ControllerID = -1
	if id := c.cfg.Raft.Leader(); id != 0 {
		resp.ControllerID = int32(id)
	}
	for _, n := range c.quorumNodes(ctx) {
		for _, l := range n.Listeners {
			if c.cfg.ControllerListener != "" && l.Name != c.cfg.ControllerListener && len(n.Listeners) > 1 {
				continue
			}
			b := kmsg.NewDescribeClusterResponseBroker()
			b.NodeID, b.Host, b.Port = n.NodeID, l.Host, int32(l.Port)
			resp.Brokers = append(resp.Brokers, b)
			break
		}
	}
	return resp
}

// describeClusterAPIs are describe_cluster.go's rows: answered on the
// controller listener, never forwarded (brokers answer their own).
func describeClusterAPIs() []API {
	return []API{
		api(kmsg.DescribeCluster, 0, 2, (*Controller).DescribeCluster, nil,
			func(r *kmsg.DescribeClusterResponse) bool { return r.ErrorCode == notController }),
	}
}
