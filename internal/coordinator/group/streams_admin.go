package group

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// This file connects streams groups to StreamsGroupDescribe and to the
// APIs every group type shares: ListGroups, DescribeGroups, DeleteGroups
// and the offset APIs' member checks.

// streamsGroupType is the group type (and protocol type) ListGroups v5
// reports for streams groups.
const streamsGroupType = "streams"

// StreamsGroupDescribe serves StreamsGroupDescribe v0-v1. The topology
// description (v1, IncludeTopologyDescription) is never stored, so its
// status is NOT_STORED when asked for.
func (c *Coordinator) StreamsGroupDescribe(ctx context.Context, req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	r := kmsg.NewPtrStreamsGroupDescribeResponse()
	for _, id := range req.Groups {
		dg := c.describeStreams(id)
		if req.IncludeTopologyDescription && dg.ErrorCode == 0 {
			dg.TopologyDescriptionStatus = 1 // NOT_STORED
		}
		r.Groups = append(r.Groups, dg)
	}
	return r
}

func (c *Coordinator) describeStreams(id string) kmsg.StreamsGroupDescribeResponseGroup {
	dg := kmsg.NewStreamsGroupDescribeResponseGroup()
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
	case g != nil && (g.isClassic() || g.cg != nil):
		dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, ptr(fmt.Sprintf("Group %s is not a streams group.", id))
		return dg
	case g == nil || g.sg == nil:
		dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, ptr(fmt.Sprintf("Group %s not found.", id))
		return dg
	}
	sg := g.sg
	dg.State = sg.state()
	dg.Epoch, dg.AssignmentEpoch = sg.epoch, sg.assignmentEpoch
	dg.AssignorName = ptr("sticky")
	if t := sg.topology; t != nil {
		dt := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		dt.Epoch = t.epoch
		if !sg.notReady {
			ct := configureTopology(t, c.topicsByName())
			dt.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
			for _, st := range t.subs {
				ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
				ds.SubtopologyID = st.SubtopologyID
				ds.SourceTopics = slices.Clone(ct.sources[st.SubtopologyID])
				ds.RepartitionSinkTopics = slices.Clone(st.RepartitionSinkTopics)
				// Internal topics with the partition counts they were created with.
				ds.StateChangelogTopics = withPartitions(st.StateChangelogTopics, ct.internal)
				ds.RepartitionSourceTopics = withPartitions(st.RepartitionSourceTopics, ct.internal)
				dt.Subtopologies = append(dt.Subtopologies, ds)
			}
		}
		dg.Topology = &dt
	}
	for _, m := range sg.sortedMembers() {
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch = m.id, m.epoch
		dm.InstanceID, dm.RackID = nullable(m.instanceID), nullable(m.rackID)
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.TopologyEpoch, dm.ProcessID = m.topologyEpoch, m.processID
		if m.endpointHost != "" {
			dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.endpointHost, Port: m.endpointPort}
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, t := range m.clientTags {
			dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: t[0], Value: t[1]})
		}
		o := sg.taskOffsets[m.id]
		dm.TaskOffsets, dm.TaskEndOffsets = slices.Clone(o[0]), slices.Clone(o[1])
		if dm.TaskOffsets == nil {
			dm.TaskOffsets = []kmsg.TaskOffset{}
		}
		if dm.TaskEndOffsets == nil {
			dm.TaskEndOffsets = []kmsg.TaskOffset{}
		}
		dm.Assignment = streamsAssignment(m.assigned)
		dm.TargetAssignment = streamsAssignment(sg.target[m.id])
		dg.Members = append(dg.Members, dm)
	}
	if dg.Members == nil {
		dg.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	}
	return dg
}

func streamsAssignment(ts taskSet) kmsg.StreamsAssignment {
	a := kmsg.NewStreamsAssignment()
	a.ActiveTasks, a.StandbyTasks, a.WarmupTasks = ts.active.kmsg(), ts.standby.kmsg(), ts.warmup.kmsg()
	return a
}

// topicsByName is the cluster's topics, or none when the coordinator was
// given no listing.
func (c *Coordinator) topicsByName() map[string]TopicInfo {
	if c.cfg.Topics == nil {
		return map[string]TopicInfo{}
	}
	if m := c.cfg.Topics(); m != nil {
		return m
	}
	return map[string]TopicInfo{}
}

// validateCommit is Kafka's StreamsGroup.validateOffsetCommit: an empty
// group takes commits with a negative epoch (admin tools); otherwise the
// member must exist at exactly the epoch sent in the generation field.
func (sg *streamsGroup) validateCommit(epoch int32, memberID string, version int16) int16 {
	if epoch < 0 && len(sg.members) == 0 {
		return 0
	}
	m := sg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case version < 9:
		return kerr.UnsupportedVersion.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// validateFetch is Kafka's StreamsGroup.validateOffsetFetch.
func (sg *streamsGroup) validateFetch(memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	m := sg.members[deref(memberID)]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// inputs reports whether topic is one of the topology's source or
// internal topics, for OffsetDelete and offset expiry.
func (sg *streamsGroup) uses(topic string) bool {
	if sg.topology == nil {
		return false
	}
	for _, s := range sg.topology.subs {
		if slices.Contains(s.SourceTopics, topic) {
			return true
		}
		for _, r := range s.RepartitionSourceTopics {
			if r.Topic == topic {
				return true
			}
		}
	}
	return false
}

// listStreams is a streams group's ListGroups entry.
func (sg *streamsGroup) listEntry(id string) kmsg.ListGroupsResponseGroup {
	lg := kmsg.NewListGroupsResponseGroup()
	lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, streamsGroupType, sg.state(), streamsGroupType
	return lg
}

// decideDeleteStreamsLocked is DeleteGroups for a streams group: only an
// empty one is deleted, its offsets first and its epoch record last.
func (s *shard) decideDeleteStreamsLocked(g *group, code *int16) ([]KV, func(error)) {
	if len(g.sg.members) > 0 {
		*code = kerr.NonEmptyGroup.Code
		return nil, nil
	}
	var kvs []KV
	for _, k := range slices.SortedFunc(maps.Keys(g.offsets), func(a, b tp) int {
		if c := compareStrings(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	}) {
		kvs = append(kvs, KV{Key: offsetKey(g.id, k)})
	}
	kvs = append(kvs, sgEncodeAll(sgDeleteGroupRecords(g.id, g.sg))...)
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

// streamsNotClassic is DescribeGroups' answer for a streams group, as
// Kafka 4.4 gives it: Dead, and from v6 GROUP_ID_NOT_FOUND.
func streamsNotClassic(id string, version int16) kmsg.DescribeGroupsResponseGroup {
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.Group, dg.State = id, stateDead.String()
	if version >= 6 {
		dg.ErrorCode = kerr.GroupIDNotFound.Code
		dg.ErrorMessage = ptr(fmt.Sprintf("Group %s is not a classic group.", id))
	}
	return dg
}

func withPartitions(ts []kmsg.TopicInfo, counts map[string]int32) []kmsg.TopicInfo {
	out := slices.Clone(ts)
	for i := range out {
		out[i].NumPartitions = counts[out[i].Topic]
	}
	return out
}
