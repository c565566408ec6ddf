package group

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// This file connects KIP-848 groups to the APIs both group types share:
// ConsumerGroupDescribe, DescribeGroups, DeleteGroups, JoinGroup's
// conversion of empty groups, and the offset APIs' member checks.

// memberTypeConsumer is ConsumerGroupDescribe v1's MemberType for members
// using the consumer protocol (0 would be classic).
const memberTypeConsumer = 1

// ConsumerGroupDescribe serves ConsumerGroupDescribe v0-v1.
func (c *Coordinator) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	r := kmsg.NewPtrConsumerGroupDescribeResponse()
	for _, id := range req.Groups {
		r.Groups = append(r.Groups, c.describeConsumer(id, req.Version))
	}
	return r
}

func (c *Coordinator) describeConsumer(id string, version int16) kmsg.ConsumerGroupDescribeResponseGroup {
	dg := kmsg.NewConsumerGroupDescribeResponseGroup()
	dg.Group = id
	if id == "" {
		dg.ErrorCode = kerr.InvalidGroupID.Code
		return dg
	}
	s, code := c.shardFor(id)
	if code != 0 {
		dg.ErrorCode = code
		return dg
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.mu.groups[id]
	switch {
	case s.unloadedLocked():
		dg.ErrorCode = kerr.NotCoordinator.Code
		return dg
	case g != nil && (g.isClassic() || g.sg != nil):
		dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, ptr(fmt.Sprintf("Group %s is not a consumer group.", id))
		return dg
	case g == nil || g.cg == nil:
		dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, ptr(fmt.Sprintf("Group %s not found.", id))
		return dg
	}
	cg := g.cg
	members := cg.sortedMembers()
	dg.State = cg.state()
	dg.Epoch, dg.AssignmentEpoch = cg.epoch, cg.assignmentEpoch
	dg.AssignorName = c.preferredAssignor(members)
	view := c.topics()
	for _, m := range members {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch = m.id, m.epoch
		dm.InstanceID, dm.RackID = nullable(m.instanceID), nullable(m.rackID)
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopics = slices.Clone(m.topics)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.SubscribedTopicRegex = nullable(m.regex)
		dm.Assignment = describeAssignment(view, m.assigned)
		dm.TargetAssignment = describeAssignment(view, cg.target[m.id])
		if version >= 1 {
			dm.MemberType = memberTypeConsumer
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

// describeAssignment names each topic; topics deleted since are left out,
// as Kafka does.
func describeAssignment(v *topicView, a assignment) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range a.topicIDs() {
		name, ok := v.nameOf(id)
		if !ok {
			continue
		}
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = id, name, slices.Clone(a[id])
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

// describeConsumerClassicLocked answers DescribeGroups for a consumer group
// as Kafka 4 does: protocol type "consumer", the group's assignor as the
// protocol, and each member's subscription and assignment in the classic
// consumer protocol's encoding.
func (s *shard) describeConsumerClassicLocked(g *group) kmsg.DescribeGroupsResponseGroup {
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.Group = g.id
	members := g.cg.sortedMembers()
	dg.State = g.cg.state()
	dg.ProtocolType = consumerProtocolType
	dg.Protocol = s.c.preferredAssignor(members)
	view := s.c.topics()
	for _, m := range members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, m.clientHost
		dm.InstanceID = nullable(m.instanceID)
		md := kmsg.NewConsumerMemberMetadata()
		md.Version = 3
		md.Topics = view.subscribedNames(&m.memberMeta)
		dm.ProtocolMetadata = md.AppendTo(nil)
		as := kmsg.NewConsumerMemberAssignment()
		as.Version = 3
		for _, id := range m.assigned.topicIDs() {
			if name, ok := view.nameOf(id); ok {
				as.Topics = append(as.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: name, Partitions: slices.Clone(m.assigned[id])})
			}
		}
		dm.MemberAssignment = as.AppendTo(nil)
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

// convertEmptyConsumerGroup runs before a JoinGroup: an empty consumer group
// is deleted so the classic protocol can take the id over (Kafka's
// maybeDeleteEmptyConsumerGroup); a live one answers
// INCONSISTENT_GROUP_PROTOCOL. Offsets are kept.
func (s *shard) convertEmptyConsumerGroup(ctx context.Context, id string) int16 {
	var code int16
	if !s.p.Write(ctx, func() ([]KV, func(error)) {
		g := s.mu.groups[id]
		if g == nil || g.cg == nil {
			return nil, nil
		}
		if len(g.cg.members) > 0 {
			code = kerr.InconsistentGroupProtocol.Code
			return nil, nil
		}
		recs := deleteGroupRecords(id, g.cg)
		return encodeAll(recs), func(err error) {
			if err != nil {
				code = coordinator.AppendErrorCode(err)
				return
			}
			s.applyAllLocked(recs)
		}
	}) {
		return kerr.NotCoordinator.Code
	}
	return code
}

// validateConsumerCommit is Kafka's ConsumerGroup.validateOffsetCommit: an
// empty group takes commits with a negative epoch (admin clients, manual
// assignment); otherwise the member must exist at exactly the epoch sent
// in the generation field.
func (cg *consumerGroup) validateCommit(epoch int32, memberID string, version int16) int16 {
	if epoch < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case version < 9:
		// Only OffsetCommit v9+ carries member epochs with their meaning.
		return kerr.UnsupportedVersion.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// validateFetch is Kafka's ConsumerGroup.validateOffsetFetch (v9+): a
// request with no member id and a negative epoch is an admin's.
func (cg *consumerGroup) validateFetch(memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	m := cg.members[deref(memberID)]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// subscribes reports whether any member subscribes to topic, by name or by
// regex, for OffsetDelete and offset expiry.
func (cg *consumerGroup) subscribes(topic string) bool {
	for _, m := range cg.members {
		if slices.Contains(m.topics, topic) {
			return true
		}
		if m.regex != "" {
			if re, err := compileRegex(m.regex); err == nil && re.MatchString(topic) {
				return true
			}
		}
	}
	return false
}

// decideDeleteConsumerLocked is DeleteGroups for a consumer group: only an
// empty one is deleted, its offsets first and its epoch record last.
func (s *shard) decideDeleteConsumerLocked(g *group, code *int16) ([]KV, func(error)) {
	if len(g.cg.members) > 0 {
		*code = kerr.NonEmptyGroup.Code
		return nil, nil
	}
	var kvs []KV
	for k := range g.offsets {
		kvs = append(kvs, KV{Key: offsetKey(g.id, k)})
	}
	kvs = append(kvs, encodeAll(deleteGroupRecords(g.id, g.cg))...)
	return kvs, func(err error) {
		if err != nil {
			*code = coordinator.AppendErrorCode(err)
			return
		}
		for _, kv := range kvs {
			_ = s.replayLocked(kv, false)
		}
	}
}
