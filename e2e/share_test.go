package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/share"
	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// KIP-932 share groups through franz-go's share consumer (kgo.ShareGroup:
// ShareGroupHeartbeat, ShareFetch, ShareAcknowledge). The share state is
// kept by the node's own share coordinator, which the tests ask, through
// the node's persister, where each share partition starts.

// shareTopic creates topic with n partitions and returns its id.
func shareTopic(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, n int32) [16]byte {
	t.Helper()
	resp, err := adm.CreateTopic(ctx, n, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	return resp.ID
}

func shareClient(t *testing.T, srv *server.Server, group, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(servertest.Addr(srv)),
		kgo.ShareGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// waitInitialized waits until every partition of the topic has share
// state: the group's members fetched from it once, so that records
// produced from now on are delivered (share.auto.offset.reset is latest).
// It asks p, the node's persister, for the state's summary.
func waitInitialized(ctx context.Context, t *testing.T, p share.Persister, group string, id [16]byte, n int32) {
	t.Helper()
	for {
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.GroupID = group
		rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		rt.TopicID = id
		for i := range n {
			rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
			rp.Partition = i
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := p.ReadStateSummary(ctx, req)
		initialized := int32(0)
		if err == nil {
			for _, t := range resp.Topics {
				for _, rp := range t.Partitions {
					if rp.ErrorCode == 0 && rp.StartOffset >= 0 {
						initialized++
					}
				}
			}
		}
		if initialized == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("share partitions of group %s were not initialized: %v", group, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pollShort polls for up to a second: share consumers acknowledge in the
// background, and a poll with nothing left to deliver would block.
func pollShort(ctx context.Context, cl *kgo.Client) kgo.Fetches {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return cl.PollFetches(pctx)
}

// waitInitializedBy polls with cl until its first share fetch initialized
// the topic's partition 0.
func waitInitializedBy(ctx context.Context, t *testing.T, cl *kgo.Client, p share.Persister, group string, id [16]byte) {
	t.Helper()
	for {
		pollShort(ctx, cl)
		if shareStartOffset(ctx, t, p, group, id, 0) >= 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("share partition of group %s was not initialized", group)
		}
	}
}

func produceN(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i % 7)), Value: []byte(strconv.Itoa(i))}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestShareGroupThreeConsumers: three share consumers of one group are
// given one partition each by the simple assignor and, between them, get
// every record exactly once (nothing is released or times out). Which
// consumer reads which record is not checked: a consumer keeps fetching
// its old partitions until its next heartbeat, which share groups allow.
func TestShareGroupThreeConsumers(t *testing.T) {
	ctx := testContext(t)
	// The node's own share coordinator keeps the state.
	srv := servertest.Start(t, "group.share.heartbeat.interval.ms=1000")
	persister := srv.SharePersister()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	const topic, group, n = "share-three", "sg-three", 300
	id := shareTopic(ctx, t, adm, topic, 3)

	var mu sync.Mutex
	seen := map[string]int{} // "partition@offset" -> deliveries
	var wg sync.WaitGroup
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var clients []*kgo.Client
	for range 3 {
		cl := shareClient(t, srv, group, topic)
		clients = append(clients, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[fmt.Sprintf("%d@%d", r.Partition, r.Offset)]++
					mu.Unlock()
				})
			}
		}()
	}
	waitInitialized(ctx, t, persister, group, id, 3)

	// Every member is in the group, with one partition each.
	for {
		described := kmsg.NewPtrShareGroupDescribeRequest()
		described.GroupIDs = []string{group}
		resp, err := described.RequestWith(ctx, admCl)
		if err != nil {
			t.Fatal(err)
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			t.Fatalf("describe: error %d", g.ErrorCode)
		}
		parts := 0
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				parts += len(tp.Partitions)
			}
		}
		if len(g.Members) == 3 && parts == 3 && g.GroupState == "Stable" {
			for _, m := range g.Members {
				if got := len(m.Assignment.TopicPartitions); got != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 1 || m.Assignment.TopicPartitions[0].Topic != topic {
					t.Fatalf("member %s assignment %+v, want one partition of %s", m.MemberID, m.Assignment.TopicPartitions, topic)
				}
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("group never had 3 members with one partition each: %+v", g)
		}
		time.Sleep(100 * time.Millisecond)
	}

	produceN(ctx, t, admCl, topic, n)
	for {
		mu.Lock()
		got := len(seen)
		mu.Unlock()
		if got == n {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("consumed %d distinct records of %d", got, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	for _, cl := range clients {
		cl.Close() // accepts what the last poll returned and leaves
	}
	mu.Lock()
	defer mu.Unlock()
	for k, c := range seen {
		if c != 1 {
			t.Errorf("record %s delivered %d times, want once", k, c)
		}
	}
	// The acknowledgements moved every share-partition start offset to
	// the end of its log.
	lw, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		end, _ := lw.Lookup(topic, p)
		for {
			start := shareStartOffset(ctx, t, persister, group, id, p)
			if start == end.Offset {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("partition %d: share start offset %d, want %d (every record acknowledged)", p, start, end.Offset)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// shareStartOffset reads a share partition's start offset from p (-1 if
// it has no state).
func shareStartOffset(ctx context.Context, t *testing.T, p share.Persister, group string, id [16]byte, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition = partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := p.ReadStateSummary(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		return -1
	}
	return resp.Topics[0].Partitions[0].StartOffset
}

// TestShareGroupRedelivery: a released record comes back with its
// delivery count raised, a record whose acquisition lock expires goes to
// another member, and a record released share.delivery.count.limit times
// is archived and not delivered again.
func TestShareGroupRedelivery(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t, "group.share.record.lock.duration.ms=2000", "group.share.delivery.count.limit=3")
	persister := srv.SharePersister()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	const n = 5

	t.Run("release until archived", func(t *testing.T) {
		const topic, group = "share-release", "sg-release"
		id := shareTopic(ctx, t, kadm.NewClient(admCl), topic, 1)
		cl := shareClient(t, srv, group, topic)
		defer cl.Close()
		deliveries := map[int64][]int32{}
		produced := false
		for {
			fs := pollShort(ctx, cl)
			if ctx.Err() != nil {
				t.Fatalf("deliveries so far: %v", deliveries)
			}
			if !produced {
				if shareStartOffset(ctx, t, persister, group, id, 0) >= 0 {
					produceN(ctx, t, admCl, topic, n)
					produced = true
				}
			}
			fs.EachRecord(func(r *kgo.Record) {
				deliveries[r.Offset] = append(deliveries[r.Offset], r.DeliveryCount())
				r.Ack(kgo.AckRelease)
			})
			start := shareStartOffset(ctx, t, persister, group, id, 0)
			if produced && start == n {
				break // all archived
			}
		}
		for off := range int64(n) {
			if got := fmt.Sprint(deliveries[off]); got != "[1 2 3]" {
				t.Errorf("offset %d delivered with counts %s, want [1 2 3]", off, got)
			}
		}
	})

	t.Run("connection close", func(t *testing.T) {
		// A raw share session: the records a connection acquired come
		// back at once when it closes, well before their 2 s lock.
		const topic, group = "share-conn", "sg-conn"
		id := shareTopic(ctx, t, kadm.NewClient(admCl), topic, 1)
		// fetch opens a share session for member and returns what it
		// acquired as "first-last@deliveries".
		fetch := func(cl *kgo.Client, member string) []string {
			req := kmsg.NewPtrShareFetchRequest()
			req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(member)
			req.MaxWaitMillis, req.MaxRecords, req.BatchSize = 100, 100, 100
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = id
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(1))
			if err != nil || resp.ErrorCode != 0 {
				t.Fatalf("share fetch: %v %+v", err, resp)
			}
			var got []string
			for _, rt := range resp.Topics {
				for _, p := range rt.Partitions {
					for _, a := range p.AcquiredRecords {
						got = append(got, fmt.Sprintf("%d-%d@%d", a.FirstOffset, a.LastOffset, a.DeliveryCount))
					}
				}
			}
			return got
		}
		a, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
		if err != nil {
			t.Fatal(err)
		}
		fetch(a, "member-a") // starts the share partition at the log end
		produceN(ctx, t, admCl, topic, n)
		if got := fetch(a, "member-a"); fmt.Sprint(got) != "[0-4@1]" {
			a.Close()
			t.Fatalf("first member acquired %+v", got)
		}
		a.Close()
		b, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		var got []string
		for start := time.Now(); len(got) == 0 && time.Since(start) < time.Second; {
			got = fetch(b, "member-b")
		}
		if fmt.Sprint(got) != "[0-4@2]" {
			t.Fatalf("after the first connection closed, the other member acquired %+v within 1 s, want offsets 0-4 at delivery 2", got)
		}
	})

	t.Run("lock expiry", func(t *testing.T) {
		const topic, group = "share-expiry", "sg-expiry"
		id := shareTopic(ctx, t, kadm.NewClient(admCl), topic, 1)
		holder := shareClient(t, srv, group, topic)
		defer holder.Close()
		// The holder joins first and initializes the partition.
		waitInitializedBy(ctx, t, holder, persister, group, id)
		produceN(ctx, t, admCl, topic, n)
		var held []*kgo.Record
		for len(held) < n && ctx.Err() == nil {
			held = append(held, holder.PollFetches(ctx).Records()...)
		}
		for _, r := range held {
			if r.DeliveryCount() != 1 {
				t.Fatalf("first delivery of offset %d has count %d", r.Offset, r.DeliveryCount())
			}
		}
		// The holder neither acknowledges nor polls (nor fetches in the
		// background): after the 2 s lock the records go to the other
		// member.
		holder.PauseFetchTopics(topic)
		other := shareClient(t, srv, group, topic)
		defer other.Close()
		got := map[int64]int32{}
		var redelivered []*kgo.Record
		for len(got) < n {
			fs := other.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("redelivered after lock expiry: %v", got)
			}
			fs.EachRecord(func(r *kgo.Record) {
				got[r.Offset] = r.DeliveryCount()
				redelivered = append(redelivered, r)
			})
		}
		for off, c := range got {
			if c != 2 {
				t.Errorf("offset %d redelivered with count %d, want 2", off, c)
			}
		}
		other.MarkAcks(kgo.AckAccept, redelivered...)
		if err := other.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		for {
			start := shareStartOffset(ctx, t, persister, group, id, 0)
			if start == n {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("share start offset %d, want %d after the acknowledgements", start, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestShareGroupOffsets: kadm's share offset APIs. After a consumer
// accepted every record the start offsets are at the log end with no lag;
// an empty group's offsets can be moved back, and the records past the new
// start are delivered again; deleted offsets are gone from the describe.
func TestShareGroupOffsets(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	persister := srv.SharePersister()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	const topic, group, n = "share-offsets", "sg-offsets", 20
	id := shareTopic(ctx, t, adm, topic, 1)

	// consumeAll reads want records with a new member, which then leaves.
	consumeAll := func(want int) ([]int64, error) {
		cl := shareClient(t, srv, group, topic)
		defer cl.Close()
		var offs []int64
		for len(offs) < want {
			fs := pollShort(ctx, cl)
			if ctx.Err() != nil {
				return offs, fmt.Errorf("consumed %v, want %d records", offs, want)
			}
			cl.MarkAcks(kgo.AckAccept, fs.Records()...) // records left unacknowledged are released on close
			fs.EachRecord(func(r *kgo.Record) { offs = append(offs, r.Offset) })
		}
		return offs, cl.FlushAcks(ctx)
	}
	first := make(chan error, 1)
	go func() {
		_, err := consumeAll(n)
		first <- err
	}()
	for {
		if shareStartOffset(ctx, t, persister, group, id, 0) >= 0 || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	produceN(ctx, t, admCl, topic, n)
	if err := <-first; err != nil { // the client closed: the group is empty
		t.Fatal(err)
	}

	describe := func() kadm.ShareOffset {
		t.Helper()
		for {
			ds, err := adm.DescribeShareGroupOffsets(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			d := ds[group]
			if d.Err != nil {
				t.Fatalf("describe offsets: %v", d.Err)
			}
			if o, ok := d.Offsets[topic][0]; ok || ctx.Err() != nil {
				return o
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The acknowledgements of the last poll go out as the client closes.
	for {
		o := describe()
		if o.Err != nil {
			t.Fatalf("partition error: %v", o.Err)
		}
		if o.StartOffset == n && o.Lag == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("start offset %d lag %d, want %d and 0", o.StartOffset, o.Lag, n)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Back to offset 15: the last five records come again.
	var to kadm.Offsets
	to.Add(kadm.Offset{Topic: topic, Partition: 0, At: 15})
	res, err := adm.AlterShareGroupOffsets(ctx, group, to)
	if err != nil || res.Error() != nil {
		t.Fatalf("alter: %v %v", err, res.Error())
	}
	if o := describe(); o.StartOffset != 15 || o.Lag != 5 {
		t.Fatalf("after alter: start offset %d lag %d, want 15 and 5", o.StartOffset, o.Lag)
	}
	if offs, err := consumeAll(5); err != nil || fmt.Sprint(offs) != "[15 16 17 18 19]" {
		t.Fatalf("after alter consumed %v (%v)", offs, err)
	}

	// A group with members cannot be altered.
	busy := shareClient(t, srv, group, topic)
	waitInitializedBy(ctx, t, busy, persister, group, id)
	if res, err := adm.AlterShareGroupOffsets(ctx, group, to); err == nil && res.Error() == nil {
		t.Fatal("altered the offsets of a group with a member")
	}
	busy.Close()

	dres, err := adm.DeleteShareGroupOffsets(ctx, group, topic)
	if err != nil || dres.Error() != nil {
		t.Fatalf("delete: %v %v", err, dres.Error())
	}
	if shareStartOffset(ctx, t, persister, group, id, 0) >= 0 {
		t.Fatal("share state still there after DeleteShareGroupOffsets")
	}
	ds, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil || ds[group].Err != nil {
		t.Fatalf("describe after delete: %v %v", err, ds[group].Err)
	}
	if o, ok := ds[group].Offsets[topic][0]; ok {
		t.Fatalf("after delete the group still has offset %+v", o)
	}

	// ListGroups shows the share group by type; DeleteGroups removes it.
	listed, err := adm.ListGroupsByType(ctx, []string{"share"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed[group]; !ok || l.ProtocolType != "share" || l.GroupType != "share" || l.State != "Empty" {
		t.Fatalf("ListGroups(share): %+v", listed)
	}
	if _, err := adm.DeleteGroup(ctx, group); err != nil {
		t.Fatalf("delete group: %v", err)
	}
	if listed, err := adm.ListGroups(ctx); err != nil || len(listed) != 0 {
		t.Fatalf("groups after delete: %v %v", listed, err)
	}
}

// TestShareGroupConfigs: the group's share.auto.offset.reset=earliest and
// share.isolation.level=read_committed (GROUP configs, set with
// IncrementalAlterConfigs) make a share consumer start at the log start
// and skip an aborted transaction's records.
func TestShareGroupConfigs(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	admCl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	const topic, group = "share-configs", "sg-configs"
	shareTopic(ctx, t, kadm.NewClient(admCl), topic, 1)

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range map[string]string{"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	alter.Resources = append(alter.Resources, res)
	aresp, err := alter.RequestWith(ctx, admCl)
	if err != nil || aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group configs: %v %+v", err, aresp)
	}
	// DescribeConfigs shows the override and the broker's defaults.
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	dreq.Resources = append(dreq.Resources, dr)
	dresp, err := dreq.RequestWith(ctx, admCl)
	if err != nil || dresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe group configs: %v %+v", err, dresp)
	}
	described := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		described[c.Name] = fmt.Sprintf("%s/%s", *c.Value, c.Source)
	}
	if want := "earliest/GROUP_CONFIG"; described["share.auto.offset.reset"] != want || described["share.delivery.count.limit"] != "5/DEFAULT_CONFIG" {
		t.Fatalf("group configs %v", described)
	}
	// A bad value is refused with INVALID_CONFIG.
	bad := *alter
	bad.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
	bad.Resources[0].Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit", Value: kmsg.StringPtr("50")}}
	if bresp, err := bad.RequestWith(ctx, admCl); err != nil || bresp.Resources[0].ErrorCode != 40 {
		t.Fatalf("share.delivery.count.limit=50: %v %+v, want INVALID_CONFIG", err, bresp)
	}

	// Before any member: "a", then an aborted transaction ("x", "y"),
	// then a committed one ("b").
	if err := admCl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.TransactionalID("share-txn"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	for _, round := range []struct {
		values []string
		commit kgo.TransactionEndTry
	}{{[]string{"x", "y"}, kgo.TryAbort}, {[]string{"b"}, kgo.TryCommit}} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range round.values {
			if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, round.commit); err != nil {
			t.Fatal(err)
		}
	}

	cl := shareClient(t, srv, group, topic)
	defer cl.Close()
	var got []string
	for len(got) < 2 {
		fs := pollShort(ctx, cl)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	// Nothing else comes: the aborted records are archived.
	fs := pollShort(ctx, cl)
	fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if fmt.Sprint(got) != "[a b]" {
		t.Fatalf("read_committed from the earliest offset consumed %v, want [a b]", got)
	}
}

// TestShareGroupNewPartitionFromZero: as in Kafka 4.4, a partition added
// to a topic the share group already reads starts at offset 0 whatever
// share.auto.offset.reset says (latest here): the group coordinator
// initializes it before assigning it, so the records produced into it
// before any member fetched from it are delivered.
func TestShareGroupNewPartitionFromZero(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	persister := srv.SharePersister()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	const topic, group = "share-grow", "sg-grow"
	id := shareTopic(ctx, t, adm, topic, 1)
	first := shareClient(t, srv, group, topic)
	waitInitializedBy(ctx, t, first, persister, group, id)
	first.Close()

	if resp, err := adm.CreatePartitions(ctx, 1, topic); err != nil || resp.Error() != nil {
		t.Fatalf("add a partition: %v %v", err, resp.Error())
	}
	for i := range 3 {
		r := &kgo.Record{Topic: topic, Partition: 1, Value: []byte(strconv.Itoa(i))}
		if err := admCl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl := shareClient(t, srv, group, topic)
	defer cl.Close()
	var got []int64
	for len(got) < 3 {
		fs := pollShort(ctx, cl)
		if ctx.Err() != nil {
			t.Fatalf("partition 1 delivered offsets %v, want [0 1 2]", got)
		}
		cl.MarkAcks(kgo.AckAccept, fs.Records()...)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition == 1 {
				got = append(got, r.Offset)
			}
		})
	}
	slices.Sort(got)
	if fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("partition 1 delivered offsets %v, want [0 1 2]", got)
	}
}
