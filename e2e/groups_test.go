package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// Consumer groups through real clients: franz-go members sharing a topic
// across joins, graceful leaves, crashes, cooperative rebalances and static
// membership; sarama and librdkafka group consumers committing offsets; and
// the coordinator's answers to bad OffsetCommit and Heartbeat requests.

// startGroupBroker starts a Samsa server for one test, with no initial
// rebalance delay, and returns its bootstrap address.
func startGroupBroker(t *testing.T) string {
	t.Helper()
	return servertest.Addr(servertest.Start(t, "group.initial.rebalance.delay.ms=0"))
}

// restartable is a broker that a test can stop and start again on the same
// data directory.
type restartable interface {
	Addr() string         // bootstrap address of the running broker
	Restart(t *testing.T) // stop cleanly, then start again on the same data
}

type samsaRestartable struct {
	dir string
	srv *server.Server
}

func (r *samsaRestartable) Addr() string { return servertest.Addr(r.srv) }

func (r *samsaRestartable) Restart(t *testing.T) {
	t.Helper()
	if err := r.srv.Close(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	r.srv = servertest.StartIn(t, r.dir, "group.initial.rebalance.delay.ms=0")
}

// restartableBroker starts a Samsa server that keeps its data across
// Restart.
func restartableBroker(t *testing.T) restartable {
	t.Helper()
	dir := t.TempDir()
	return &samsaRestartable{dir: dir, srv: servertest.StartIn(t, dir, "group.initial.rebalance.delay.ms=0")}
}

// groupSetup creates a fresh topic and produces n generated records to it
// (keyed, so they spread over every partition); it returns the produced
// records with their partitions and offsets.
func groupSetup(t *testing.T, ctx context.Context, addr, topic string, partitions int32, seed uint64, n int) []rec {
	t.Helper()
	franzCreate(t, ctx, newKadm(t, addr), topic, partitions, nil)
	if n == 0 {
		return nil
	}
	return franzProduce(t, ctx, newKgo(t, addr), topic, genRecords(seed, n), true)
}

// waitCommitted polls the group's committed offsets until they equal want
// (partition -> offset), or fails with the last ones seen.
func waitCommitted(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	var got map[int32]int64
	for {
		got = committedOffsets(t, ctx, adm, group, topic)
		if maps.Equal(got, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s: committed %v, want %v", group, got, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func committedOffsets(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets %s: %v", group, err)
	}
	got := map[int32]int64{}
	os.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Errorf("FetchOffsets %s: %s[%d]: %v", group, o.Topic, o.Partition, o.Err)
		}
		if o.Topic == topic {
			got[o.Partition] = o.At
		}
	})
	return got
}

func describeGroup(t *testing.T, ctx context.Context, adm *kadm.Client, group string) kadm.DescribedGroup {
	t.Helper()
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("DescribeGroups %s: %v", group, err)
	}
	d := ds[group]
	if d.Err != nil {
		t.Fatalf("DescribeGroups %s: %v", group, d.Err)
	}
	return d
}

// checkMemberMetadata checks that every member's subscription, as
// DescribeGroups returns it, decodes as consumer-protocol metadata naming
// topic: the broker must keep the bytes each member sent in JoinGroup.
func checkMemberMetadata(t *testing.T, d kadm.DescribedGroup, topic string) {
	t.Helper()
	for _, m := range d.Members {
		meta, ok := m.Join.AsConsumer()
		if !ok || meta == nil || !slices.Equal(meta.Topics, []string{topic}) {
			t.Errorf("member %s (%s): described subscription %+v, want consumer metadata with topics [%s]", m.MemberID, m.ClientID, meta, topic)
		}
	}
}

// TestGroupFranzShareAndFailover: three members share six partitions; one
// leaves gracefully, one crashes. Every record is consumed exactly once,
// every partition is always held by at most one member, and the offsets
// committed match what was consumed.
func TestGroupFranzShareAndFailover(t *testing.T) {
	ctx := testContext(t)
	addr := startGroupBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "group")
	group := topic + "-g"
	groupSetup(t, ctx, addr, topic, 6, 0, 0)
	recs := genRecords(9001, 600)
	prod := newKgo(t, addr)

	h := newGroupHarness(t, addr, group, topic, kgo.Balancers(kgo.RangeBalancer()))
	a, b, c := h.start("a"), h.start("b"), h.start("c")
	h.waitOwnership(ctx, 6, map[string]int{"a": 2, "b": 2, "c": 2})
	d := describeGroup(t, ctx, adm, group)
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 3 {
		t.Errorf("group with 3 members: state %q protocol %q members %d, want Stable range 3", d.State, d.Protocol, len(d.Members))
	}
	checkMemberMetadata(t, d, topic)
	produced := franzProduce(t, ctx, prod, topic, recs[:200], true)
	if dups := h.waitConsumed(ctx, 200); dups != 0 {
		t.Errorf("3 members: %d records consumed twice", dups)
	}
	waitCommitted(t, ctx, adm, group, topic, franzEnds(t, ctx, adm, topic))

	// A graceful leave hands c's partitions over at once, with nothing
	// consumed twice: c committed all it read before leaving.
	c.leave(h)
	h.waitOwnership(ctx, 6, map[string]int{"a": 3, "b": 3})
	produced = append(produced, franzProduce(t, ctx, prod, topic, recs[200:400], true)...)
	if dups := h.waitConsumed(ctx, 400); dups != 0 {
		t.Errorf("after c left: %d records consumed twice", dups)
	}
	waitCommitted(t, ctx, adm, group, topic, franzEnds(t, ctx, adm, topic))

	// A crashed member keeps its partitions until its session times out.
	crashed := time.Now()
	b.crash(h)
	produced = append(produced, franzProduce(t, ctx, prod, topic, recs[400:], true)...)
	h.waitOwnership(ctx, 6, map[string]int{"a": 6})
	if took := time.Since(crashed); took < 4*time.Second {
		t.Errorf("b's partitions moved %v after it was cut off, before its 6 s session could time out", took)
	}
	// b had committed everything it read before it was cut off, so even
	// the crash costs no duplicate.
	if dups := h.waitConsumed(ctx, 600); dups != 0 {
		t.Errorf("after b crashed: %d records consumed twice", dups)
	}
	ends := franzEnds(t, ctx, adm, topic)
	waitCommitted(t, ctx, adm, group, topic, ends)
	d = describeGroup(t, ctx, adm, group)
	if len(d.Members) != 1 || d.Members[0].ClientID != "e2e-a" {
		t.Errorf("after the crash: members %+v, want only e2e-a", d.Members)
	}
	if got := d.AssignedPartitions()[topic]; len(got) != 6 {
		t.Errorf("a is assigned %v, want all 6 partitions", got)
	}

	for _, v := range h.violations() {
		t.Error(v)
	}
	a.leave(h)
	h.mu.Lock()
	consumed := slices.Clone(h.mu.records)
	h.mu.Unlock()
	checkConsumed(t, 6, produced, consumed, ends, checkOpts{})
}

// TestGroupFranzCooperative: with the cooperative-sticky balancer a joining
// member takes partitions incrementally; the others keep consuming the
// partitions they keep and never give up more than they must.
func TestGroupFranzCooperative(t *testing.T) {
	ctx := testContext(t)
	addr := startGroupBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "coop")
	group := topic + "-g"
	groupSetup(t, ctx, addr, topic, 6, 0, 0)
	recs := genRecords(9002, 300)
	prod := newKgo(t, addr)

	h := newGroupHarness(t, addr, group, topic, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	h.start("a")
	h.start("b")
	before := h.waitOwnership(ctx, 6, map[string]int{"a": 3, "b": 3})
	produced := franzProduce(t, ctx, prod, topic, recs[:150], true)
	h.waitConsumed(ctx, 150)
	h.mu.Lock()
	revokedBefore := map[string]int{"a": len(h.mu.revoked["a"]), "b": len(h.mu.revoked["b"])}
	h.mu.Unlock()

	h.start("c")
	after := h.waitOwnership(ctx, 6, map[string]int{"a": 2, "b": 2, "c": 2})
	for _, m := range []string{"a", "b"} {
		for _, p := range after[m] {
			if !slices.Contains(before[m], p) {
				t.Errorf("member %s gained partition %d when c joined; had %v, has %v", m, p, before[m], after[m])
			}
		}
		h.mu.Lock()
		revoked := slices.Clone(h.mu.revoked[m][revokedBefore[m]:])
		h.mu.Unlock()
		slices.Sort(revoked)
		if len(revoked) != 1 || !slices.Contains(after["c"], revoked[0]) {
			t.Errorf("member %s revoked %v when c joined, want exactly the one partition c took (c has %v)", m, revoked, after["c"])
		}
	}
	if d := describeGroup(t, ctx, adm, group); d.Protocol != "cooperative-sticky" || len(d.Members) != 3 {
		t.Errorf("group protocol %q with %d members, want cooperative-sticky with 3", d.Protocol, len(d.Members))
	}

	produced = append(produced, franzProduce(t, ctx, prod, topic, recs[150:], true)...)
	if dups := h.waitConsumed(ctx, 300); dups != 0 {
		t.Errorf("%d records consumed twice across the cooperative rebalance", dups)
	}
	ends := franzEnds(t, ctx, adm, topic)
	waitCommitted(t, ctx, adm, group, topic, ends)
	for _, v := range h.violations() {
		t.Error(v)
	}
	h.mu.Lock()
	consumed := slices.Clone(h.mu.records)
	h.mu.Unlock()
	checkConsumed(t, 6, produced, consumed, ends, checkOpts{})
}

// TestGroupFranzStaticMembership: a member with a group.instance.id that
// restarts within its session timeout gets its partitions back without a
// rebalance: the generation stays, the other member sees no callback.
//
// The restarted member is the follower that joined once. Kafka skips the
// rebalance whenever the group's protocol would not change; kfake skips it
// only if the member's join metadata is byte-identical, and franz-go writes
// the member's previous generation into it, which is -1 only for a member
// that has joined once. A restarted leader also makes franz-go compare plans
// (KIP-814). Restarting the once-joined follower is the case every broker
// agrees on.
func TestGroupFranzStaticMembership(t *testing.T) {
	ctx := testContext(t)
	addr := startGroupBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "static")
	group := topic + "-g"
	groupSetup(t, ctx, addr, topic, 4, 0, 0)

	// The eager range balancer makes any rebalance visible: every member
	// is called back with all its partitions revoked.
	h := newGroupHarness(t, addr, group, topic, kgo.Balancers(kgo.RangeBalancer()),
		kgo.SessionTimeout(15*time.Second))
	a := h.start("a", kgo.InstanceID("instance-a"))
	h.waitOwnership(ctx, 4, map[string]int{"a": 4})
	b := h.start("b", kgo.InstanceID("instance-b"))
	before := h.waitOwnership(ctx, 4, map[string]int{"a": 2, "b": 2})
	// The callbacks can run before both members have stored the
	// generation they joined; wait until they agree on it.
	var genA, genB int32
	for {
		_, genA = a.cl.GroupMetadata()
		_, genB = b.cl.GroupMetadata()
		if genA == genB && genA >= 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("generations a=%d b=%d, want equal and >= 2", genA, genB)
		case <-time.After(20 * time.Millisecond):
		}
	}
	callbacksA := h.callbacks("a")
	describedBefore := staticAssignments(t, ctx, adm, group)
	checkMemberMetadata(t, describeGroup(t, ctx, adm, group), topic)

	b.leave(h) // static: Close sends no LeaveGroup
	if d := describeGroup(t, ctx, adm, group); len(d.Members) != 2 {
		t.Errorf("after b closed: %d members, want 2 (b's session has not expired)", len(d.Members))
	}
	b2 := h.start("b", kgo.InstanceID("instance-b"))
	after := h.waitOwnership(ctx, 4, map[string]int{"a": 2, "b": 2})
	if !maps.EqualFunc(before, after, slices.Equal) {
		t.Errorf("ownership %v after restart, want %v", after, before)
	}
	// Give a rebalance, had one been started, time to reach a's heartbeat
	// (every second).
	time.Sleep(2500 * time.Millisecond)
	if _, gen := b2.cl.GroupMetadata(); gen != genB {
		t.Errorf("restarted b is in generation %d, want %d (unchanged)", gen, genB)
	}
	if _, gen := a.cl.GroupMetadata(); gen != genA {
		t.Errorf("a moved to generation %d from %d: the restart caused a rebalance", gen, genA)
	}
	if n := h.callbacks("a"); n != callbacksA {
		t.Errorf("a got %d rebalance callbacks during b's restart, want none", n-callbacksA)
	}
	if got := staticAssignments(t, ctx, adm, group); !maps.Equal(got, describedBefore) {
		t.Errorf("described assignments %v after restart, want %v", got, describedBefore)
	}
	for _, v := range h.violations() {
		t.Error(v)
	}
}

// staticAssignments returns instance id -> assigned partitions, as
// DescribeGroups reports them.
func staticAssignments(t *testing.T, ctx context.Context, adm *kadm.Client, group string) map[string]string {
	t.Helper()
	d := describeGroup(t, ctx, adm, group)
	if d.State != "Stable" {
		t.Errorf("group %s is %s, want Stable", group, d.State)
	}
	out := map[string]string{}
	for _, m := range d.Members {
		if m.InstanceID == nil {
			t.Errorf("member %s has no instance id", m.MemberID)
			continue
		}
		a, _ := m.Assigned.AsConsumer()
		var ps []int32
		if a != nil {
			for _, tp := range a.Topics {
				ps = append(ps, tp.Partitions...)
			}
		}
		slices.Sort(ps)
		out[*m.InstanceID] = fmt.Sprint(ps)
	}
	return out
}

// saramaHandler is a sarama ConsumerGroupHandler that records what one
// member was given and consumed, marking each message so it is committed.
type saramaHandler struct {
	name string
	mu   *sync.Mutex
	out  *[]rec
	gens chan []int32 // the partitions of each new session
}

func (s *saramaHandler) Setup(sess sarama.ConsumerGroupSession) error {
	var ps []int32
	for _, p := range sess.Claims() {
		ps = append(ps, p...)
	}
	slices.Sort(ps)
	select {
	case s.gens <- ps:
	default:
	}
	return nil
}

func (s *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (s *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		r := rec{Key: m.Key, Value: m.Value, Timestamp: m.Timestamp, Partition: m.Partition, Offset: m.Offset}
		for _, h := range m.Headers {
			r.Headers = append(r.Headers, hdr{Key: string(h.Key), Value: h.Value})
		}
		s.mu.Lock()
		*s.out = append(*s.out, r)
		s.mu.Unlock()
		sess.MarkMessage(m, "")
	}
	return nil
}

// TestGroupSarama: two sarama group members split a topic, consume every
// record exactly once, and the offsets they commit are the end offsets.
func TestGroupSarama(t *testing.T) {
	ctx := testContext(t)
	addr := startGroupBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("sarama", "group")
	group := topic + "-g"
	groupSetup(t, ctx, addr, topic, 4, 0, 0)

	cfg := saramaConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = time.Second
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cfg.Consumer.Return.Errors = true

	var mu sync.Mutex
	var consumed []rec
	type member struct {
		g          sarama.ConsumerGroup
		h          *saramaHandler
		done, errs chan struct{}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var members []*member
	for _, name := range []string{"s1", "s2"} {
		g, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
		if err != nil {
			t.Fatalf("NewConsumerGroup: %v", err)
		}
		m := &member{g: g, done: make(chan struct{}), errs: make(chan struct{}),
			h: &saramaHandler{name: name, mu: &mu, out: &consumed, gens: make(chan []int32, 16)}}
		members = append(members, m)
		go func() {
			defer close(m.done)
			for runCtx.Err() == nil {
				if err := g.Consume(runCtx, []string{topic}, m.h); err != nil && runCtx.Err() == nil {
					t.Errorf("member %s: Consume: %v", name, err)
					return
				}
			}
		}()
		go func() {
			defer close(m.errs)
			for err := range g.Errors() {
				t.Logf("member %s: %v", name, err)
			}
		}()
	}
	closeAll := func() {
		stop()
		for _, m := range members {
			<-m.done
			if err := m.g.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			<-m.errs // Close ends the Errors channel
		}
	}
	defer func() {
		if runCtx.Err() == nil {
			closeAll()
		}
	}()

	// Wait for a generation in which both members hold two partitions.
	latest := map[int][]int32{}
	for len(latest[0]) != 2 || len(latest[1]) != 2 {
		select {
		case ps := <-members[0].h.gens:
			latest[0] = ps
		case ps := <-members[1].h.gens:
			latest[1] = ps
		case <-ctx.Done():
			t.Fatalf("the two sarama members never split the 4 partitions: %v", latest)
		}
	}
	if all := slices.Sorted(slices.Values(append(slices.Clone(latest[0]), latest[1]...))); !slices.Equal(all, []int32{0, 1, 2, 3}) {
		t.Fatalf("sarama members hold %v and %v, want 0..3 split between them", latest[0], latest[1])
	}

	produced := franzProduce(t, ctx, newKgo(t, addr), topic, genRecords(9003, 400), true)
	for {
		mu.Lock()
		n := len(consumed)
		mu.Unlock()
		if n >= len(produced) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("sarama group consumed %d of %d records", n, len(produced))
		case <-time.After(20 * time.Millisecond):
		}
	}
	ends := franzEnds(t, ctx, adm, topic)
	// Autocommit runs every 100 ms; Close commits whatever is left.
	waitCommitted(t, ctx, adm, group, topic, ends)
	closeAll()
	if got := committedOffsets(t, ctx, adm, group, topic); !maps.Equal(got, ends) {
		t.Errorf("committed after close %v, want the end offsets %v", got, ends)
	}
	if d := describeGroup(t, ctx, adm, group); d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("after both closed: state %q with %d members, want Empty with 0", d.State, len(d.Members))
	}
	mu.Lock()
	defer mu.Unlock()
	checkConsumed(t, 4, produced, consumed, ends, checkOpts{})
}

// TestGroupConfluent: a librdkafka consumer subscribes with a group.id,
// reads the topic to its end and commits; the committed offsets are the
// end offsets, both as librdkafka and as kadm read them.
func TestGroupConfluent(t *testing.T) {
	ctx := testContext(t)
	addr := startGroupBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("confluent", "group")
	group := topic + "-g"
	produced := groupSetup(t, ctx, addr, topic, 3, 9004, 300)
	ends := franzEnds(t, ctx, adm, topic)

	logs := newRdLogs(t)
	c, err := kafka.NewConsumer(logs.config(addr, kafka.ConfigMap{
		"group.id":              group,
		"enable.auto.commit":    false,
		"auto.offset.reset":     "earliest",
		"fetch.wait.max.ms":     100,
		"session.timeout.ms":    6000,
		"heartbeat.interval.ms": 1000,
	}))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	var consumed []rec
	for len(consumed) < len(produced) {
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before timeout", len(consumed), len(produced))
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Fatalf("consume: %v", ev.TopicPartition.Error)
			}
			r := rec{Key: ev.Key, Value: ev.Value, Timestamp: ev.Timestamp,
				Partition: ev.TopicPartition.Partition, Offset: int64(ev.TopicPartition.Offset)}
			for _, h := range ev.Headers {
				r.Headers = append(r.Headers, hdr{Key: h.Key, Value: h.Value})
			}
			consumed = append(consumed, r)
		case kafka.Error:
			if ev.IsFatal() {
				t.Fatalf("consumer: %v", ev)
			}
		}
	}
	checkConsumed(t, 3, produced, consumed, ends, checkOpts{})

	tps, err := c.Commit()
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	got := map[int32]int64{}
	for _, tp := range tps {
		got[tp.Partition] = int64(tp.Offset)
	}
	if !maps.Equal(got, ends) {
		t.Errorf("Commit committed %v, want the end offsets %v", got, ends)
	}
	var query []kafka.TopicPartition
	for p := range int32(3) {
		query = append(query, kafka.TopicPartition{Topic: &topic, Partition: p})
	}
	committed, err := c.Committed(query, 10000)
	if err != nil {
		t.Fatalf("Committed: %v", err)
	}
	got = map[int32]int64{}
	for _, tp := range committed {
		got[tp.Partition] = int64(tp.Offset)
	}
	if !maps.Equal(got, ends) {
		t.Errorf("librdkafka reads committed %v, want %v", got, ends)
	}
	if got := committedOffsets(t, ctx, adm, group, topic); !maps.Equal(got, ends) {
		t.Errorf("kadm reads committed %v, want %v", got, ends)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	if d := describeGroup(t, ctx, adm, group); d.State != "Empty" || d.ProtocolType != "consumer" {
		t.Errorf("after close: state %q protocol type %q, want Empty consumer", d.State, d.ProtocolType)
	}
}

// TestGroupOffsetsSurviveRestart: committed offsets are durable: after a
// broker restart they read back unchanged and a consumer of the group
// resumes exactly after them.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	ctx := testContext(t)
	br := restartableBroker(t)
	topic := topicName("franz", "restart")
	group := topic + "-g"
	produced := groupSetup(t, ctx, br.Addr(), topic, 3, 9005, 150)

	first := newKgo(t, br.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond))
	for n := 0; n < 100; {
		fs := first.PollRecords(ctx, 100-n)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 100 records before timeout", n)
		}
		recs := fs.Records()
		if err := first.CommitRecords(ctx, recs...); err != nil {
			t.Fatalf("CommitRecords: %v", err)
		}
		n += len(recs)
	}
	first.Close()
	before := committedOffsets(t, ctx, newKadm(t, br.Addr()), group, topic)
	var total int64
	for _, o := range before {
		total += o
	}
	if total != 100 {
		t.Fatalf("committed %v (sum %d), want 100 records' worth", before, total)
	}

	br.Restart(t)
	adm := newKadm(t, br.Addr())
	if got := committedOffsets(t, ctx, adm, group, topic); !maps.Equal(got, before) {
		t.Errorf("committed after restart %v, want %v", got, before)
	}
	// A new member resumes after the commits: it reads only the rest.
	second := newKgo(t, br.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	var rest []*kgo.Record
	for len(rest) < 50 {
		fs := second.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after restart consumed %d of 50 remaining records", len(rest))
		}
		rest = append(rest, fs.Records()...)
	}
	for _, r := range rest {
		if r.Offset < before[r.Partition] {
			t.Errorf("after restart read %s[%d]@%d again; committed was %d", r.Topic, r.Partition, r.Offset, before[r.Partition])
		}
	}
	if len(rest) != len(produced)-100 {
		t.Errorf("after restart read %d records, want %d", len(rest), len(produced)-100)
	}
}

// TestGroupBadRequests: the coordinator's error codes for requests a
// confused or fenced client sends, checked with raw kmsg requests that kgo
// routes to the group's coordinator.
func TestGroupBadRequests(t *testing.T) {
	ctx := testContext(t)
	addr := startGroupBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "badreq")
	group := topic + "-g"
	groupSetup(t, ctx, addr, topic, 1, 9006, 20)

	h := newGroupHarness(t, addr, group, topic)
	m := h.start("m")
	h.waitOwnership(ctx, 1, map[string]int{"m": 1})
	h.waitConsumed(ctx, 20)
	waitCommitted(t, ctx, adm, group, topic, map[int32]int64{0: 20})
	memberID, gen := m.cl.GroupMetadata()
	if memberID == "" || gen < 1 {
		t.Fatalf("member id %q generation %d, want a joined member", memberID, gen)
	}
	callbacks := h.callbacks("m")

	// OffsetCommit v10 names topics by id; pin v9 so the request names
	// the unknown topic as Kafka clients before 4.2 do.
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	raw := newKgo(t, addr, kgo.MaxVersions(vs))

	commit := func(memberID string, gen int32, topic string, offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, memberID, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, raw)
		if err != nil {
			t.Fatalf("OffsetCommit: %v", err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetCommit response %+v, want one topic with one partition", resp)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	checkCode := func(what string, got int16, want *kerr.Error) {
		t.Helper()
		if got != want.Code {
			t.Errorf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
		}
	}
	checkCode("OffsetCommit to an unknown topic", commit(memberID, gen, "no-such-topic-"+topic, 5), kerr.UnknownTopicOrPartition)
	checkCode("OffsetCommit with a stale generation", commit(memberID, gen+1, topic, 3), kerr.IllegalGeneration)
	checkCode("OffsetCommit from an unknown member", commit("not-a-member", gen, topic, 3), kerr.UnknownMemberID)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = group, "not-a-member", gen
	resp, err := hb.RequestWith(ctx, raw)
	if err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	checkCode("Heartbeat from an unknown member", resp.ErrorCode, kerr.UnknownMemberID)

	// None of it changed the group: the real member keeps its commit and
	// its assignment.
	if got := committedOffsets(t, ctx, adm, group, topic); !maps.Equal(got, map[int32]int64{0: 20}) {
		t.Errorf("committed after bad requests %v, want map[0:20]", got)
	}
	if got, g2 := m.cl.GroupMetadata(); got != memberID || g2 != gen {
		t.Errorf("member is now %q gen %d, was %q gen %d", got, g2, memberID, gen)
	}
	if n := h.callbacks("m"); n != callbacks {
		t.Errorf("the bad requests caused %d rebalance callbacks", n-callbacks)
	}
}
