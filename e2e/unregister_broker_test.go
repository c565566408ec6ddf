package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// UnregisterBroker (kafka-cluster unregister) through franz-go: an id that
// is not registered is BROKER_ID_NOT_REGISTERED; unregistering a broker
// that still runs removes it from DescribeCluster until its next
// heartbeat registers it again, after which it serves produce again.
func TestUnregisterBroker(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.DefaultProduceTopic("unregister"),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	unregister := func(id int32) int16 {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := unregister(5); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregister 5: %v, want BROKER_ID_NOT_REGISTERED", kerr.ErrorForCode(code))
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code := unregister(1); code != 0 {
		t.Fatalf("unregister 1: %v", kerr.ErrorForCode(code))
	}
	// It registers again at its next heartbeat (broker.heartbeat.interval.ms).
	deadline := time.Now().Add(20 * time.Second)
	for {
		req := kmsg.NewPtrDescribeClusterRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Brokers) == 1 && resp.Brokers[0].NodeID == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker 1 did not register again: %+v", resp.Brokers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fetch, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.ConsumeTopics("unregister"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer fetch.Close()
	var got []string
	for len(got) < 2 {
		fs := fetch.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 2 || got[0] != "before" || got[1] != "after" {
		t.Fatalf("records %q, want [before after]", got)
	}
}
