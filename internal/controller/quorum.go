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
	"github.com/samsa-io/samsa/internal/raft"
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
// the two. v2 gives each voter's directory id and Nodes lists every
// voter's controller endpoint (recorded by KIP-853 voter changes, else
// Config.Voters). Observers are the controllers being added (raft
// learners) and the nodes that fetched the log over the Kafka protocol in
// the last five minutes (broker-only nodes; their LogEndOffset is the
// last offset they had fetched).
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
		infos := c.voterInfos(ctx)
		for _, id := range st.Voters {
			rp.CurrentVoters = append(rp.CurrentVoters, replicaState(st, id, infos[id].DirectoryID))
		}
		rp.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
		// Learners are controllers being added (KIP-853's observers that
		// catch up before they vote); the rest fetch over the Kafka
		// protocol: broker-only nodes.
		for _, id := range slices.Sorted(maps.Keys(st.Progress)) {
			if !slices.Contains(st.Voters, id) {
				rp.Observers = append(rp.Observers, replicaState(st, id, infos[id].DirectoryID))
			}
		}
		for _, o := range c.cfg.Raft.Observers() {
			if _, ok := st.Progress[o.ID]; ok {
				continue
			}
			v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			v.ReplicaID, v.LogEndOffset = int32(o.ID), int64(o.LogEnd)-1
			v.LastFetchTimestamp = millis(o.LastFetch)
			if o.LogEnd > st.Commit {
				v.LastCaughtUpTimestamp = v.LastFetchTimestamp
			}
			rp.Observers = append(rp.Observers, v)
		}
	}
	if req.Version < 2 {
		rp.ErrorMessage = nil
	}
	if req.Version >= 2 {
		resp.Nodes = c.quorumNodes(ctx)
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// replicaState is the leader's view of voter or learner id.
func replicaState(st raft.Status, id uint64, dir [16]byte) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	v.ReplicaID, v.ReplicaDirectoryID = int32(id), dir
	pr := st.Progress[id]
	v.LogEndOffset = int64(pr.Match)
	if id == st.ID {
		v.LogEndOffset = int64(st.LastIndex)
	}
	v.LastFetchTimestamp, v.LastCaughtUpTimestamp = millis(pr.LastContact), millis(pr.LastCaughtUp)
	return v
}

// voterInfos are the directory ids and endpoints the quorum knows of
// its voters and learners (empty for a static quorum's).
func (c *Controller) voterInfos(ctx context.Context) map[uint64]raft.Voter {
	voters, learners, err := c.cfg.Raft.Voters(ctx)
	out := map[uint64]raft.Voter{}
	if err != nil {
		return out
	}
	for _, v := range append(voters, learners...) {
		out[v.ID] = v
	}
	return out
}

// quorumNodes lists the voters' endpoints, by id (Kafka's
// singletonDescribeQuorumResponse fills them from v2): those the quorum
// recorded (KIP-853), else controller.quorum.voters'.
func (c *Controller) quorumNodes(ctx context.Context) []kmsg.DescribeQuorumResponseNode {
	voters, _, _ := c.cfg.Raft.Voters(ctx)
	var nodes []kmsg.DescribeQuorumResponseNode
	for _, v := range voters {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = int32(v.ID)
		for _, e := range v.Endpoints {
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
			n.Listeners = append(n.Listeners, l)
		}
		if e, ok := c.cfg.Voters[n.NodeID]; ok && len(n.Listeners) == 0 {
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
			n.Listeners = append(n.Listeners, l)
		}
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
