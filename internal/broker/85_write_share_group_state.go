package broker

// WriteShareGroupState, versions 0-1.
//
// Behavior (KIP-932, KIP-1226; Kafka's KafkaApis and
// ShareCoordinatorService):
//   - An inter-broker RPC served on the broker listeners: the leader of a
//     share partition writes the state batches its acknowledgements and
//     releases changed. The sender needs CLUSTER_ACTION on the cluster,
//     else every partition answers CLUSTER_AUTHORIZATION_FAILED.
//   - Each partition is written by the coordinator of its key
//     (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS otherwise) and
//     answered once the record is committed to __share_group_state
//     (COORDINATOR_NOT_AVAILABLE if it is not within
//     share.coordinator.write.timeout.ms). INVALID_REQUEST for a negative
//     partition, leader or state epoch and for a share partition never
//     initialized; FENCED_LEADER_EPOCH or FENCED_STATE_EPOCH below the
//     recorded epochs; UNKNOWN_TOPIC_OR_PARTITION for a partition the
//     image does not have.
//   - The new batches overlay the stored ones: where they overlap, the
//     higher delivery count wins, then the higher delivery state; the
//     start offset only moves forward (-1 keeps it) and drops the batches
//     below it. v1 carries the delivery complete count.
//   - A request with an empty group id, no topics or a topic without
//     partitions is answered with no results.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleWriteShareGroupState(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.WriteShareGroupStateRequest)
	if code, msg := b.shareStateRefusal(b.authz(c)); code != 0 {
		resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	resp := b.cfg.Shares.WriteState(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
