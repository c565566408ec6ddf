package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/wire"
)

// MetadataTopic is the name Kafka gives the metadata log, the only
// "partition" DescribeQuorum describes.
const MetadataTopic = metadata.MetadataTopicName

// DescribeQuorum describes the metadata quorum (KIP-595, KIP-836).
// Versions 0-2. Only the raft leader knows its voters' progress: another
// node answers NOT_LEADER_OR_FOLLOWER (with the leader and epoch it knows),
// as a Kafka controller does, and forwarding retries on the leader.
// Offsets are raft indexes: LogEndOffset is the last index a voter holds
// and HighWatermark the last committed index, so lag is a difference of
// the two. v2's Nodes list every voter's controller endpoint
// (Config.Voters); Observers stay empty.
func (c *Controller) DescribeQuorum(ctx context.Context, req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	resp.Version = req.Version
	if !validQuorumTopics(req) {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeQuorumResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeQuorumResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = MetadataTopic
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	rp.LeaderID = -1
	st, err := c.cfg.Raft.Status(ctx)
	switch {
	case err != nil:
		rp.ErrorCode, rp.ErrorMessage = wire.ErrorCodeAndMessage(c.raftError(err))
	default:
		if st.Leader != 0 {
			rp.LeaderID = int32(st.Leader)
		}
		rp.LeaderEpoch, rp.HighWatermark = int32(st.Term), int64(st.Commit)
		if st.Progress == nil {
			rp.ErrorCode = kerr.NotLeaderForPartition.Code
			msg := fmt.Sprintf("node %d is not the quorum leader (leader %d)", st.ID, rp.LeaderID)
			rp.ErrorMessage = &msg
			break
		}
		for _, id := range st.Voters {
			v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			v.ReplicaID = int32(id)
			pr := st.Progress[id]
			v.LogEndOffset = int64(pr.Match)
			if id == st.ID {
				v.LogEndOffset = int64(st.LastIndex)
			}
			v.LastFetchTimestamp, v.LastCaughtUpTimestamp = millis(pr.LastContact), millis(pr.LastCaughtUp)
			rp.CurrentVoters = append(rp.CurrentVoters, v)
		}
		rp.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	}
	if req.Version < 2 {
		rp.ErrorMessage = nil
	}
	if req.Version >= 2 {
		resp.Nodes = c.quorumNodes()
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// quorumNodes lists the voters' endpoints, by id (Kafka's
// singletonDescribeQuorumResponse fills them from v2).
func (c *Controller) quorumNodes() []kmsg.DescribeQuorumResponseNode {
	ids := slices.Sorted(maps.Keys(c.cfg.Voters))
	nodes := make([]kmsg.DescribeQuorumResponseNode, 0, len(ids))
	for _, id := range ids {
		e := c.cfg.Voters[id]
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = id
		l := kmsg.NewDescribeQuorumResponseNodeListener()
		l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
		n.Listeners = append(n.Listeners, l)
		nodes = append(nodes, n)
	}
	return nodes
}

// validQuorumTopics reports whether req asks for exactly the metadata
// partition (Kafka's hasValidTopicPartition).
func validQuorumTopics(req *kmsg.DescribeQuorumRequest) bool {
	return len(req.Topics) == 1 && req.Topics[0].Topic == MetadataTopic &&
		len(req.Topics[0].Partitions) == 1 && req.Topics[0].Partitions[0].Partition == 0
}

// millis is t in Unix milliseconds, -1 for the zero time (unknown).
func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

// quorumAPIs are quorum.go's rows of the API table (api.go).
func quorumAPIs() []API {
	return []API{
		api(kmsg.DescribeQuorum, 0, 2, (*Controller).DescribeQuorum,
			func(req *kmsg.DescribeQuorumRequest, err error) *kmsg.DescribeQuorumResponse {
				r := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
				t := kmsg.NewDescribeQuorumResponseTopic()
				t.Topic = MetadataTopic
				p := kmsg.NewDescribeQuorumResponseTopicPartition()
				p.ErrorCode, p.LeaderID = wire.ErrorCode(err), -1
				if req.Version >= 2 {
					p.ErrorMessage = failedMessage(err)
				}
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
				return r
			},
			func(r *kmsg.DescribeQuorumResponse) bool {
				// A voter that is not the raft leader answers
				// NOT_LEADER_OR_FOLLOWER, as Kafka's raft client does.
				if len(r.Topics) == 0 || len(r.Topics[0].Partitions) == 0 {
					return false
				}
				c := r.Topics[0].Partitions[0].ErrorCode
				return c == notController || c == kerr.NotLeaderForPartition.Code
			}),
	}
}
