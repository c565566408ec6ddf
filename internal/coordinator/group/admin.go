package group

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// classicGroupType is the group type ListGroups v5 reports and filters on.
const classicGroupType = "classic"

// DescribeGroups serves DescribeGroups v0-v6. Member metadata and
// assignments are only shown for Stable groups, as in Kafka, because in
// other states they belong to no agreed generation.
func (c *Coordinator) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	r := kmsg.NewPtrDescribeGroupsResponse()
	for _, id := range req.Groups {
		r.Groups = append(r.Groups, c.describe(id, req.Version))
	}
	return r
}

func (c *Coordinator) describe(id string, version int16) kmsg.DescribeGroupsResponseGroup {
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.Group = id
	s, code := c.shardFor(id)
	if code != 0 {
		dg.ErrorCode = code
		return dg
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.mu.groups[id]
	if s.unloadedLocked() {
		dg.ErrorCode = kerr.NotCoordinator.Code
		return dg
	}
	if s.mu.shares[id] != nil {
		// Kafka 4.4 describes classic groups only: a share group is Dead,
		// from v6 GROUP_ID_NOT_FOUND.
		dg.State = stateDead.String()
		if version >= 6 {
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = ptr("Group " + id + " is not a classic group.")
		}
		return dg
	}
	if g == nil || g.state == stateDead {
		// Before v6 Kafka reports a group it does not know as Dead.
		dg.State = stateDead.String()
		if version >= 6 {
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = ptr("Group " + id + " not found.") // Kafka's text
		}
		return dg
	}
	if g.sg != nil {
		return streamsNotClassic(id, version)
	}
	if g.cg != nil {
		// Kafka 4.4 describes classic groups only: a consumer group is
		// Dead, from v6 GROUP_ID_NOT_FOUND "Group <id> is not a classic
		// group.". Samsa describes it in the classic view, which
		// kadm.DescribeGroups and Lag (samsa group describe, and group
		// reset's check that the group is inactive) rely on; Kafka's own
		// tools ask ConsumerGroupDescribe first and never get here.
		return s.describeConsumerClassicLocked(g)
	}
	dg.State = g.state.String()
	dg.ProtocolType = g.protocolType
	if g.state == stateStable {
		dg.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, m.clientHost
		if m.instanceID != "" {
			dm.InstanceID = ptr(m.instanceID)
		}
		if g.state == stateStable {
			dm.ProtocolMetadata = m.metadataFor(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

// ListGroups serves ListGroups v0-v5 for the groups of partitions loaded
// here; the broker lists every coordinator. While any partition is still
// loading the answer is COORDINATOR_LOAD_IN_PROGRESS, since the list would be
// incomplete.
func (c *Coordinator) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	r := kmsg.NewPtrListGroupsResponse()
	for _, p := range c.rt.Partitions() {
		select {
		case <-p.Loaded():
		default:
			r.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			r.Groups = nil
			return r
		}
		s := p.Shard
		s.mu.Lock()
		for _, g := range s.mu.groups {
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType = g.id, g.protocolType
			lg.GroupState, lg.GroupType = g.state.String(), classicGroupType
			if g.cg != nil {
				lg.ProtocolType, lg.GroupState, lg.GroupType = consumerProtocolType, g.cg.state(), consumerGroupType
			} else if g.sg != nil {
				lg = g.sg.listEntry(g.id)
			} else if g.state == stateDead {
				continue
			}
			if matchesFilter(req.StatesFilter, lg.GroupState) && matchesFilter(req.TypesFilter, lg.GroupType) {
				r.Groups = append(r.Groups, lg)
			}
		}
		s.listSharesLocked(req, r)
		s.mu.Unlock()
	}
	slices.SortFunc(r.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return r
}

// consumerGroupType is the group type ListGroups v5 reports for KIP-848 groups.
const consumerGroupType = "consumer"

// matchesFilter is Kafka's case-insensitive ListGroups filter: empty
// matches everything, an unknown name matches nothing.
func matchesFilter(filter []string, v string) bool {
	return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
}

// DeleteGroups serves DeleteGroups v0-v3: an empty group's offsets and
// metadata are tombstoned.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	r := kmsg.NewPtrDeleteGroupsResponse()
	for _, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		if handled, code := c.deleteShareGroup(ctx, id); handled { // share_offsets.go
			dg.ErrorCode = code
			r.Groups = append(r.Groups, dg)
			continue
		}
		s, code := c.shardFor(id)
		if code == 0 && !s.p.Write(ctx, func() ([]KV, func(error)) { return s.decideDeleteLocked(id, &code) }) {
			code = kerr.NotCoordinator.Code
		}
		dg.ErrorCode = code
		r.Groups = append(r.Groups, dg)
	}
	return r
}

func (s *shard) decideDeleteLocked(id string, code *int16) ([]KV, func(error)) {
	g := s.mu.groups[id]
	if g != nil && g.cg != nil {
		return s.decideDeleteConsumerLocked(g, code)
	}
	if g != nil && g.sg != nil {
		return s.decideDeleteStreamsLocked(g, code)
	}
	switch {
	case g == nil || g.state == stateDead:
		*code = kerr.GroupIDNotFound.Code
		return nil, nil
	case g.state != stateEmpty || len(g.members) > 0:
		*code = kerr.NonEmptyGroup.Code
		return nil, nil
	}
	var kvs []KV
	for k := range g.offsets {
		kvs = append(kvs, KV{Key: offsetKey(id, k)})
	}
	kvs = append(kvs, KV{Key: groupKey(id)}) // last, so replay sees the offsets go first
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
