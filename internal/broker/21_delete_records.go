package broker

// DeleteRecords, versions 0-2.
//
// Behavior:
//   - Each partition's log start offset moves up to the requested offset
//     (-1: the high watermark); the answer is the new low watermark. Moving
//     it backwards is a no-op that reports the current low watermark.
//   - An offset above the high watermark, or negative other than -1, is
//     OFFSET_OUT_OF_RANGE. A partition this node does not lead is
//     NOT_LEADER_FOR_PARTITION when it exists, else
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - The timeout is not used: the answer does not wait for followers to
//     move their log start offsets too (Kafka's DelayedDeleteRecords);
//     they learn it from their next fetch.
//   - Authorization (KafkaApis): DELETE on the topic, else its partitions
//     answer TOPIC_AUTHORIZATION_FAILED (before any check of existence).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/replica"
)

func handleDeleteRecords(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	deletable := b.authz(c).topics(kmsg.ACLOperationDelete)
	img := b.cfg.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		ti, topicOK := img.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			p, hosted := b.cfg.Replicas.Partition(rt.Topic, rp.Partition)
			switch {
			case !deletable(rt.Topic):
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !topicOK || rp.Partition < 0 || int(rp.Partition) >= len(ti.Partitions):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case ti.Partitions[rp.Partition].Leader != b.cfg.NodeID || !hosted || !p.IsLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				low, err := deleteRecords(p, rp.Offset)
				sp.LowWatermark = low
				sp.ErrorCode = b.errCode(err, "delete records")
				if err != nil {
					sp.LowWatermark = -1
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteRecords resolves -1 to the high watermark and checks the range
// before asking the partition, so the partition sees only real offsets.
func deleteRecords(p *replica.Partition, offset int64) (int64, error) {
	hw := p.Offsets().HighWatermark
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, kerr.OffsetOutOfRange
	}
	return p.DeleteRecords(offset)
}
