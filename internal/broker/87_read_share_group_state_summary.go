package broker

// ReadShareGroupStateSummary, versions 0-1.
//
// Behavior (KIP-932, KIP-1226; Kafka's KafkaApis and
// ShareCoordinatorService):
//   - An inter-broker RPC served on the broker listeners: the group
//     coordinator reads the start offsets of share partitions to describe
//     a share group's offsets and lag. The sender needs CLUSTER_ACTION on
//     the cluster, else every partition answers
//     CLUSTER_AUTHORIZATION_FAILED.
//   - Each partition is answered by the coordinator of its key
//     (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS otherwise): start
//     offset, state epoch, leader epoch and (v1) delivery complete count.
//     A share partition never initialized reads as start offset -1,
//     epochs 0 and count -1, not as an error. INVALID_REQUEST for a
//     negative partition, UNKNOWN_TOPIC_OR_PARTITION for a partition the
//     image does not have.
//   - A request with an empty group id, no topics or a topic without
//     partitions is answered with no results.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleReadShareGroupStateSummary(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ReadShareGroupStateSummaryRequest)
	if code, msg := b.shareStateRefusal(b.authz(c)); code != 0 {
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	resp := b.cfg.Shares.ReadStateSummary(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
