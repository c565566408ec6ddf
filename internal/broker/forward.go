package broker

// Forwarded admin requests: every request of the controller's API table
// marked Forwarded (controller.API) that has no handler of its own in
// handlers() — DeleteTopics, CreatePartitions, ElectLeaders,
// AlterPartitionReassignments, ListPartitionReassignments, DescribeQuorum,
// AlterUserScramCredentials — at the versions the table lists.
//
// Behavior: the request goes as it is, in the client's version, to the
// active controller (Kafka's ForwardingManager), which decides and commits;
// the answer comes back in that version. What the decision means for this
// broker (logs to create, delete or move) happens when the new metadata is
// published to it. The decisions' behaviour is documented on the
// controller's methods. A request whose answer needs the broker's own
// knowledge (CreateTopics' configs, BROKER_LOGGER resources) has a handler
// file of its own instead.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleForward(ctx context.Context, b *Broker, _ *network.Conn, req kmsg.Request) (kmsg.Response, error) {
	resp := b.cfg.Controller.Forward(ctx, req)
	resp.SetVersion(req.GetVersion())
	return resp, nil
}
