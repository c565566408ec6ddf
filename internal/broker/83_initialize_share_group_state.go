package broker

// InitializeShareGroupState, version 0.
//
// Behavior (KIP-932; Kafka's KafkaApis and ShareCoordinatorService):
//   - An inter-broker RPC served on the broker listeners: the group
//     coordinator sends it, through the share-state Persister, to the
//     share coordinator of each share partition when a share group is
//     first assigned a partition. The sender needs CLUSTER_ACTION on the
//     cluster, else every partition answers CLUSTER_AUTHORIZATION_FAILED.
//   - Each partition is initialized by the coordinator of its key
//     "groupId:topicId:partition": NOT_COORDINATOR where this node does
//     not lead that key's partition of __share_group_state,
//     COORDINATOR_LOAD_IN_PROGRESS while it loads. The new state is a
//     snapshot at the request's state epoch and start offset (-1: not yet
//     known) with no batches; INVALID_REQUEST for a negative partition or
//     state epoch, FENCED_STATE_EPOCH below the recorded state epoch,
//     UNKNOWN_TOPIC_OR_PARTITION for a partition the image does not have.
//   - A request with an empty group id, no topics or a topic without
//     partitions is answered with no results, as Kafka does.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleInitializeShareGroupState(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitializeShareGroupStateRequest)
	if code, msg := b.shareStateRefusal(b.authz(c)); code != 0 {
		resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	resp := b.cfg.Shares.InitializeState(ctx, req)
	resp.Version = req.Version
	return resp, nil
}
