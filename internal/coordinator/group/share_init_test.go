package group_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/group"
)

// initPersister records InitializeShareGroupState calls ("partition:start")
// and fails the partitions in fail with COORDINATOR_NOT_AVAILABLE.
type initPersister struct {
	mu    sync.Mutex
	calls []string
	fail  map[int32]bool
}

func (p *initPersister) InitializeState(_ context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, ip := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = ip.Partition
			if p.fail[ip.Partition] {
				rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			} else {
				p.calls = append(p.calls, string(rune('0'+ip.Partition))+":"+map[int64]string{-1: "-1", 0: "0"}[ip.StartOffset])
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (p *initPersister) taken() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.calls)
	slices.Sort(out)
	p.calls = nil
	return out
}

func (*initPersister) ReadState(context.Context, *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	return kmsg.NewPtrReadShareGroupStateResponse(), nil
}

func (*initPersister) WriteState(context.Context, *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	return kmsg.NewPtrWriteShareGroupStateResponse(), nil
}

func (*initPersister) DeleteState(context.Context, *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	return kmsg.NewPtrDeleteShareGroupStateResponse(), nil
}

func (*initPersister) ReadStateSummary(context.Context, *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	return kmsg.NewPtrReadShareGroupStateSummaryResponse(), nil
}

// As Kafka 4.4's group coordinator: a subscribed topic's partitions are
// initialized before they are assigned, at start offset -1 for a topic new
// to the group (the leader applies share.auto.offset.reset) and 0 for
// partitions added later; a partition whose initialization failed is not
// assigned until a later heartbeat initializes it.
func TestShareGroupInitializesBeforeAssigning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTopics(map[string]int32{"t": 2})
		p := &initPersister{fail: map[int32]bool{1: true}}
		e := newEnv(t, group.Config{Topics: ts.get, SharePersister: p}, &memLog{})
		r := shareHB(e, "a", 0, "t")
		if r.ErrorCode != 0 || !slices.Equal(shareParts(r), []int32{0}) {
			t.Fatalf("join with partition 1 failing to initialize: error %d parts %v, want [0]", r.ErrorCode, shareParts(r))
		}
		if got := p.taken(); !slices.Equal(got, []string{"0:-1"}) {
			t.Fatalf("initialized %v, want [0:-1]", got)
		}
		p.fail = nil
		r = shareHB(e, "a", r.MemberEpoch)
		if !slices.Equal(shareParts(r), []int32{0, 1}) {
			t.Fatalf("next heartbeat: parts %v, want [0 1]", shareParts(r))
		}
		if got := p.taken(); !slices.Equal(got, []string{"1:0"}) {
			t.Fatalf("initialized %v, want [1:0] (a new partition of a topic with state starts at 0)", got)
		}
		ts.set("t", 3)
		r = shareHB(e, "a", r.MemberEpoch)
		if !slices.Equal(shareParts(r), []int32{0, 1, 2}) {
			t.Fatalf("after adding a partition: parts %v", shareParts(r))
		}
		if got := p.taken(); !slices.Equal(got, []string{"2:0"}) {
			t.Fatalf("initialized %v, want [2:0]", got)
		}
		if r := shareHB(e, "a", r.MemberEpoch); r.ErrorCode != 0 || len(p.taken()) != 0 {
			t.Fatalf("a steady heartbeat initialized again (error %d)", r.ErrorCode)
		}
	})
}
