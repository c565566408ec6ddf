package group

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// This file is the KIP-1071 heartbeat (Kafka's
// GroupMetadataManager.streamsGroupHeartbeat): member admission and
// fencing, the topology, group epoch bumps, the target assignment of
// tasks, and reconciliation of each member towards its target.

// StreamsConfig configures streams groups; the broker key each field
// mirrors is named beside it. Zero fields take Kafka's defaults.
type StreamsConfig struct {
	// SessionTimeout is group.streams.session.timeout.ms (45 s).
	SessionTimeout time.Duration
	// HeartbeatInterval is group.streams.heartbeat.interval.ms (5 s).
	HeartbeatInterval time.Duration
	// MaxGroupSize is group.streams.max.size (MaxInt32).
	MaxGroupSize int
	// NumStandbyReplicas is group.streams.num.standby.replicas (0).
	NumStandbyReplicas int
	// InitialRebalanceDelay is group.streams.initial.rebalance.delay.ms
	// (3 s): a new group's first assignment waits this long for more
	// members. Negative means none (0 means the default).
	InitialRebalanceDelay time.Duration
	// TaskOffsetInterval is group.streams.task.offset.interval.ms (60 s).
	TaskOffsetInterval time.Duration
	// AcceptableRecoveryLag is group.streams.acceptable.recovery.lag (10000).
	AcceptableRecoveryLag int64
}

func (c StreamsConfig) withDefaults() StreamsConfig {
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.MaxGroupSize == 0 {
		c.MaxGroupSize = math.MaxInt32
	}
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = 3 * time.Second
	}
	if c.TaskOffsetInterval == 0 {
		c.TaskOffsetInterval = time.Minute
	}
	if c.AcceptableRecoveryLag == 0 {
		c.AcceptableRecoveryLag = 10000
	}
	return c
}

// StreamsGroupHeartbeat serves StreamsGroupHeartbeat v0-v1. It returns the
// answer and the internal topics of the group's topology that do not exist
// yet, which the broker asks the controller to create (as Kafka's
// AutoTopicCreationManager does); until they exist the answer carries
// MISSING_INTERNAL_TOPICS and no tasks.
func (c *Coordinator) StreamsGroupHeartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, []kmsg.CreateTopicsRequestTopic) {
	if code, msg := validateStreamsHeartbeat(req); code != 0 {
		return sgError(code, msg), nil
	}
	s, code := c.shardFor(req.Group)
	if code != 0 {
		return sgError(code, ""), nil
	}
	ci := clientFrom(ctx)
	var d *sgDecision
	ok := s.p.Write(ctx, func() ([]KV, func(error)) {
		d = s.decideStreamsHeartbeatLocked(req, ci)
		if d.resp.ErrorCode != 0 || len(d.recs) == 0 {
			return nil, func(error) { s.afterStreamsHeartbeatLocked(req.Group, d) }
		}
		return sgEncodeAll(d.recs), func(err error) {
			if err != nil {
				d.resp, d.create = sgError(coordinator.AppendErrorCode(err), ""), nil
				return
			}
			s.sgApplyAllLocked(d.recs)
			s.afterStreamsHeartbeatLocked(req.Group, d)
		}
	})
	if !ok {
		return sgError(kerr.NotCoordinator.Code, ""), nil
	}
	return d.resp, d.create
}

func sgError(code int16, msg string) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.ErrorCode = code
	r.ErrorMessage = nullable(msg)
	return r
}

// validateStreamsHeartbeat is Kafka's
// throwIfStreamsGroupHeartbeatRequestIsInvalid.
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) (int16, string) {
	invalid := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	switch {
	case req.MemberID == "":
		return invalid("MemberId can't be empty.")
	case req.Group == "":
		return invalid("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty.")
	}
	if n := nonNil(req.ActiveTasks, req.StandbyTasks, req.WarmupTasks); n != 0 && n != 3 {
		return invalid("If one task-type is non-null, all must be non-null.")
	}
	switch {
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		case len(req.ActiveTasks) > 0 || len(req.StandbyTasks) > 0 || len(req.WarmupTasks) > 0:
			return invalid("ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining.")
		case req.Topology == nil:
			return invalid("Topology must be non-null when (re-)joining.")
		case req.ProcessID == nil || *req.ProcessID == "":
			return invalid("ProcessId can't be null.")
		}
		for _, s := range req.Topology.Subtopologies {
			if s.SubtopologyID == "" {
				return invalid("Subtopology ID can't be empty.")
			}
		}
	case req.MemberEpoch == leaveStaticEpoch:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	case req.MemberEpoch < leaveStaticEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	return 0, ""
}

func nonNil(ls ...[]kmsg.TaskIDs) int {
	n := 0
	for _, l := range ls {
		if l != nil {
			n++
		}
	}
	return n
}

// sgDecision is a decided streams heartbeat: the answer, the records to
// append, the internal topics to create and the member whose session to
// restart.
type sgDecision struct {
	resp   *kmsg.StreamsGroupHeartbeatResponse
	recs   []*sgRecord
	create []kmsg.CreateTopicsRequestTopic
	member string // "" when no member remains to time
	notReady,
	shutdown bool
	// The member's reconciliation after this heartbeat, for its
	// revocation deadline.
	unrevoked  bool
	curEpoch   int32
	curChanged bool
	rebalance  time.Duration
	// startDelay: the heartbeat created the group, whose first real
	// assignment waits for the initial rebalance delay.
	startDelay bool
	// The member's changelog offsets, when the heartbeat reported them.
	taskOffsets, taskEndOffsets []kmsg.TaskOffset
}

func sgFail(code int16, format string, args ...any) *sgDecision {
	return &sgDecision{resp: sgError(code, fmt.Sprintf(format, args...))}
}

func (s *shard) decideStreamsHeartbeatLocked(req *kmsg.StreamsGroupHeartbeatRequest, ci clientInfo) *sgDecision {
	g := s.mu.groups[req.Group]
	var sg *streamsGroup
	if g != nil {
		if g.cg != nil || g.isClassic() {
			return sgFail(kerr.GroupIDNotFound.Code, "Group %s is not a streams group.", req.Group)
		}
		sg = g.sg
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == leaveStaticEpoch {
		if sg == nil || sg.members[req.MemberID] == nil {
			return sgFail(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", req.MemberID, req.Group)
		}
		r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
		r.MemberID, r.MemberEpoch = req.MemberID, req.MemberEpoch
		return &sgDecision{resp: r, recs: s.sgLeaveRecordsLocked(req.Group, sg, req.MemberID)}
	}
	if sg == nil {
		if req.MemberEpoch != 0 {
			return sgFail(kerr.UnknownMemberID.Code, "Streams group %s not found.", req.Group)
		}
		sg = newStreamsGroup() // scratch: applying the records creates the real one
		d := &sgDecision{member: req.MemberID, startDelay: s.c.settings(req.Group).Streams.InitialRebalanceDelay > 0}
		s.decideStreamsMemberLocked(d, req, ci, sg, nil)
		return d
	}
	old := sg.members[req.MemberID]
	if old == nil {
		if req.MemberEpoch != 0 {
			return sgFail(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", req.MemberID, req.Group)
		}
		if max := s.c.cfg.Streams.MaxGroupSize; len(sg.members) >= max {
			return sgFail(kerr.GroupMaxSizeReached.Code, "The streams group has reached its maximum capacity of %d members.", max)
		}
	} else if req.MemberEpoch != 0 {
		if msg := checkStreamsEpoch(old, req.MemberEpoch, req.ActiveTasks); msg != "" {
			return sgFail(kerr.FencedMemberEpoch.Code, "%s", msg)
		}
	}
	d := &sgDecision{member: req.MemberID}
	s.decideStreamsMemberLocked(d, req, ci, sg, old)
	return d
}

// checkStreamsEpoch is Kafka's throwIfStreamsGroupMemberEpochIsInvalid:
// the epoch must be the member's, or its previous one when the member owns
// no more than its assignment (the answer that bumped it was lost).
func checkStreamsEpoch(m *smember, epoch int32, owned []kmsg.TaskIDs) string {
	switch {
	case epoch > m.epoch:
		return fmt.Sprintf("The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its tasks and rejoin.", epoch, m.epoch)
	case epoch < m.epoch && (epoch != m.prevEpoch || owned == nil || !tasksFrom(owned).minus(m.assigned.active).equal(tasks{})):
		return fmt.Sprintf("The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its tasks and rejoin.", epoch, m.epoch)
	}
	return ""
}

// decideStreamsMemberLocked updates the member (bumping the group epoch if
// it is new, its topology or process changed, or the topology's topics
// changed), recomputes the target assignment if the group epoch moved past
// it, and reconciles the member towards its target.
func (s *shard) decideStreamsMemberLocked(d *sgDecision, req *kmsg.StreamsGroupHeartbeatRequest, ci clientInfo, sg *streamsGroup, old *smember) {
	upd := &smember{id: req.MemberID, sgMemberCur: emptyCur()}
	if old != nil {
		c := *old
		upd = &c
	}
	base := *upd
	applyStreamsRequest(&upd.sgMemberMeta, req, ci)
	if old == nil || !upd.sgMemberMeta.equal(&base.sgMemberMeta) {
		d.recs = append(d.recs, &sgRecord{typ: sgMemberMetadataType, group: req.Group, member: upd.id, meta: ptr(upd.sgMemberMeta)})
	}
	bump := old == nil || upd.processID != base.processID || upd.rackID != base.rackID || !slices.Equal(upd.clientTags, base.clientTags)

	// A member brings a topology the group takes when it has none, when the
	// member's is newer, or when no other member runs the old one (an
	// application redeployed with a changed topology).
	topology := sg.topology
	alone := len(sg.members) == 0 || (len(sg.members) == 1 && old != nil)
	if req.Topology != nil && (topology == nil || req.Topology.Epoch > topology.epoch ||
		(alone && !sameSubtopologies(topology.subs, req.Topology.Subtopologies))) {
		topology = &sgTopology{epoch: req.Topology.Epoch, subs: slices.Clone(req.Topology.Subtopologies)}
		d.recs = append(d.recs, &sgRecord{typ: sgTopologyType, group: req.Group, topology: topology})
		bump = true
	}
	ct := configureTopology(topology, s.c.topicsByName())
	d.create = ct.create
	d.notReady = !ct.ready
	epoch := sg.epoch
	if bump || ct.hash != sg.metadataHash {
		epoch++
		d.recs = append(d.recs, &sgRecord{typ: sgMetadataType, group: req.Group, epoch: epoch, hash: ct.hash})
	}

	// The group as it will be, upd in.
	members := make([]*smember, 0, len(sg.members)+1)
	for _, m := range sg.sortedMembers() {
		if m.id != upd.id {
			members = append(members, m)
		}
	}
	members = append(members, upd)
	slices.SortFunc(members, func(a, b *smember) int { return compareStrings(a.id, b.id) })

	targetEpoch, myTarget := sg.assignmentEpoch, sg.target[upd.id]
	delaying := sg.delaying || d.startDelay
	if epoch > targetEpoch && (!delaying || targetEpoch == 0) {
		// While the initial rebalance delay runs, only the group's first
		// target is computed, without tasks; the delay's end bumps the
		// epoch for the real one.
		var all []taskID
		if ct.ready && !delaying {
			all = ct.allTasks()
		}
		next := assignStreams(members, all, sg.target, s.c.settings(req.Group).Streams.NumStandbyReplicas)
		for _, m := range members {
			if p, had := sg.target[m.id]; !had || !next[m.id].equal(p) {
				d.recs = append(d.recs, &sgRecord{typ: sgTargetMemberType, group: req.Group, member: m.id, target: next[m.id]})
			}
		}
		d.recs = append(d.recs, &sgRecord{typ: sgTargetMetadataType, group: req.Group, epoch: epoch})
		targetEpoch, myTarget = epoch, next[upd.id]
		s.c.cfg.Logger.Info("computed streams group target assignment", "group", req.Group, "epoch", epoch,
			"members", len(members), "tasks", len(all))
	}
	if myTarget.active == nil {
		myTarget = emptyTaskSet()
	}

	free := func(t taskID) bool {
		o := sg.owner[t]
		return o == "" || o == upd.id
	}
	cur := reconcileStreams(&upd.sgMemberCur, targetEpoch, myTarget, req.ActiveTasks, free)
	if old == nil || !cur.equal(&base.sgMemberCur) {
		d.recs = append(d.recs, &sgRecord{typ: sgCurrentMemberType, group: req.Group, member: upd.id, cur: ptr(cur)})
		d.curChanged = true
	}
	d.unrevoked, d.curEpoch = cur.state == msUnrevoked, cur.epoch
	d.taskOffsets, d.taskEndOffsets = req.TaskOffsets, req.TaskEndOffsets
	d.rebalance = time.Duration(upd.rebalanceTimeoutMs) * time.Millisecond
	d.shutdown = sg.shutdown || req.ShutdownApplication

	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.MemberID = upd.id
	r.MemberEpoch = cur.epoch
	cfg := s.c.settings(req.Group).Streams
	r.HeartbeatIntervalMillis = int32(cfg.HeartbeatInterval / time.Millisecond)
	r.TaskOffsetIntervalMillis = int32(cfg.TaskOffsetInterval / time.Millisecond)
	if req.Version == 0 {
		r.AcceptableRecoveryLagLegacy = int32(min(cfg.AcceptableRecoveryLag, math.MaxInt32))
	} else {
		r.AcceptableRecoveryLag = cfg.AcceptableRecoveryLag // v1 deprecates the int32 field, which Kafka leaves 0
	}
	r.Status = slices.Clone(ct.statuses)
	if topology != nil && upd.topologyEpoch < topology.epoch {
		r.Status = append(r.Status, status(sgStatusStaleTopology, fmt.Sprintf(
			"The member's topology epoch %d is behind the group's topology epoch %d.", upd.topologyEpoch, topology.epoch)))
	}
	if delaying {
		r.Status = append([]kmsg.StreamsGroupHeartbeatResponseStatus{status(sgStatusAssignmentDelayed,
			"Assignment delayed due to the configured initial rebalance delay.")}, r.Status...)
	}
	if d.shutdown {
		r.Status = append(r.Status, status(sgStatusShutdownApplication, "A KafkaStreams instance encountered a fatal error and requested a shutdown for the entire application."))
	}
	if req.MemberEpoch == 0 || req.ActiveTasks != nil || !cur.assigned.equal(base.assigned) {
		r.ActiveTasks = cur.assigned.active.kmsg()
		r.StandbyTasks = cur.assigned.standby.kmsg()
		r.WarmupTasks = cur.assigned.warmup.kmsg()
	}
	// The endpoint information epoch moves with each new assignment while
	// any member has a user endpoint (Kafka leaves it at 0 otherwise).
	endpointEpoch := sg.endpointEpoch
	if epoch > sg.assignmentEpoch && slices.ContainsFunc(members, func(m *smember) bool { return m.endpointHost != "" }) {
		endpointEpoch++
	}
	r.EndpointInformationEpoch = endpointEpoch
	if req.EndpointInformationEpoch < endpointEpoch && upd.endpointHost != "" {
		r.PartitionsByUserEndpoint = endpointPartitions(members, sg.target, d.recs, ct)
	}
	d.resp = r
}

// applyStreamsRequest copies what the request sets; absent (null or -1)
// fields keep their value.
func applyStreamsRequest(m *sgMemberMeta, req *kmsg.StreamsGroupHeartbeatRequest, ci clientInfo) {
	if req.InstanceID != nil {
		m.instanceID = *req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.Topology != nil {
		m.topologyEpoch = req.Topology.Epoch
	}
	if req.ProcessID != nil {
		m.processID = *req.ProcessID
	}
	if req.UserEndpoint != nil {
		m.endpointHost, m.endpointPort = req.UserEndpoint.Host, req.UserEndpoint.Port
	}
	if req.ClientTags != nil {
		m.clientTags = nil
		for _, t := range req.ClientTags {
			m.clientTags = append(m.clientTags, [2]string{t.Key, t.Value})
		}
		slices.SortFunc(m.clientTags, func(a, b [2]string) int { return compareStrings(a[0], b[0]) })
	}
	m.clientID, m.clientHost = ci.id, ci.host
}

// reconcileStreams is Kafka's streams CurrentAssignmentBuilder: active
// tasks to give up are revoked first (the member stays at its epoch,
// UNREVOKED_TASKS, until its heartbeat no longer lists them); an active
// task another member still owns is withheld (UNRELEASED_TASKS) until that
// member released it. So no active task is ever owned by two members.
func reconcileStreams(m *sgMemberCur, targetEpoch int32, target taskSet, owned []kmsg.TaskIDs, free func(taskID) bool) sgMemberCur {
	switch {
	case m.state == msStable && m.epoch == targetEpoch:
		return *m
	case m.state == msUnrevoked && ownsAnyTask(owned, m.pending.active):
		return *m
	}
	revoke := m.assigned.active.minus(target.active)
	if revoke.size() > 0 {
		keep := m.assigned.active.minus(revoke)
		return sgMemberCur{
			epoch: m.epoch, prevEpoch: m.prevEpoch, state: msUnrevoked,
			assigned: taskSet{active: keep, standby: intersect(m.assigned.standby, target.standby), warmup: intersect(m.assigned.warmup, target.warmup)},
			pending:  taskSet{active: revoke, standby: tasks{}, warmup: tasks{}},
		}
	}
	next := sgMemberCur{epoch: targetEpoch, prevEpoch: m.prevEpoch, state: msStable,
		assigned: taskSet{active: tasks{}, standby: cloneTasks(target.standby), warmup: cloneTasks(target.warmup)},
		pending:  emptyTaskSet()}
	if targetEpoch != m.epoch {
		next.prevEpoch = m.epoch
	}
	target.active.each(func(t taskID) {
		if free(t) {
			next.assigned.active.add(t)
		} else {
			next.state = msUnreleased
		}
	})
	return next
}

func ownsAnyTask(owned []kmsg.TaskIDs, t tasks) bool {
	if owned == nil {
		return true
	}
	for _, o := range owned {
		for _, p := range o.Partitions {
			if t.has(o.SubtopologyID, p) {
				return true
			}
		}
	}
	return false
}

func intersect(a, b tasks) tasks {
	out := tasks{}
	a.each(func(t taskID) {
		if b.has(t.sub, t.p) {
			out.add(t)
		}
	})
	return out
}

func cloneTasks(t tasks) tasks {
	out := tasks{}
	t.each(out.add)
	return out
}

// endpointPartitions is the Interactive Queries map: for each member with
// a user endpoint, the input partitions of its active and standby tasks.
func endpointPartitions(members []*smember, target map[string]taskSet, recs []*sgRecord, ct *configuredTopology) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	next := maps.Clone(target)
	for _, r := range recs {
		if r.typ == sgTargetMemberType && !r.del {
			next[r.member] = r.target
		}
	}
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	for _, m := range members {
		if m.endpointHost == "" {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint = kmsg.Endpoint{Host: m.endpointHost, Port: m.endpointPort}
		active, standby := map[string][]int32{}, map[string][]int32{}
		ts := next[m.id]
		collect := func(dst map[string][]int32) func(taskID) {
			return func(t taskID) {
				for _, topic := range ct.inputs[t.sub] {
					dst[topic] = append(dst[topic], t.p)
				}
			}
		}
		ts.active.each(collect(active))
		ts.standby.each(collect(standby))
		for _, topic := range slices.Sorted(maps.Keys(active)) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: topic, Partitions: active[topic]})
		}
		for _, topic := range slices.Sorted(maps.Keys(standby)) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: topic, Partitions: standby[topic]})
		}
		out = append(out, e)
	}
	return out
}

// afterStreamsHeartbeatLocked restarts the member's session and keeps the
// group's in-memory flags.
func (s *shard) afterStreamsHeartbeatLocked(groupID string, d *sgDecision) {
	g := s.mu.groups[groupID]
	if g == nil || g.sg == nil || d.resp.ErrorCode != 0 {
		return
	}
	sg := g.sg
	if d.startDelay {
		s.startStreamsDelayLocked(groupID, sg, s.c.settings(groupID).Streams.InitialRebalanceDelay)
	}
	if d.member != "" && sg.members[d.member] != nil {
		sg.notReady = d.notReady
		sg.shutdown = sg.shutdown || d.shutdown
		sg.endpointEpoch = max(sg.endpointEpoch, d.resp.EndpointInformationEpoch)
		s.scheduleStreamsSessionLocked(groupID, sg, d.member)
		if d.taskOffsets != nil || d.taskEndOffsets != nil {
			o := sg.taskOffsets[d.member]
			if d.taskOffsets != nil {
				o[0] = d.taskOffsets
			}
			if d.taskEndOffsets != nil {
				o[1] = d.taskEndOffsets
			}
			sg.taskOffsets[d.member] = o
		}
		switch {
		case d.unrevoked && d.curChanged:
			s.armStreamsRevokeLocked(groupID, sg, d.member, d.curEpoch, d.rebalance)
		case !d.unrevoked && sg.timers[d.member] != nil:
			t := sg.timers[d.member]
			stopTimer(t.revoke)
			t.revokeSeq++
		}
	}
}

// sameSubtopologies compares two topologies as the records store them.
func sameSubtopologies(a, b []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology) bool {
	x := (&sgRecord{typ: sgTopologyType, topology: &sgTopology{subs: a}}).encode().Value
	y := (&sgRecord{typ: sgTopologyType, topology: &sgTopology{subs: b}}).encode().Value
	return string(x) == string(y)
}
