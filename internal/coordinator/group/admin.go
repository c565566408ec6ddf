package group

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	if s.mu.unloaded {
		dg.ErrorCode = kerr.NotCoordinator.Code
		return dg
	}
	if g == nil || g.state == stateDead {
		dg.State = stateDead.String()
		if version >= 6 {
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = ptr("group " + id + " not found")
		}
		return dg
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
	var states []state
	for _, f := range req.StatesFilter {
		if st, ok := parseState(f); ok {
			states = append(states, st)
		} else {
			return r // Kafka: an unknown state matches nothing
		}
	}
	if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(t string) bool {
		return strings.EqualFold(t, classicGroupType)
	}) {
		return r
	}
	c.mu.Lock()
	shards := make([]*shard, 0, len(c.mu.shards))
	for _, s := range c.mu.shards {
		shards = append(shards, s)
	}
	c.mu.Unlock()
	for _, s := range shards {
		select {
		case <-s.loaded:
		default:
			r.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			r.Groups = nil
			return r
		}
		s.mu.Lock()
		for _, g := range s.mu.groups {
			if g.state == stateDead || (len(states) > 0 && !slices.Contains(states, g.state)) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType = g.id, g.protocolType
			lg.GroupState = g.state.String()
			lg.GroupType = classicGroupType
			r.Groups = append(r.Groups, lg)
		}
		s.mu.Unlock()
	}
	slices.SortFunc(r.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return r
}

// DeleteGroups serves DeleteGroups v0-v3: an empty group's offsets and
// metadata are tombstoned.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	r := kmsg.NewPtrDeleteGroupsResponse()
	for _, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		s, code := c.shardFor(id)
		if code == 0 && !s.write(ctx, func() ([]KV, func(error)) { return s.decideDeleteLocked(id, &code) }) {
			code = kerr.NotCoordinator.Code
		}
		dg.ErrorCode = code
		r.Groups = append(r.Groups, dg)
	}
	return r
}

func (s *shard) decideDeleteLocked(id string, code *int16) ([]KV, func(error)) {
	g := s.mu.groups[id]
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
			*code = appendErrorCode(err)
			return
		}
		for _, kv := range kvs {
			_ = s.replayLocked(kv, false)
		}
	}
}
