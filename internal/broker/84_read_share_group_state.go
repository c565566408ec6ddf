package broker

// ReadShareGroupState, version 0.
//
// Behavior (KIP-932; Kafka's KafkaApis and ShareCoordinatorService):
//   - An inter-broker RPC served on the broker listeners: the leader of a
//     share partition reads its durable state when it loads it. The
//     sender needs CLUSTER_ACTION on the cluster, else every partition
//     answers CLUSTER_AUTHORIZATION_FAILED.
//   - Each partition is answered by the coordinator of its key
//     (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS otherwise): its
//     state epoch, start offset and state batches. INVALID_REQUEST for a
//     negative partition or leader epoch and for a share partition that
//     was never initialized; FENCED_LEADER_EPOCH below the recorded
//     leader epoch; UNKNOWN_TOPIC_OR_PARTITION for a partition the image
//     does not have. A read at a new leader epoch records it first (a
//     ShareUpdate or ShareSnapshot record), fencing the writes of older
//     leaders, and is answered once that record is committed.
//   - A request with an empty group id, no topics or a topic without
//     partitions is answered with no results.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleReadShareGroupState(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ReadShareGroupStateRequest)
	if code, msg := b.shareStateRefusal(b.authz(c)); code != 0 {
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	resp := b.cfg.Shares.ReadState(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
