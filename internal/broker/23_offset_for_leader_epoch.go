package broker

// OffsetForLeaderEpoch, versions 0-4.
//
// Behavior:
//   - For each partition, the largest leader epoch <= the requested one
//     that the leader knows and the offset where it ended (the log end
//     offset for the current epoch); an epoch older than the log's first
//     answers epoch -1, offset -1. Followers use it to find where their log
//     diverged; clients (KIP-320) to detect truncation.
//   - Only the partition leader answers (NOT_LEADER_OR_FOLLOWER
//     elsewhere), whatever the replica id, as in Kafka.
//   - current_leader_epoch (v2+) is checked: older → FENCED_LEADER_EPOCH,
//     newer → UNKNOWN_LEADER_EPOCH; -1 skips the check.
//   - Unknown topics or partitions are UNKNOWN_TOPIC_OR_PARTITION.
//   - Authorization (KafkaApis): CLUSTER_ACTION on the cluster (a
//     follower) or DESCRIBE on each topic (a consumer, KIP-320), else the
//     topic's partitions answer TOPIC_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/replica"
)

func handleOffsetForLeaderEpoch(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.Version = req.Version
	z := b.authz(c)
	describable := z.topics(kmsg.ACLOperationDescribe)
	if z.cluster(kmsg.ACLOperationClusterAction) {
		describable = func(string) bool { return true }
	}
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		allowed := describable(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			if !allowed {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, err := b.leaderPartition(rt.Topic, rp.Partition)
			if err == nil {
				current := rp.CurrentLeaderEpoch
				if req.Version < 2 {
					current = -1 // the field came with v2: not checked
				}
				err = replica.CheckLeaderEpoch(current, p.Offsets().LeaderEpoch)
			}
			if err != nil {
				sp.ErrorCode = b.errCode(err, "offset for leader epoch")
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			e := p.EndOffsetForEpoch(rp.LeaderEpoch)
			sp.LeaderEpoch, sp.EndOffset = e.Epoch, e.EndOffset
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
