package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Helpers for the consumer-group tests: a dialer that can cut a member off
// the network, and a harness that runs franz-go group members while it
// records, from the members' own rebalance callbacks, who owns which
// partition and how often each record was consumed.

// cuttableDialer dials real TCP connections and can sever all of them at
// once and refuse new ones. To the broker the member then looks like a
// crashed process or a pulled cable: no LeaveGroup, only silence, so it
// stays in the group until its session times out.
type cuttableDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cuttableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		c.Close()
		return nil, errors.New("network cut by the test")
	}
	d.conns = append(d.conns, c)
	return c, nil
}

// sever closes every connection dialed so far and refuses new ones.
func (d *cuttableDialer) sever() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// groupHarness runs members of one group on one topic and keeps the record
// of what they did. Ownership comes from OnPartitionsAssigned/Revoked/Lost,
// which is what an application that keeps per-partition state relies on:
// a partition assigned to a member while another still holds it is a
// violation of the group protocol.
type groupHarness struct {
	t                  *testing.T
	addr, group, topic string
	opts               []kgo.Opt // extra options for every member

	mu struct {
		sync.Mutex
		owner      map[int32]string // partition -> member holding it
		dead       map[string]bool  // members cut off: their callbacks no longer count
		violations []string
		events     []string       // callback log, printed on failure
		callbacks  map[string]int // callbacks seen per member
		revoked    map[string][]int32
		consumed   map[int]int // record index (idxHeader) -> times consumed
		records    []rec       // every record consumed, in order per partition
	}
}

func newGroupHarness(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *groupHarness {
	h := &groupHarness{t: t, addr: addr, group: group, topic: topic, opts: opts}
	h.mu.owner = map[int32]string{}
	h.mu.dead = map[string]bool{}
	h.mu.callbacks = map[string]int{}
	h.mu.revoked = map[string][]int32{}
	h.mu.consumed = map[int]int{}
	t.Cleanup(func() {
		if t.Failed() {
			h.mu.Lock()
			defer h.mu.Unlock()
			t.Logf("rebalance callbacks:\n  %s", strings.Join(h.mu.events, "\n  "))
		}
	})
	return h
}

func (h *groupHarness) eventLocked(format string, args ...any) {
	h.mu.events = append(h.mu.events, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

func (h *groupHarness) assigned(name string, ps []int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.dead[name] {
		return
	}
	h.mu.callbacks[name]++
	h.eventLocked("%s assigned %v", name, ps)
	for _, p := range ps {
		if o, ok := h.mu.owner[p]; ok && o != name {
			h.mu.violations = append(h.mu.violations,
				fmt.Sprintf("partition %d assigned to %s while %s still holds it", p, name, o))
		}
		h.mu.owner[p] = name
	}
}

func (h *groupHarness) revoked(name, why string, ps []int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.dead[name] {
		return
	}
	h.mu.callbacks[name]++
	h.eventLocked("%s %s %v", name, why, ps)
	h.mu.revoked[name] = append(h.mu.revoked[name], ps...)
	for _, p := range ps {
		if h.mu.owner[p] == name {
			delete(h.mu.owner, p)
		}
	}
}

// ownership returns each member's partitions, sorted.
func (h *groupHarness) ownership() map[string][]int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]int32{}
	for p, m := range h.mu.owner {
		out[m] = append(out[m], p)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

func (h *groupHarness) callbacks(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.callbacks[name]
}

func (h *groupHarness) violations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.mu.violations)
}

// waitOwnership waits until the members hold exactly the given number of
// partitions each (members not named hold none) and every partition of the
// topic is held, i.e. the group has settled.
func (h *groupHarness) waitOwnership(ctx context.Context, partitions int32, want map[string]int) map[string][]int32 {
	h.t.Helper()
	for {
		got := h.ownership()
		ok := true
		total := 0
		for m, ps := range got {
			total += len(ps)
			if len(ps) != want[m] {
				ok = false
			}
		}
		for m, n := range want {
			if len(got[m]) != n {
				ok = false
			}
		}
		if ok && total == int(partitions) {
			return got
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("group %s never settled: ownership %v, want partition counts %v", h.group, got, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// consumedOnce waits until every record index in [0,n) was consumed at
// least once and returns how many were consumed more than once.
func (h *groupHarness) waitConsumed(ctx context.Context, n int) (dups int) {
	h.t.Helper()
	for {
		h.mu.Lock()
		missing, dups := 0, 0
		for i := range n {
			switch c := h.mu.consumed[i]; {
			case c == 0:
				missing++
			case c > 1:
				dups++
			}
		}
		h.mu.Unlock()
		if missing == 0 {
			return dups
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("group %s: %d of %d records never consumed", h.group, missing, n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (h *groupHarness) record(name string, krs []*kgo.Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, kr := range krs {
		r := fromKgo(kr)
		h.mu.records = append(h.mu.records, r)
		if len(r.Headers) == 0 || r.Headers[0].Key != idxHeader {
			h.mu.violations = append(h.mu.violations, fmt.Sprintf("%s consumed %v without %s header", name, r, idxHeader))
			continue
		}
		i, _ := strconv.Atoi(string(r.Headers[0].Value))
		h.mu.consumed[i]++
	}
}

// groupMember is one running franz-go consumer in a groupHarness. Its poll
// loop processes a poll, commits it synchronously and only then allows a
// rebalance (BlockRebalanceOnPoll), so that a graceful rebalance never
// hands a partition over with records read but not committed.
type groupMember struct {
	name   string
	cl     *kgo.Client
	dialer *cuttableDialer
	stop   context.CancelFunc // ends polling
	kill   context.CancelFunc // also abandons an in-flight commit
	done   chan struct{}
	closed sync.Once
}

func (h *groupHarness) start(name string, extra ...kgo.Opt) *groupMember {
	h.t.Helper()
	m := &groupMember{name: name, dialer: &cuttableDialer{}, done: make(chan struct{})}
	partitions := func(a map[string][]int32) []int32 { return a[h.topic] }
	opts := []kgo.Opt{
		kgo.SeedBrokers(h.addr),
		kgo.ClientID("e2e-" + name),
		kgo.Dialer(m.dialer.dial),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.ConsumerGroup(h.group),
		kgo.ConsumeTopics(h.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		// Kafka's group.min.session.timeout.ms default is 6 s; a 1 s
		// heartbeat notices rebalances quickly.
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(time.Second),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			h.assigned(name, partitions(a))
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			h.revoked(name, "revoked", partitions(r))
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			h.revoked(name, "lost", partitions(l))
		}),
	}
	opts = append(append(opts, h.opts...), extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		h.t.Fatalf("member %s: %v", name, err)
	}
	m.cl = cl
	pollCtx, stop := context.WithCancel(context.Background())
	commitCtx, kill := context.WithCancel(context.Background())
	m.stop, m.kill = stop, kill
	go h.poll(m, pollCtx, commitCtx)
	h.t.Cleanup(func() { m.close(h) })
	return m
}

func (h *groupHarness) poll(m *groupMember, pollCtx, commitCtx context.Context) {
	defer close(m.done)
	for pollCtx.Err() == nil {
		fs := m.cl.PollFetches(pollCtx)
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && pollCtx.Err() == nil {
				h.t.Errorf("member %s: fetch %s[%d]: %v", m.name, t, p, err)
			}
		})
		if recs := fs.Records(); len(recs) > 0 {
			h.record(m.name, recs)
			ctx, cancel := context.WithTimeout(commitCtx, 10*time.Second)
			err := m.cl.CommitRecords(ctx, recs...)
			cancel()
			if err != nil && commitCtx.Err() == nil {
				h.t.Errorf("member %s: commit: %v", m.name, err)
			}
		}
		m.cl.AllowRebalance()
	}
}

// leave stops the member the way an application shuts down: finish and
// commit the current poll, then Close, which sends LeaveGroup.
func (m *groupMember) leave(h *groupHarness) {
	m.stop()
	<-m.done
	m.closed.Do(m.cl.CloseAllowingRebalance)
}

// crash cuts the member off the network without a LeaveGroup; the broker
// only learns it is gone when its session times out. From now on its
// callbacks are ignored: the process is considered dead.
func (m *groupMember) crash(h *groupHarness) {
	h.mu.Lock()
	h.mu.dead[m.name] = true
	for p, o := range h.mu.owner {
		if o == m.name {
			delete(h.mu.owner, p)
		}
	}
	h.eventLocked("%s crashed", m.name)
	h.mu.Unlock()
	m.dialer.sever()
	m.kill()
	m.stop()
	<-m.done
	// A canceled context makes LeaveGroupContext give up at once, so the
	// later Close sends nothing either.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.cl.LeaveGroupContext(ctx)
}

func (m *groupMember) close(h *groupHarness) {
	m.kill()
	m.stop()
	<-m.done
	m.closed.Do(m.cl.CloseAllowingRebalance)
}
