package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kclient"
)

// A broker that is not the active controller forwards admin requests; the
// client must get its answer in the version it asked in, whichever that
// is, and the request must mean the same thing at the controller (a
// DeleteTopics v1 names its topics in a field v6 does not encode).
func TestForwardedRequestsKeepTheirVersion(t *testing.T) {
	n := startSplitNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := kclient.Dial(ctx, n.brk.Addr("PLAINTEXT"), "forward-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := conn.RequestAsIs(ctx, req)
		if err != nil {
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
		}
		if resp.GetVersion() != req.GetVersion() {
			t.Fatalf("%s v%d answered in v%d", kmsg.NameForKey(req.Key()), req.GetVersion(), resp.GetVersion())
		}
		return resp
	}
	wantOK := func(what string, code int16, msg *string) {
		t.Helper()
		if code != 0 {
			t.Fatalf("%s: %v (%v)", what, kerr.ErrorForCode(code), msg)
		}
	}

	var topics []string
	for v := int16(2); v <= 7; v++ {
		name := fmt.Sprintf("fwd-create-v%d", v)
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, ct)
		resp := send(req).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != name {
			t.Fatalf("CreateTopics v%d: topics %+v", v, resp.Topics)
		}
		wantOK(fmt.Sprintf("CreateTopics v%d", v), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
		topics = append(topics, name)
	}
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		cp := kmsg.NewCreatePartitionsRequestTopic()
		cp.Topic, cp.Count = topics[0], int32(v)+2
		req.Topics = append(req.Topics, cp)
		resp := send(req).(*kmsg.CreatePartitionsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != topics[0] {
			t.Fatalf("CreatePartitions v%d: topics %+v", v, resp.Topics)
		}
		wantOK(fmt.Sprintf("CreatePartitions v%d", v), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
	if err := n.brk.loader.WaitFor(ctx, n.ctrl.loader.Image().Offset); err != nil {
		t.Fatal(err)
	}
	if ti, _ := n.brk.loader.Image().Topic(topics[0]); len(ti.Partitions) != 5 {
		t.Fatalf("%s has %d partitions after growing to 5", topics[0], len(ti.Partitions))
	}
	for i, v := 0, int16(1); v <= 6; i, v = i+1, v+1 {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		if v < 6 {
			req.TopicNames = []string{topics[i]}
		} else {
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = &topics[i]
			req.Topics = append(req.Topics, dt)
		}
		resp := send(req).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != topics[i] {
			t.Fatalf("DeleteTopics v%d: topics %+v", v, resp.Topics)
		}
		wantOK(fmt.Sprintf("DeleteTopics v%d", v), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
	if err := n.brk.loader.WaitFor(ctx, n.ctrl.loader.Image().Offset); err != nil {
		t.Fatal(err)
	}
	if left := n.brk.loader.Image().Topics(); len(left) != 0 {
		t.Fatalf("%d topics left after deleting all", len(left))
	}
}

// A forwarded request is bounded by its own timeout: with no controller
// reachable the client hears REQUEST_TIMED_OUT once it passes, and the
// request is never sent afterwards, so a controller that comes back does
// not apply it.
func TestForwardedRequestStopsAtItsTimeout(t *testing.T) {
	n := startSplitNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := kclient.Dial(ctx, n.brk.Addr("PLAINTEXT"), "forward-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n.stopController()

	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 1000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "late", 1, 1
	req.Topics = append(req.Topics, ct)
	// The answer must come; how fast is not this test's business, but a
	// forward without a deadline never answers and ends the test here.
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	resp, err := conn.RequestAsIs(rctx, req)
	if err != nil {
		t.Fatalf("CreateTopics with no controller: %v", err)
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("CreateTopics with no controller: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}

	// The controller returns; a request sent now is served, the timed-out
	// one never is.
	n.startController(t)
	req2 := kmsg.NewPtrCreateTopicsRequest()
	req2.Version, req2.TimeoutMillis = 7, 15000
	ct.Topic = "after"
	req2.Topics = append(req2.Topics, ct)
	for {
		resp, err := conn.RequestAsIs(ctx, req2)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
		if code == 0 {
			break
		}
		if code != kerr.RequestTimedOut.Code && code != kerr.NotController.Code {
			t.Fatalf("CreateTopics after the controller returned: %v", kerr.ErrorForCode(code))
		}
	}
	if err := n.brk.loader.WaitFor(ctx, n.ctrl.loader.Image().Offset); err != nil {
		t.Fatal(err)
	}
	img := n.brk.loader.Image()
	if _, ok := img.Topic("after"); !ok {
		t.Fatal("topic after not created")
	}
	if _, ok := img.Topic("late"); ok {
		t.Fatal("the timed-out CreateTopics was applied after the controller returned")
	}
}
