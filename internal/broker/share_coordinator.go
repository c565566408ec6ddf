package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/samsa-io/samsa/internal/coordinator/share"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
)

// shareStateTopic is the internal topic of the share coordinator (KIP-932).
const shareStateTopic = share.StateTopic

// ShareCoordinator keeps the durable state of share partitions
// (share.Coordinator); the broker routes the share-group state RPCs to it
// and tells it which partitions of __share_group_state this node leads.
type ShareCoordinator interface {
	// PartitionForKey is the partition of __share_group_state of a
	// coordinator key "groupId:topicId:partition", or an error for a
	// malformed key.
	PartitionForKey(key string) (int32, error)
	Load(partition, epoch int32, log coordinator.PartitionLog)
	Unload(partition int32)
	// TopicsDeleted drops, in the background, the state of the share
	// partitions of deleted topics.
	TopicsDeleted(ids [][16]byte)

	InitializeState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse
	ReadState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) *kmsg.ReadShareGroupStateResponse
	WriteState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) *kmsg.WriteShareGroupStateResponse
	DeleteState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse
	ReadStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse
}

// EnsureShareStateTopic creates __share_group_state unless it exists, as
// the first FindCoordinator for a share key does; the share-state
// Persister calls it before looking a coordinator up in the image.
func (b *Broker) EnsureShareStateTopic(ctx context.Context) (*metadata.TopicImage, error) {
	return b.ensureInternalTopic(ctx, shareStateTopic)
}

// shareStateTopicSpec is how __share_group_state is created, with Kafka's
// configs for it (ShareCoordinatorService.shareGroupStateTopicConfigs):
// cleanup.policy delete with infinite retention (the coordinator's
// snapshots, not compaction, bound what a load replays), compression as
// the producer wrote it, share.coordinator.state.topic.segment.bytes, and
// min.insync.replicas from share.coordinator.state.topic.min.isr — never
// above the replication factor, as for __transaction_state.
func (b *Broker) shareStateTopicSpec() kmsg.CreateTopicsRequestTopic {
	st := b.cfg.Static
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic = shareStateTopic
	ct.NumPartitions = st.ShareCoordinatorStateTopicNumPartitions
	ct.ReplicationFactor = st.ShareCoordinatorStateTopicReplicationFactor
	minISR := min(st.ShareCoordinatorStateTopicMinISR, st.ShareCoordinatorStateTopicReplicationFactor)
	for _, kv := range [][2]string{
		{"cleanup.policy", "delete"},
		{"compression.type", "producer"},
		{"min.insync.replicas", strconv.Itoa(int(minISR))},
		{"retention.ms", "-1"},
		{"segment.bytes", strconv.Itoa(int(st.ShareCoordinatorStateTopicSegmentBytes))},
	} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		ct.Configs = append(ct.Configs, c)
	}
	return ct
}

// publishShareStateTopic loads the partitions of __share_group_state this
// node leads into the share coordinator and unloads the rest, and has it
// drop the state of the share partitions of deleted topics.
func (b *Broker) publishShareStateTopic(d *metadata.Delta, img *metadata.Image) {
	if b.cfg.Shares == nil {
		return
	}
	timeout := 5 * time.Second
	if b.cfg.Static != nil {
		timeout = time.Duration(b.cfg.Static.ShareCoordinatorWriteTimeoutMs) * time.Millisecond
	}
	b.shareLoaded.Reconcile(img, shareStateTopic, b.cfg.NodeID, b.cfg.Replicas,
		func(partition, epoch int32, p *replica.Partition) {
			b.cfg.Shares.Load(partition, epoch, &coordinator.ReplicaLog{P: p, Now: b.cfg.Now, CommitTimeout: timeout})
		}, b.cfg.Shares.Unload)
	var deleted [][16]byte
	for _, t := range d.DeletedTopics {
		deleted = append(deleted, t.ID)
	}
	b.cfg.Shares.TopicsDeleted(deleted)
}

// shareStateRefusal is the code every partition of a share-group state
// RPC gets before the coordinator sees it, or 0: as in Kafka these are
// inter-broker requests, refused CLUSTER_AUTHORIZATION_FAILED without
// CLUSTER_ACTION on the cluster; a node without a share coordinator
// answers COORDINATOR_NOT_AVAILABLE.
func (b *Broker) shareStateRefusal(z authz) (int16, *string) {
	var err *kerr.Error
	msg := ""
	switch {
	case !z.cluster(kmsg.ACLOperationClusterAction):
		err, msg = kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Description
	case b.cfg.Shares == nil:
		err, msg = kerr.CoordinatorNotAvailable, "Share coordinator is not available."
	default:
		return 0, nil
	}
	return err.Code, &msg
}
