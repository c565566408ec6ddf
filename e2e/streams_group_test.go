package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// Streams groups (KIP-1071) driven by hand through franz-go's kmsg, as a
// Kafka Streams client would: the first member's heartbeat makes the
// coordinator create the topology's internal topics and then assign every
// task to it; a second member gets half of them only after the first
// revoked them; a member that leaves hands its tasks back; offsets commit
// with the member epoch.

// streamsMember is one member's view of its heartbeats.
type streamsMember struct {
	id     string
	epoch  int32
	active map[string][]int32
}

func streamsTopology(in, app string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	repart, changelog := app+"-counts-repartition", app+"-counts-changelog"
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	t.Epoch = 0
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{in}, []string{repart}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: repart, Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: changelog, Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

// streamsCoordinator is the group's coordinator: franz-go does not route
// the streams group APIs itself.
func streamsCoordinator(t *testing.T, ctx context.Context, cl *kgo.Client, group string) *kgo.Broker {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("FindCoordinator %s: %v %+v", group, err, resp)
	}
	return cl.Broker(int(resp.Coordinators[0].NodeID))
}

func streamsHeartbeat(t *testing.T, ctx context.Context, cl *kgo.Broker, group string, m *streamsMember, topology *kmsg.StreamsGroupHeartbeatRequestTopology) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, m.id, m.epoch
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.ProcessID = kmsg.StringPtr("process-" + m.id)
		req.Topology = topology
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = taskList(m.active), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	resp, err := req.RequestWith(ctx, cl)
	for err == nil && (resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code || resp.ErrorCode == kerr.CoordinatorNotAvailable.Code) && ctx.Err() == nil {
		// The group's partition of __consumer_offsets is still loading:
		// a client retries.
		time.Sleep(50 * time.Millisecond)
		resp, err = req.RequestWith(ctx, cl)
	}
	if err != nil {
		t.Fatalf("StreamsGroupHeartbeat of %s: %v", m.id, err)
	}
	if resp.Version != 1 {
		t.Fatalf("StreamsGroupHeartbeat answered at v%d, want v1", resp.Version)
	}
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			m.active = map[string][]int32{}
			for _, ts := range resp.ActiveTasks {
				m.active[ts.SubtopologyID] = ts.Partitions
			}
		}
	}
	return resp
}

func taskList(a map[string][]int32) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for sub, ps := range a {
		out = append(out, kmsg.TaskIDs{SubtopologyID: sub, Partitions: ps})
	}
	return out
}

func countTasks(a map[string][]int32) int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// untilStreams heartbeats m until done holds of the answer.
func untilStreams(t *testing.T, ctx context.Context, cl *kgo.Broker, group string, m *streamsMember, done func(*kmsg.StreamsGroupHeartbeatResponse) bool) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	for {
		resp := streamsHeartbeat(t, ctx, cl, group, m, nil)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v %v", m.id, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
		}
		if done(resp) {
			return resp
		}
		select {
		case <-ctx.Done():
			t.Fatalf("member %s: last answer %+v", m.id, resp)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestStreamsGroupHeartbeat(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	in, app := topicName("franz", "streams-in"), "streams-app"
	adm := newKadm(t, addr)
	franzCreate(t, ctx, adm, in, 2, nil)
	kcl := newKgo(t, addr)
	cl := streamsCoordinator(t, ctx, kcl, app)
	topo := streamsTopology(in, app)

	// Kafka's internal topics are refused in a topology.
	bad := streamsTopology("__consumer_offsets", app)
	if r := streamsHeartbeat(t, ctx, cl, app, &streamsMember{id: "member-x"}, bad); r.ErrorCode != kerr.StreamsInvalidTopology.Code ||
		r.ErrorMessage == nil || *r.ErrorMessage != "Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is prohibited." {
		t.Fatalf("topology reading __consumer_offsets: %v %v, want STREAMS_INVALID_TOPOLOGY", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}

	a := &streamsMember{id: "member-a"}
	resp := streamsHeartbeat(t, ctx, cl, app, a, topo)
	if resp.ErrorCode != 0 || resp.MemberID != "member-a" || resp.MemberEpoch != 1 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %v %v member %q epoch %d interval %d; want member-a at epoch 1, interval 5000",
			kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis)
	}
	missing := "Internal topics are missing: " + app + "-counts-changelog, " + app + "-counts-repartition" // Kafka 4.4's text
	// As Kafka 4.4 answers: the new group's assignment waits for the
	// initial rebalance delay (3 s) and the internal topics.
	if len(resp.Status) != 2 || resp.Status[0].StatusCode != 5 || resp.Status[1].StatusCode != 3 ||
		resp.Status[1].StatusDetail != missing || countTasks(a.active) != 0 {
		t.Fatalf("join: status %+v, tasks %v; want ASSIGNMENT_DELAYED, MISSING_INTERNAL_TOPICS (%q) and no tasks", resp.Status, a.active, missing)
	}

	// Owned tasks come as all three lists or none.
	partial := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	partial.Group, partial.MemberID, partial.MemberEpoch, partial.ActiveTasks = app, a.id, a.epoch, []kmsg.TaskIDs{}
	if r, err := partial.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil ||
		*r.ErrorMessage != "If one task-type is non-null, all must be non-null." {
		t.Fatalf("heartbeat with only active tasks: %v %+v; want INVALID_REQUEST", err, r)
	}

	// Once the coordinator created the internal topics (epoch 2: their
	// metadata) and the delay ended (epoch 3), all four tasks are
	// member-a's.
	resp = untilStreams(t, ctx, cl, app, a, func(r *kmsg.StreamsGroupHeartbeatResponse) bool { return countTasks(a.active) == 4 })
	if len(resp.Status) != 0 || a.epoch != 3 {
		t.Fatalf("single member: status %+v epoch %d; want no status at epoch 3", resp.Status, a.epoch)
	}
	want := map[string][]int32{"0": {0, 1}, "1": {0, 1}}
	if !equalTasks(a.active, want) {
		t.Fatalf("member-a active tasks %v, want %v", a.active, want)
	}
	topics, err := adm.ListTopics(ctx, app+"-counts-repartition", app+"-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{app + "-counts-repartition", app + "-counts-changelog"} {
		if td, ok := topics[name]; !ok || len(td.Partitions) != 2 {
			t.Errorf("internal topic %s: %+v, want it with 2 partitions", name, td)
		}
	}

	// member-b joins: it waits for what member-a must revoke first.
	b := &streamsMember{id: "member-b"}
	resp = streamsHeartbeat(t, ctx, cl, app, b, topo)
	if resp.ErrorCode != 0 || b.epoch != 4 || countTasks(b.active) != 0 {
		t.Fatalf("member-b join: %v epoch %d tasks %v; want epoch 4 and nothing yet (member-a still owns it all)", kerr.ErrorForCode(resp.ErrorCode), b.epoch, b.active)
	}
	resp = streamsHeartbeat(t, ctx, cl, app, a, nil)
	if resp.ErrorCode != 0 || a.epoch != 3 || countTasks(a.active) != 2 {
		t.Fatalf("member-a revocation: %v epoch %d tasks %v; want epoch 3 (unchanged) and two tasks kept", kerr.ErrorForCode(resp.ErrorCode), a.epoch, a.active)
	}
	untilStreams(t, ctx, cl, app, a, func(*kmsg.StreamsGroupHeartbeatResponse) bool { return a.epoch == 4 })
	untilStreams(t, ctx, cl, app, b, func(*kmsg.StreamsGroupHeartbeatResponse) bool { return countTasks(b.active) == 2 })
	if b.epoch != 4 || countTasks(a.active) != 2 {
		t.Fatalf("after the rebalance: a %v at %d, b %v at %d; want two tasks each at epoch 4", a.active, a.epoch, b.active, b.epoch)
	}
	for sub, ps := range a.active {
		for _, p := range ps {
			if slices.Contains(b.active[sub], p) {
				t.Fatalf("task %s_%d is active on both members", sub, p)
			}
		}
	}

	// A stale epoch is fenced.
	stale := &streamsMember{id: "member-b", epoch: 1, active: b.active}
	if resp := streamsHeartbeat(t, ctx, cl, app, stale, nil); resp.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("heartbeat at epoch 1: %v, want FENCED_MEMBER_EPOCH", kerr.ErrorForCode(resp.ErrorCode))
	}

	// Offsets commit with the member epoch as generation.
	commit := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = app, member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = in
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, pinnedKgo(t, addr, kmsg.OffsetCommit, 9))
		if err != nil {
			t.Fatal(err)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit("member-b", 4); code != 0 {
		t.Fatalf("commit at the member epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("member-b", 3); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at an old epoch: %v, want STALE_MEMBER_EPOCH", kerr.ErrorForCode(code))
	}

	// StreamsGroupDescribe shows both members and the topology.
	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Groups = []string{app}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	dg := dresp.Groups[0]
	if dg.ErrorCode != 0 || dg.State != "Stable" || dg.Epoch != 4 || dg.AssignmentEpoch != 4 || len(dg.Members) != 2 ||
		dg.Topology == nil || len(dg.Topology.Subtopologies) != 2 {
		t.Fatalf("describe: %+v; want Stable at epoch 4 with 2 members and 2 subtopologies", dg)
	}

	// Without a topology description plugin (Kafka's default, and Samsa
	// has none) descriptions are neither taken nor stored.
	dreq.IncludeTopologyDescription = true
	if dresp, err := dreq.RequestWith(ctx, cl); err != nil || dresp.Groups[0].TopologyDescriptionStatus != 1 || dresp.Groups[0].TopologyDescription != nil {
		t.Fatalf("describe with the topology description: %v %+v; want status NOT_STORED (1)", err, dresp)
	}
	upd := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	upd.Group, upd.MemberID = app, "member-b"
	if r, err := upd.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.UnsupportedVersion.Code || r.ErrorMessage == nil ||
		*r.ErrorMessage != "The broker has no streams group topology description plugin configured." {
		t.Fatalf("StreamsGroupTopologyDescriptionUpdate: %v %+v; want Kafka's UNSUPPORTED_VERSION without a plugin", err, r)
	}

	// member-a leaves; member-b gets everything.
	a.epoch = -1
	if resp := streamsHeartbeat(t, ctx, cl, app, a, nil); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: %v epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
	}
	untilStreams(t, ctx, cl, app, b, func(*kmsg.StreamsGroupHeartbeatResponse) bool { return countTasks(b.active) == 4 })
	if b.epoch != 5 || !equalTasks(b.active, want) {
		t.Fatalf("after member-a left: b %v at epoch %d; want %v at epoch 5", b.active, b.epoch, want)
	}

	// DeleteGroups: refused while a member is in, done once it left.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{app}
	if r, err := del.RequestWith(ctx, kcl); err != nil || r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("DeleteGroups of a live streams group: %v %+v, want NON_EMPTY_GROUP", err, r)
	}
	defer func() {
		b.epoch = -1
		if resp := streamsHeartbeat(t, ctx, cl, app, b, nil); resp.ErrorCode != 0 {
			t.Fatalf("member-b leaving: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if r, err := del.RequestWith(ctx, kcl); err != nil || r.Groups[0].ErrorCode != 0 {
			t.Fatalf("DeleteGroups of the empty streams group: %v %+v", err, r)
		}
		dreq.IncludeTopologyDescription = false
		if r, err := dreq.RequestWith(ctx, cl); err != nil || r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("describe after the delete: %v %+v, want GROUP_ID_NOT_FOUND", err, r)
		}
	}()

	// Classic members cannot join a streams group either (Kafka 4.4's codes).
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = app, 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
	if r, err := join.RequestWith(ctx, kcl); err != nil || r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup on a streams group: %v %+v, want INCONSISTENT_GROUP_PROTOCOL", err, r)
	}
	sync := &kmsg.SyncGroupRequest{Version: 5, Group: app, MemberID: "x", Generation: 1}
	if r, err := sync.RequestWith(ctx, kcl); err != nil || r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("SyncGroup on a streams group: %v %+v, want INCONSISTENT_GROUP_PROTOCOL", err, r)
	}
	hbc := &kmsg.HeartbeatRequest{Version: 4, Group: app, MemberID: "x", Generation: 1}
	if r, err := hbc.RequestWith(ctx, kcl); err != nil || r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("Heartbeat on a streams group: %v %+v, want UNKNOWN_MEMBER_ID", err, r)
	}

	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = []string{app}
	if r, err := cgd.RequestWith(ctx, kcl); err != nil || r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code ||
		r.Groups[0].ErrorMessage == nil || *r.Groups[0].ErrorMessage != "Group "+app+" is not a consumer group." {
		t.Fatalf("ConsumerGroupDescribe of a streams group: %v %+v", err, r)
	}

	// A consumer-protocol member cannot join a streams group.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = app, "consumer-member", 30000
	hb.SubscribedTopicNames, hb.Topics = []string{in}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r, err := hb.RequestWith(ctx, kcl); err != nil || r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupHeartbeat on a streams group: %v %v, want GROUP_ID_NOT_FOUND", err, r)
	}
}

func equalTasks(a, b map[string][]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestStreamsGroupSurvivesRestart: a streams group lives in
// __consumer_offsets, so after a restart its members, epochs, topology and
// tasks are back, and a member goes on heartbeating at its epoch.
func TestStreamsGroupSurvivesRestart(t *testing.T) {
	ctx := testContext(t)
	r := restartableBroker(t)
	in, app := topicName("franz", "streams-restart"), "streams-restart-app"
	franzCreate(t, ctx, newKadm(t, r.Addr()), in, 2, nil)
	cl := streamsCoordinator(t, ctx, newKgo(t, r.Addr()), app)
	topo := streamsTopology(in, app)

	a, b := &streamsMember{id: "member-a"}, &streamsMember{id: "member-b"}
	streamsHeartbeat(t, ctx, cl, app, a, topo)
	untilStreams(t, ctx, cl, app, a, func(*kmsg.StreamsGroupHeartbeatResponse) bool { return countTasks(a.active) == 4 })
	streamsHeartbeat(t, ctx, cl, app, b, topo)
	untilStreams(t, ctx, cl, app, a, func(*kmsg.StreamsGroupHeartbeatResponse) bool { return a.epoch == b.epoch })
	untilStreams(t, ctx, cl, app, b, func(*kmsg.StreamsGroupHeartbeatResponse) bool { return countTasks(b.active) == 2 })
	before := describeStreams(t, ctx, cl, app)

	r.Restart(t)
	cl = streamsCoordinator(t, ctx, newKgo(t, r.Addr()), app)
	for {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = app, b.id, b.epoch
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = taskList(b.active), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode == 0 {
			if resp.MemberEpoch != b.epoch || resp.ActiveTasks == nil || countTasks(b.active) != 2 {
				t.Fatalf("member-b after the restart: epoch %d tasks %v, want epoch %d and its two tasks", resp.MemberEpoch, resp.ActiveTasks, b.epoch)
			}
			break
		}
		if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("member-b after the restart: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
		}
		time.Sleep(50 * time.Millisecond)
	}
	after := describeStreams(t, ctx, cl, app)
	if after.State != "Stable" || after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch ||
		len(after.Members) != 2 || after.Topology == nil || after.Topology.Epoch != before.Topology.Epoch {
		t.Fatalf("after the restart: %+v\nbefore: %+v", after, before)
	}
	for i, m := range after.Members {
		w := before.Members[i]
		if m.MemberID != w.MemberID || m.MemberEpoch != w.MemberEpoch || m.ProcessID != w.ProcessID ||
			!equalTasks(tasksOf(m.Assignment.ActiveTasks), tasksOf(w.Assignment.ActiveTasks)) {
			t.Errorf("member %d after the restart: %+v, before %+v", i, m, w)
		}
	}
}

func describeStreams(t *testing.T, ctx context.Context, cl *kgo.Broker, group string) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("StreamsGroupDescribe %s: %v %+v", group, err, resp)
	}
	return resp.Groups[0]
}

func tasksOf(ts []kmsg.TaskIDs) map[string][]int32 {
	out := map[string][]int32{}
	for _, t := range ts {
		out[t.SubtopologyID] = t.Partitions
	}
	return out
}

// TestACLsStreamsGroups: a streams member needs READ on its group and
// DESCRIBE on every topic of its topology; without CREATE the coordinator
// creates no internal topic and says so in the MISSING_INTERNAL_TOPICS
// status; with it the topics appear and the tasks are assigned.
func TestACLsStreamsGroups(t *testing.T) {
	ctx := testContext(t)
	srv, adm, user := startAuthz(t, t.TempDir(), "group.streams.initial.rebalance.delay.ms=0")
	in, app := "acl-streams-in", "acl-streams-app"
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, in); err != nil {
		t.Fatal(err)
	}
	streamsCoordinator(t, ctx, clientFrom(t, servertest.Addr(srv), adminHost), app) // creates __consumer_offsets
	cl := user.Broker(1)
	topo := streamsTopology(in, app)
	join := func() *kmsg.StreamsGroupHeartbeatResponse {
		return streamsHeartbeat(t, ctx, cl, app, &streamsMember{id: "m"}, topo)
	}
	if r := join(); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("without READ on the group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	createACLs(ctx, t, adm, userGrant().Groups(app).Operations(kadm.OpRead))
	if r := join(); r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("without DESCRIBE on the topics: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	createACLs(ctx, t, adm, userGrant().Topics(in, app+"-counts-repartition", app+"-counts-changelog").Operations(kadm.OpDescribe))
	m := &streamsMember{id: "m"}
	r := streamsHeartbeat(t, ctx, cl, app, m, topo)
	for r.ErrorCode == kerr.NotCoordinator.Code || r.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
		time.Sleep(50 * time.Millisecond)
		r = streamsHeartbeat(t, ctx, cl, app, m, topo)
	}
	want := "Internal topics are missing: " + app + "-counts-changelog, " + app + "-counts-repartition; Unauthorized to CREATE on topics " +
		app + "-counts-repartition, " + app + "-counts-changelog."
	if r.ErrorCode != 0 || len(r.Status) != 1 || r.Status[0].StatusCode != 3 || r.Status[0].StatusDetail != want {
		t.Fatalf("without CREATE: %v %+v; want the status %q", kerr.ErrorForCode(r.ErrorCode), r.Status, want)
	}
	time.Sleep(500 * time.Millisecond)
	if ts, err := adm.ListTopics(ctx); err != nil || ts.Has(app+"-counts-changelog") || ts.Has(app+"-counts-repartition") {
		t.Fatalf("internal topics created without CREATE: %v %v", ts.Names(), err)
	}
	createACLs(ctx, t, adm, userGrant().Clusters().Operations(kadm.OpCreate))
	untilStreams(t, ctx, cl, app, m, func(*kmsg.StreamsGroupHeartbeatResponse) bool { return countTasks(m.active) == 4 })
}
