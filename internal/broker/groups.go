package broker

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
)

// offsetsTopic is the internal topic holding consumer groups and offsets.
const offsetsTopic = "__consumer_offsets"

// GroupCoordinator serves consumer groups; the broker routes group APIs to
// it and tells it which partitions of __consumer_offsets this node leads.
type GroupCoordinator interface {
	PartitionFor(groupID string) int32
	Load(partition, epoch int32, log coordinator.PartitionLog)
	Unload(partition int32)

	JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse
	SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse
	Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse
	LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse
	OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse
	OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse
	DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse
	ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse
	DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse
	OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse
	ConsumerGroupHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse
	ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse
	TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse
	ShareGroupHeartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse
	ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse
	DescribeShareGroupOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse
	AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse
	DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse
	// CompleteTransaction applies a marker the broker wrote to a partition
	// of __consumer_offsets: the producer's pending offsets commit or drop.
	CompleteTransaction(partition int32, producerID int64, commit bool)
	StreamsCoordinator
}

// ensureOffsetsTopic creates __consumer_offsets on first use, as Kafka does
// when the first FindCoordinator for a group arrives.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) (*metadata.TopicImage, error) {
	return b.ensureInternalTopic(ctx, offsetsTopic)
}

// offsetsTopicSpec is how __consumer_offsets is created.
func (b *Broker) offsetsTopicSpec() kmsg.CreateTopicsRequestTopic {
	st := b.cfg.Static
	return compactedTopic(offsetsTopic, st.OffsetsTopicNumPartitions, st.OffsetsTopicReplicationFactor, map[string]string{
		"compression.type": "producer",
		"segment.bytes":    strconv.Itoa(int(st.OffsetsTopicSegmentBytes)),
	})
}

// creatableTopic is how a topic is created when a client's request needs
// it (Kafka's AutoTopicCreationManager.creatableTopic): the coordinators'
// internal topics with their own settings, any other with num.partitions
// and default.replication.factor (the controller's defaults for -1).
func (b *Broker) creatableTopic(name string) kmsg.CreateTopicsRequestTopic {
	switch name {
	case offsetsTopic:
		return b.offsetsTopicSpec()
	case txnStateTopic:
		return b.txnTopicSpec()
	case shareStateTopic:
		return b.shareStateTopicSpec()
	}
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic = name
	ct.NumPartitions = -1
	ct.ReplicationFactor = -1
	return ct
}

// compactedTopic is a compacted topic (the state of a coordinator) with
// configs.
func compactedTopic(name string, partitions int32, rf int16, configs map[string]string) kmsg.CreateTopicsRequestTopic {
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic = name
	ct.NumPartitions = partitions
	ct.ReplicationFactor = rf
	configs["cleanup.policy"] = "compact"
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		ct.Configs = append(ct.Configs, c)
	}
	return ct
}

// ensureInternalTopic creates an internal topic unless it exists, and
// returns it.
func (b *Broker) ensureInternalTopic(ctx context.Context, name string) (*metadata.TopicImage, error) {
	if t, ok := b.cfg.Image().Topic(name); ok {
		return t, nil
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 30000
	req.Topics = append(req.Topics, b.creatableTopic(name))
	resp := b.cfg.Controller.Forward(ctx, req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) == 1 {
		if code := resp.Topics[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
			msg := ""
			if resp.Topics[0].ErrorMessage != nil {
				msg = *resp.Topics[0].ErrorMessage
			}
			b.cfg.Logger.Error("cannot create "+name, "err", kerr.ErrorForCode(code), "message", msg)
			return nil, kerr.ErrorForCode(code)
		}
	}
	t, ok := b.cfg.Image().Topic(name)
	if !ok {
		return nil, errors.New(name + " missing after creation")
	}
	return t, nil
}

// publishOffsetsTopic loads partitions of __consumer_offsets this node
// leads into the group coordinator and unloads the rest.
func (b *Broker) publishOffsetsTopic(img *metadata.Image) {
	if b.cfg.Groups == nil {
		return
	}
	b.offsetsLoaded.Reconcile(img, offsetsTopic, b.cfg.NodeID, b.cfg.Replicas,
		func(partition, epoch int32, p *replica.Partition) {
			b.cfg.Groups.Load(partition, epoch, &coordinator.ReplicaLog{P: p, Now: b.cfg.Now, CommitTimeout: b.offsetsCommitTimeout()})
		}, b.cfg.Groups.Unload)
}

// offsetsCommitTimeout is offsets.commit.timeout.ms: how long a write to
// __consumer_offsets waits to be replicated.
func (b *Broker) offsetsCommitTimeout() time.Duration {
	if b.cfg.Static == nil {
		return 5 * time.Second
	}
	return time.Duration(b.cfg.Static.OffsetsCommitTimeoutMs) * time.Millisecond
}
