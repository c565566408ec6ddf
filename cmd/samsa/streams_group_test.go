package main

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// TestStreamsGroupCLI: a streams group with one member (driven by hand
// with StreamsGroupHeartbeat) is listed by `streams-group list` and shown
// by `streams-group describe` with its subtopologies and tasks; a consumer
// group is neither.
func TestStreamsGroupCLI(t *testing.T) {
	b := servertest.Addr(servertest.Start(t, "group.streams.initial.rebalance.delay.ms=0"))
	ctx := groupCtx(t)
	mustRun(t, "", "topic", "create", "clicks", "--partitions", "2", "--bootstrap", b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"clicks-app"}
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil || fresp.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v %+v", err, fresp)
	}
	coord := cl.Broker(int(fresp.Coordinators[0].NodeID))

	topo := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID, sub.SourceTopics = "0", []string{"clicks"}
	sub.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "clicks-app-store-changelog"}}
	topo.Subtopologies = append(topo.Subtopologies, sub)
	epoch, tasks := int32(0), 0
	for deadline := time.Now().Add(20 * time.Second); tasks != 2; {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "clicks-app", "member-1", epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.ProcessID, req.Topology = 30000, kmsg.StringPtr("process-1"), &topo
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}
		resp, err := req.RequestWith(ctx, coord)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("StreamsGroupHeartbeat: %v %+v", err, resp)
		}
		epoch = resp.MemberEpoch
		for _, ts := range resp.ActiveTasks {
			tasks = len(ts.Partitions)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tasks: last answer %+v", resp)
		}
		time.Sleep(50 * time.Millisecond)
	}

	r := mustRun(t, "", "streams-group", "list", "--bootstrap", b)
	if want := "GROUP       STATE\nclicks-app  Stable\n"; r.stdout != want {
		t.Errorf("streams-group list printed %q, want %q", r.stdout, want)
	}
	r = mustRun(t, "", "streams-group", "describe", "clicks-app", "--bootstrap", b)
	for _, want := range []string{
		"STATE             Stable\n",
		"MEMBERS           1\n",
		"0            clicks         -                    -                  clicks-app-store-changelog(2)\n",
		"member-1   2      process-1  kgo        /127.0.0.1  0:[0,1]  -        0:[0,1]\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("streams-group describe: no %q in\n%s", want, r.stdout)
		}
	}
	if r := samsa(t, "", "streams-group", "describe", "no-such-app", "--bootstrap", b); r.code == 0 || !strings.Contains(r.stderr, `group "no-such-app" does not exist`) {
		t.Errorf("describing a missing group: exit %d, stderr %q", r.code, r.stderr)
	}
}
