package broker

// Forwarded admin requests: every request of the controller's API table
// marked Forwarded (controller.API) that has no handler of its own in
// handlers() — ElectLeaders, AlterPartitionReassignments,
// ListPartitionReassignments, DescribeQuorum, AlterClientQuotas,
// AlterUserScramCredentials, UpdateFeatures, UnregisterBroker — at the
// versions the table lists.
//
// Behavior: the request goes as it is, in the client's version, to the
// active controller (Kafka's ForwardingManager), which decides and commits;
// the answer comes back in that version. What the decision means for this
// broker (logs to create, delete or move) happens when the new metadata is
// published to it. The decisions' behaviour is documented on the
// controller's methods. A request whose answer needs the broker's own
// knowledge (CreateTopics' configs, BROKER_LOGGER resources) or whose
// authorization is per topic (DeleteTopics, CreatePartitions) has a
// handler file of its own instead.
//
// Authorization happens here, on the broker that received the request,
// before it is forwarded: Kafka's KRaft brokers wrap the request in an
// Envelope carrying the client's principal and the controller authorizes
// it, but Samsa's controller listener serves only other nodes, so the
// receiving broker, which knows the client, decides with the same ACLs
// (every node applies the same metadata log). The request still names
// its client to the controller (forClient; an Envelope when the
// controller is remote), for the client's controller_mutation_rate,
// which the active controller enforces cluster-wide as Kafka's does. Each request needs the
// cluster operation forwardClusterOps lists (Kafka's ControllerApis'
// authorizeClusterOperation); without it every item answers
// CLUSTER_AUTHORIZATION_FAILED. A forwarded request not listed there is
// served to super users only: an API added to the controller's table
// fails closed until its rule is written here.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/security"
)

// forwardClusterOps is the cluster operation each generically forwarded
// request needs.
var forwardClusterOps = map[kmsg.Key]kmsg.ACLOperation{
	kmsg.AlterClientQuotas:          kmsg.ACLOperationAlterConfigs,
	kmsg.ElectLeaders:               kmsg.ACLOperationAlter,
	kmsg.AlterPartitionAssignments:  kmsg.ACLOperationAlter,
	kmsg.ListPartitionReassignments: kmsg.ACLOperationDescribe,
	kmsg.DescribeQuorum:             kmsg.ACLOperationDescribe,
	kmsg.AlterUserSCRAMCredentials:  kmsg.ACLOperationAlter,
	kmsg.UpdateFeatures:             kmsg.ACLOperationAlter,
	kmsg.UnregisterBroker:           kmsg.ACLOperationAlter,
}

func handleForward(ctx context.Context, b *Broker, c *network.Conn, req kmsg.Request) (kmsg.Response, error) {
	if !b.forwardAllowed(c, kmsg.Key(req.Key())) {
		api, _ := controller.LookupAPI(kmsg.Key(req.Key()))
		resp := api.Failed(req, kerr.ClusterAuthorizationFailed)
		resp.SetVersion(req.GetVersion())
		return resp, nil
	}
	return b.forward(ctx, c, req), nil
}

// forwardAllowed reports whether the client on c may send a request of
// key to the controller through handleForward.
func (b *Broker) forwardAllowed(c *network.Conn, key kmsg.Key) bool {
	z := b.authz(c)
	if !z.on() {
		return true
	}
	if op, ok := forwardClusterOps[key]; ok {
		return z.cluster(op)
	}
	return z.a.IsSuperUser(z.client)
}

// forward sends req to the active controller as it is, for the client
// on c.
func (b *Broker) forward(ctx context.Context, c *network.Conn, req kmsg.Request) kmsg.Response {
	resp := b.cfg.Controller.Forward(forClient(ctx, c), req)
	resp.SetVersion(req.GetVersion())
	return resp
}

// forClient names the client on c as the requester of what ctx sends to
// the controller (Kafka's Envelope carries the client's principal and
// client id): the controller counts the partitions it creates or deletes
// against the client's controller_mutation_rate. What a broker sends on
// its own behalf (creating __consumer_offsets) names no client.
func forClient(ctx context.Context, c *network.Conn) context.Context {
	r := controller.Requester{Principal: security.Anonymous}
	if c != nil {
		r.Principal = c.Principal()
	}
	if id := requestHeader(ctx).ClientID; id != nil {
		r.ClientID = *id
	}
	return controller.WithRequester(ctx, r)
}
