package broker

// DescribeTopicPartitions, version 0 (KIP-966): Metadata's topic part,
// paged, which Kafka 4's admin client (kafka-topics.sh --describe) uses.
//
// Behavior (Kafka's DescribeTopicPartitionsRequestHandler):
//   - An empty topic list means every topic the client may DESCRIBE;
//     otherwise the named topics. Either way the topics are described in
//     name order, starting at the cursor's topic and partition when one is
//     given. A named-topics request whose list lacks the cursor's topic,
//     or a cursor with a negative partition, answers INVALID_REQUEST for
//     every named topic (Kafka's error response).
//   - At most min(response_partition_limit, max.request.partition.size.limit)
//     partitions (at least 1) are described. When a topic's partitions do
//     not all fit, next_cursor points at the first one left out; when the
//     limit is reached exactly at a topic's end, at the next topic's
//     partition 0 (which need not exist).
//   - A named topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION
//     (INVALID_TOPIC_EXCEPTION for an illegal name); one the client may
//     not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED without its id,
//     after the described ones, whether it exists or not.
//   - Each partition lists its leader (-1 when the leader is not alive on
//     this listener), leader epoch, replicas, ISR and offline replicas, as
//     Metadata does, and empty eligible-leader-replica lists (Samsa has no
//     ELR). Each topic carries its authorized operations.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeTopicPartitions(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	z := b.authz(c)
	img := b.cfg.Image()
	all := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	var names []string
	if all {
		for _, t := range img.Topics() {
			names = append(names, t.Name)
		}
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
	}
	names = slices.DeleteFunc(slices.Compact(slices.Sorted(slices.Values(names))), func(n string) bool { return n < cursorTopic })
	if req.Cursor != nil && (req.Cursor.Partition < 0 || !all && !slices.Contains(names, cursorTopic)) {
		// Kafka's error response: every named topic INVALID_REQUEST.
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.Partitions = kmsg.StringPtr(t.Topic), kerr.InvalidRequest.Code, []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}

	var refused []kmsg.DescribeTopicPartitionsResponseTopic
	live := b.liveness(img, c.Listener())
	remaining := max(min(b.cfg.Static.MaxRequestPartitionSizeLimit, req.ResponsePartitionLimit), 1)
	for _, name := range names {
		if !z.topic(kmsg.ACLOperationDescribe, name) {
			if !all {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = &name, kerr.TopicAuthorizationFailed.Code
				refused = append(refused, rt)
			}
			continue
		}
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		t, ok := img.Topic(name)
		if !ok {
			if !all {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic, rt.ErrorCode, rt.IsInternal = &name, kerr.UnknownTopicOrPartition.Code, isInternalTopic(name)
				if metadata.ValidateTopicName(name) != nil {
					rt.ErrorCode = kerr.InvalidTopicException.Code
				}
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		start := int32(0)
		if name == cursorTopic {
			start = req.Cursor.Partition
		}
		rt, next := describeTopicPartitions(t, start, remaining, live)
		rt.AuthorizedOperations = z.authorizedOps(kmsg.ACLResourceTypeTopic, name)
		resp.Topics = append(resp.Topics, rt)
		if next >= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
			break
		}
		remaining -= int32(len(rt.Partitions))
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}

// describeTopicPartitions describes at most n of t's partitions from
// index start on, and the index of the first one left out (-1 if none).
func describeTopicPartitions(t *metadata.TopicImage, start, n int32, live func(int32) bool) (kmsg.DescribeTopicPartitionsResponseTopic, int32) {
	rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	name := t.Name
	rt.Topic, rt.TopicID, rt.IsInternal = &name, t.ID, isInternalTopic(name)
	rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
	end := min(int32(len(t.Partitions)), start+n)
	for _, p := range t.Partitions {
		if p.Partition < start || p.Partition >= end {
			continue
		}
		rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		rp.Partition, rp.LeaderID, rp.LeaderEpoch = p.Partition, liveLeader(p, live), p.LeaderEpoch
		rp.Replicas, rp.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
		rp.EligibleLeaderReplicas, rp.LastKnownELR = append([]int32{}, p.ELR...), append([]int32{}, p.LastKnownELR...)
		rp.OfflineReplicas = offlineReplicas(p, live)
		rt.Partitions = append(rt.Partitions, rp)
	}
	if end < int32(len(t.Partitions)) {
		return rt, end
	}
	return rt, -1
}
