package broker

// DescribeProducers, version 0.
//
// Behavior:
//   - For each requested partition this node leads, the idempotent producers
//     its producer state tracks (those not yet expired by
//     producer.id.expiration.ms): id, epoch, last sequence, the max
//     timestamp of its last batch. Without transactions, coordinator epoch
//     and current transaction start offset are always -1.
//   - A partition of an existing topic that this node does not lead is
//     NOT_LEADER_OR_FOLLOWER; an unknown topic or partition is
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - Authorization (KafkaApis): READ on the topic, else its partitions
//     answer TOPIC_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/replica"
)

func handleDescribeProducers(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	resp.Version = req.Version
	readable := b.authz(c).topics(kmsg.ACLOperationRead)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, partition := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = partition
			var p *replica.Partition
			err := error(kerr.TopicAuthorizationFailed)
			if readable(rt.Topic) {
				p, err = b.leaderPartition(rt.Topic, partition)
			}
			if err != nil {
				sp.ErrorCode = b.errCode(err, "describe producers")
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, info := range p.ActiveProducers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID = info.ProducerID
				ap.ProducerEpoch = int32(info.Epoch)
				ap.LastSequence = info.LastSequence
				ap.LastTimestamp = info.LastTimestamp
				ap.CoordinatorEpoch = info.CoordinatorEpoch
				ap.CurrentTxnStartOffset = info.CurrentTxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
