package group

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareGroupType is the group type ListGroups v5 reports for share groups,
// and "share" the protocol type Kafka lists them with.
const shareGroupType = "share"

// ShareGroupDescribe serves ShareGroupDescribe v1 (AuthorizedOperations are
// the broker's to fill).
func (c *Coordinator) ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	r := kmsg.NewPtrShareGroupDescribeResponse()
	for _, id := range req.GroupIDs {
		r.Groups = append(r.Groups, c.describeShare(id))
	}
	return r
}

func (c *Coordinator) describeShare(id string) kmsg.ShareGroupDescribeResponseGroup {
	dg := kmsg.NewShareGroupDescribeResponseGroup()
	dg.GroupID = id
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
	if s.unloadedLocked() {
		dg.ErrorCode = kerr.NotCoordinator.Code
		return dg
	}
	g, code, msg := s.shareGroupLocked(id)
	switch {
	case code != 0:
		dg.ErrorCode, dg.ErrorMessage = code, ptr(msg)
		return dg
	case g == nil:
		dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, ptr(fmt.Sprintf("Group %s not found.", id))
		return dg
	}
	dg.GroupState = g.state()
	dg.GroupEpoch, dg.AssignmentEpoch = g.epoch, g.assignmentEpoch
	dg.Assignor = "simple"
	view := c.topics()
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch = m.id, m.epoch
		dm.RackID = nullable(m.rackID)
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopicNames = slices.Clone(m.topics)
		if dm.SubscribedTopicNames == nil {
			dm.SubscribedTopicNames = []string{}
		}
		dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, tid := range m.assigned.topicIDs() {
			name, ok := view.nameOf(tid)
			if !ok {
				continue
			}
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{
				TopicID: tid, Topic: name, Partitions: slices.Clone(m.assigned[tid]),
			})
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

// listSharesLocked adds the shard's share groups to a ListGroups answer.
func (s *shard) listSharesLocked(req *kmsg.ListGroupsRequest, r *kmsg.ListGroupsResponse) {
	for _, g := range s.mu.shares {
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType = g.id, shareGroupType
		lg.GroupState, lg.GroupType = g.state(), shareGroupType
		if matchesFilter(req.StatesFilter, lg.GroupState) && matchesFilter(req.TypesFilter, lg.GroupType) {
			r.Groups = append(r.Groups, lg)
		}
	}
}
