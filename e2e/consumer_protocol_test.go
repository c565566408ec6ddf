package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// KIP-848 consumer groups through franz-go's server-side balancer
// (kgo.ServerSideBalancer, ConsumerGroupHeartbeat v1): members join one by
// one and leave, the coordinator assigns, and at no moment do two members
// hold the same partition.

// ownership848 tracks which member holds each partition from the rebalance
// callbacks, and every record consumed.
type ownership848 struct {
	mu         sync.Mutex
	owner      map[int32]string
	violations []string
	consumed   map[string]int
}

func (o *ownership848) assigned(name string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if cur, ok := o.owner[p]; ok && cur != name {
			o.violations = append(o.violations, fmt.Sprintf("partition %d assigned to %s while %s holds it", p, name, cur))
		}
		o.owner[p] = name
	}
}

func (o *ownership848) revoked(name string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.owner[p] == name {
			delete(o.owner, p)
		}
	}
}

func (o *ownership848) counts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for _, m := range o.owner {
		out[m]++
	}
	return out
}

func (o *ownership848) waitCounts(t *testing.T, ctx context.Context, want map[string]int) {
	t.Helper()
	for {
		got := o.counts()
		same := len(got) == len(want)
		for m, n := range want {
			same = same && got[m] == n
		}
		if same {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ownership %v never became %v", got, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestConsumerProtocolFranz(t *testing.T) {
	ctx := testContext(t)
	addr := servertest.Addr(servertest.Start(t, "group.initial.rebalance.delay.ms=0"))
	const topic, groupID, partitions, perPartition = "kip848", "kip848-group", 6, 50
	franzCreate(t, ctx, newKadm(t, addr), topic, partitions, nil)

	prod := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := range int32(partitions) {
		for i := range perPartition {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, i))})
		}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	own := &ownership848{owner: map[int32]string{}, consumed: map[string]int{}}
	start := func(name string) *kgo.Client {
		cl := newKgo(t, addr,
			kgo.ClientID(name),
			kgo.ConsumerGroup(groupID),
			kgo.ConsumeTopics(topic),
			kgo.ServerSideBalancer(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(100*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { own.assigned(name, a[topic]) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { own.revoked(name, r[topic]) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { own.revoked(name, l[topic]) }),
		)
		go func() {
			for {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
				own.mu.Lock()
				fs.EachRecord(func(r *kgo.Record) { own.consumed[string(r.Value)]++ })
				own.mu.Unlock()
			}
		}()
		return cl
	}

	a := start("a")
	own.waitCounts(t, ctx, map[string]int{"a": 6})
	b := start("b")
	own.waitCounts(t, ctx, map[string]int{"a": 3, "b": 3})
	c := start("c")
	own.waitCounts(t, ctx, map[string]int{"a": 2, "b": 2, "c": 2})

	for {
		own.mu.Lock()
		n := len(own.consumed)
		own.mu.Unlock()
		if n == partitions*perPartition {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("consumed %d distinct records, want %d", n, partitions*perPartition)
		case <-time.After(20 * time.Millisecond):
		}
	}
	for p := range partitions {
		for i := range perPartition {
			if v := strconv.Itoa(p) + "-" + strconv.Itoa(i); own.consumed[v] == 0 {
				t.Fatalf("record %s never consumed", v)
			}
		}
	}

	// The coordinator's view: three members at the assignment epoch.
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{groupID}
	resp, err := req.RequestWith(ctx, a)
	if err != nil {
		t.Fatalf("ConsumerGroupDescribe: %v", err)
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 3 || g.AssignorName != "uniform" {
		t.Fatalf("ConsumerGroupDescribe: error %d state %q members %d assignor %q", g.ErrorCode, g.State, len(g.Members), g.AssignorName)
	}
	var clients []string
	for _, m := range g.Members {
		if m.MemberEpoch != g.AssignmentEpoch || len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
			t.Fatalf("member %s: epoch %d (assignment epoch %d), assignment %+v", m.ClientID, m.MemberEpoch, g.AssignmentEpoch, m.Assignment)
		}
		clients = append(clients, m.ClientID)
	}
	slices.Sort(clients)
	if !slices.Equal(clients, []string{"a", "b", "c"}) {
		t.Fatalf("member client ids %v", clients)
	}

	// A leaving member's partitions go to the others.
	c.Close()
	own.waitCounts(t, ctx, map[string]int{"a": 3, "b": 3})
	b.Close()
	own.waitCounts(t, ctx, map[string]int{"a": 6})

	own.mu.Lock()
	defer own.mu.Unlock()
	if len(own.violations) > 0 {
		t.Fatalf("ownership violations: %v", own.violations)
	}
}

// A KIP-848 regex (SubscribedTopicRegex) is resolved by the coordinator
// over every topic, internal ones included, with a whole-name match, as
// Kafka resolves it (GroupMetadataManager.refreshRegularExpressions scans
// the image's topicsByName with RE2J's matches()). franz-go's
// Test848RegexBrokerResolves subscribes to `pfx-orders|__consumer_offsets`
// and expects the broker to assign it __consumer_offsets too.
func TestConsumerProtocolRegexInternalTopics(t *testing.T) {
	ctx := testContext(t)
	addr := servertest.Addr(servertest.Start(t, "group.initial.rebalance.delay.ms=0"))
	orders := topicName("franz", "orders")
	adm := newKadm(t, addr)
	franzCreate(t, ctx, adm, orders, 1, nil)
	prod := newKgo(t, addr)
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: orders, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	const offsets = "__consumer_offsets"
	cl := newKgo(t, addr,
		kgo.ConsumerGroup("regex-internal"),
		kgo.ServerSideBalancer(),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics(regexp.QuoteMeta(orders), regexp.QuoteMeta(offsets)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	var got []byte
	for got == nil {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record of %s consumed: %v", orders, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Topic == orders {
				got = r.Value
			}
		})
	}
	if string(got) != "v" {
		t.Fatalf("consumed %q from %s, want %q", got, orders, "v")
	}

	// The member's assignment, as the coordinator describes it: every
	// partition of both topics.
	meta, err := adm.Metadata(ctx, orders, offsets)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	names := map[[16]byte]string{}
	for _, td := range meta.Topics {
		if td.Err != nil {
			t.Fatalf("metadata %s: %v", td.Topic, td.Err)
		}
		names[td.ID] = td.Topic
	}
	offsetsPartitions := len(meta.Topics[offsets].Partitions)
	if !meta.Topics[offsets].IsInternal || offsetsPartitions == 0 {
		t.Fatalf("%s: internal %v, %d partitions", offsets, meta.Topics[offsets].IsInternal, offsetsPartitions)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"regex-internal"}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ConsumerGroupDescribe: %v", err)
		}
		assigned := map[string]int{}
		if g := resp.Groups[0]; g.ErrorCode == 0 && len(g.Members) == 1 {
			for _, tp := range g.Members[0].Assignment.TopicPartitions {
				assigned[names[tp.TopicID]] = len(tp.Partitions)
			}
		}
		if assigned[orders] == 1 && assigned[offsets] == offsetsPartitions && len(assigned) == 2 {
			break
		}
		select {
		case <-waitCtx.Done():
			t.Fatalf("assignment %v, want %s:1 and all %d partitions of %s", assigned, orders, offsetsPartitions, offsets)
		case <-time.After(20 * time.Millisecond):
		}
	}
	// franz-go adopts the internal topic the coordinator assigned.
	for !slices.Contains(cl.GetConsumeTopics(), offsets) {
		select {
		case <-waitCtx.Done():
			t.Fatalf("franz-go consumes %v, not %s", cl.GetConsumeTopics(), offsets)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
