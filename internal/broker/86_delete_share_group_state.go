package broker

// DeleteShareGroupState, version 0.
//
// Behavior (KIP-932; Kafka's KafkaApis and ShareCoordinatorService):
//   - An inter-broker RPC served on the broker listeners: the group
//     coordinator deletes the state of share partitions with their group
//     or its offsets. The sender needs CLUSTER_ACTION on the cluster, else
//     every partition answers CLUSTER_AUTHORIZATION_FAILED.
//   - Each partition is deleted by the coordinator of its key
//     (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS otherwise) with a
//     tombstone, answered once committed; deleting state that does not
//     exist succeeds. INVALID_REQUEST for a negative partition,
//     UNKNOWN_TOPIC_OR_PARTITION for a partition the image does not have.
//   - A request with an empty group id, no topics or a topic without
//     partitions is answered with no results.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDeleteShareGroupState(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteShareGroupStateRequest)
	if code, msg := b.shareStateRefusal(b.authz(c)); code != 0 {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	resp := b.cfg.Shares.DeleteState(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
