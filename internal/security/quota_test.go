package security

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/metadata"
)

func name(n string) metadata.QuotaName { return metadata.QuotaName{Present: true, Name: n} }

var def = metadata.QuotaName{Present: true, Default: true}

// TestQuotaPrecedence: the quota that applies is the most specific entity
// that matches, in Kafka's order (KIP-55): user+client, user+default
// client, user, default user+client, default user+default client,
// default user, client, default client.
func TestQuotaPrecedence(t *testing.T) {
	order := []metadata.QuotaEntity{
		{User: name("alice"), ClientID: name("app")},
		{User: name("alice"), ClientID: def},
		{User: name("alice")},
		{User: def, ClientID: name("app")},
		{User: def, ClientID: def},
		{User: def},
		{ClientID: name("app")},
		{ClientID: def},
	}
	// With entities i.. present, entity i decides: its quota is i+1 bytes
	// per second, and a first record of 1000 bytes over 10 s (11 samples
	// of 1 s) is 100 B/s, throttled by (100-q)/q * 10 s.
	for i := range order {
		q := map[metadata.QuotaEntity]map[string]float64{}
		for j := i; j < len(order); j++ {
			q[order[j]] = map[string]float64{"producer_byte_rate": float64(j + 1)}
		}
		m := NewQuotaManager(time.Second, 11)
		m.SetQuotas(q)
		limit := float64(i + 1)
		got := m.Record(ProduceQuota, "alice", "app", 1000, time.Unix(100, 0))
		want := time.Duration((100 - limit) / limit * float64(10*time.Second))
		want = min(want, 11*time.Second)
		if got != want {
			t.Errorf("entities from %+v on: throttle %v, want %v (quota %v B/s)", order[i], got, want, limit)
		}
	}
	// Another user's client "app" falls to <default> user entities, not
	// alice's.
	m := NewQuotaManager(time.Second, 11)
	m.SetQuotas(map[metadata.QuotaEntity]map[string]float64{
		{User: name("alice")}: {"producer_byte_rate": 1},
		{ClientID: def}:       {"producer_byte_rate": 1e9},
	})
	if got := m.Record(ProduceQuota, "bob", "app", 1000, time.Unix(100, 0)); got != 0 {
		t.Errorf("bob under a 1e9 B/s default client quota: throttled %v", got)
	}
	// No quota of the type: never throttled.
	if got := m.Record(FetchQuota, "alice", "app", 1e9, time.Unix(100, 0)); got != 0 {
		t.Errorf("no consumer_byte_rate anywhere: throttled %v", got)
	}
}

// TestQuotaRate: Kafka's rate over samples — a steady client at its quota
// is never throttled; one at twice its quota is throttled by the time
// that brings the measured rate back to the quota; rates are shared by
// the clients of one entity and separate across entities.
func TestQuotaRate(t *testing.T) {
	m := NewQuotaManager(time.Second, 11)
	m.SetQuotas(map[metadata.QuotaEntity]map[string]float64{
		{ClientID: name("steady")}: {"producer_byte_rate": 1000},
		{ClientID: name("fast")}:   {"producer_byte_rate": 1000},
		{User: name("shared")}:     {"consumer_byte_rate": 1000},
	})
	start := time.Unix(1000, 0)
	for i := range 100 {
		now := start.Add(time.Duration(i) * 100 * time.Millisecond)
		if d := m.Record(ProduceQuota, "", "steady", 100, now); d != 0 {
			t.Fatalf("steady 1000 B/s against a 1000 B/s quota throttled %v at %v", d, now.Sub(start))
		}
	}
	// 2000 B/s for 20 s: the rate over the 11 s window is 2000 B/s, and
	// the throttle is (2000-1000)/1000 * the window measured.
	var last time.Duration
	for i := range 200 {
		now := start.Add(time.Duration(i) * 100 * time.Millisecond)
		last = m.Record(ProduceQuota, "", "fast", 200, now)
	}
	if last < 9*time.Second || last > 11*time.Second {
		t.Errorf("2000 B/s against 1000 B/s for 20 s: throttle %v, want about the 10-11 s window", last)
	}
	// Two client ids of user "shared" share its rate: 600 + 600 B/s over
	// a 1000 B/s quota is throttled; one of them alone would not be.
	var d time.Duration
	for i := range 200 {
		now := start.Add(time.Duration(i) * 100 * time.Millisecond)
		d = max(d, m.Record(FetchQuota, "shared", "c1", 60, now))
		d = max(d, m.Record(FetchQuota, "shared", "c2", 60, now))
	}
	if d == 0 {
		t.Error("two clients of one user quota, 1200 B/s together over 1000 B/s: never throttled")
	}
}

// TestQuotaFirstBurst: a first record is measured over samples-1 whole
// windows (Kafka's Rate.windowSize), not over the moment it took.
func TestQuotaFirstBurst(t *testing.T) {
	m := NewQuotaManager(time.Second, 11)
	m.SetQuotas(map[metadata.QuotaEntity]map[string]float64{{ClientID: def}: {"producer_byte_rate": 1000}})
	if d := m.Record(ProduceQuota, "", "x", 10000, time.Unix(5, 0)); d != 0 {
		t.Errorf("10000 B at once against 1000 B/s over a 10 s window: throttled %v, want none", d)
	}
	if d := m.Record(ProduceQuota, "", "x", 1000, time.Unix(5, 0)); d != time.Second {
		t.Errorf("11000 B at once: throttle %v, want (1100-1000)/1000 * 10 s = 1 s", d)
	}
}

// TestRequestQuota: request_percentage measures handling time as percent
// of one thread (Kafka's ClientRequestQuotaManager): a client busy 20%
// of the time against a 10% quota is throttled, at most one sample
// window; one busy 5% of the time never is.
func TestRequestQuota(t *testing.T) {
	m := NewQuotaManager(time.Second, 11)
	if m.Enabled(RequestQuota) {
		t.Fatal("request quota enabled before any is set")
	}
	m.SetQuotas(map[metadata.QuotaEntity]map[string]float64{{User: def}: {"request_percentage": 10}})
	if !m.Enabled(RequestQuota) || m.Enabled(MutationQuota) {
		t.Fatal("Enabled does not follow the quotas set")
	}
	if got := RequestTime(50 * time.Millisecond); got != 5 {
		t.Fatalf("RequestTime(50ms) = %v, want 5 percent-seconds", got)
	}
	start := time.Unix(1000, 0)
	var busy, idle time.Duration
	for i := range 300 { // 30 s, a request every 100 ms
		now := start.Add(time.Duration(i) * 100 * time.Millisecond)
		busy = max(busy, m.Record(RequestQuota, "alice", "busy", RequestTime(20*time.Millisecond), now))
		idle = max(idle, m.Record(RequestQuota, "bob", "idle", RequestTime(5*time.Millisecond), now))
	}
	if idle != 0 {
		t.Errorf("5%% of a thread against a 10%% quota: throttled %v", idle)
	}
	// (20-10)/10 × a 10-11 s window would be 10 s: bounded by 1 s.
	if busy != time.Second {
		t.Errorf("20%% of a thread against a 10%% quota: throttle %v, want the 1 s bound", busy)
	}
}

// TestMutationQuota: controller_mutation_rate is a token bucket (KIP-599)
// holding quota × samples × window tokens. A strict request may overdraw
// it once; the next is refused with the time the bucket needs to be back
// at zero, which passes as time does. A permissive request is never
// refused, only throttled.
func TestMutationQuota(t *testing.T) {
	m := NewQuotaManager(time.Second, 2)
	if q := m.Mutations("alice", "admin", true); q != nil || !q.Record(1000, time.Now()) || q.Throttle(time.Now()) != 0 {
		t.Fatal("no quota set: want an unbounded (nil) quota that accepts everything")
	}
	m.SetQuotas(map[metadata.QuotaEntity]map[string]float64{{ClientID: name("admin")}: {"controller_mutation_rate": 5}})
	now := time.Unix(100, 0)
	// Burst: 5/s × 2 windows of 1 s = 10 tokens.
	q := m.Mutations("alice", "admin", true)
	if !q.Record(8, now) || !q.Record(8, now) { // 10 → 2 → -6: the second overdraws
		t.Fatal("strict: refused while tokens were left")
	}
	if q.Throttle(now) != 0 {
		t.Fatalf("strict, accepted: throttle %v, want 0", q.Throttle(now))
	}
	if q.Record(1, now) {
		t.Fatal("strict: accepted with the bucket at -6")
	}
	if got := q.Throttle(now); got != 1200*time.Millisecond { // 6 tokens at 5/s
		t.Fatalf("strict, refused at -6 tokens: throttle %v, want 1.2 s", got)
	}
	if got := q.Throttle(now.Add(time.Second)); got != 200*time.Millisecond {
		t.Fatalf("a second later: throttle %v, want 200ms", got)
	}
	// 1.2 s later the bucket is back at zero: a new request is accepted.
	later := now.Add(1200 * time.Millisecond)
	if q2 := m.Mutations("bob", "admin", true); !q2.Record(3, later) {
		t.Fatal("strict: refused once the bucket refilled to 0 (the client id's bucket is shared across users)")
	}
	// Permissive: accepted at -3, throttled 3/5 s... then 8 more: -11.
	p := m.Mutations("alice", "admin", false)
	if !p.Record(8, later) {
		t.Fatal("permissive: refused")
	}
	if got := p.Throttle(later); got != 2200*time.Millisecond {
		t.Fatalf("permissive at -11 tokens: throttle %v, want 2.2 s", got)
	}
	// Another client id has no quota.
	if m.Mutations("alice", "other", true) != nil {
		t.Fatal("client id without a quota: got a bounded quota")
	}
}

// TestConnectionQuota: connection_creation_rate of an ip entity, else of
// the default ip entity, limits new connections per address (KIP-612); a
// throttled connection is not counted, so a client retrying is held to
// the rate rather than locked out; other addresses are not affected.
func TestConnectionQuota(t *testing.T) {
	m := NewQuotaManager(time.Second, 2)
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	m.SetQuotas(map[metadata.QuotaEntity]map[string]float64{
		{IP: name("10.0.0.1")}: {"connection_creation_rate": 5},
		{IP: def}:              {"connection_creation_rate": 1000},
		{ClientID: def}:        {"producer_byte_rate": 1}, // not an ip quota
	})
	start := time.Unix(500, 0)
	accepted := 0
	// A connection attempt every 10 ms for 10 s.
	for i := range 1000 {
		now := start.Add(time.Duration(i) * 10 * time.Millisecond)
		if d := m.RecordConnection(a, now); d == 0 {
			accepted++
		} else if d > time.Second {
			t.Fatalf("throttle %v above the 1 s window", d)
		}
		if d := m.RecordConnection(b, now); d != 0 {
			t.Fatalf("10.0.0.2 at 100/s under the 1000/s default: throttled %v", d)
		}
	}
	// 5/s over 10 s, plus the first window's allowance.
	if accepted < 45 || accepted > 60 {
		t.Errorf("10.0.0.1 at 100/s against 5/s for 10 s: %d accepted, want about 50", accepted)
	}
	// An IPv4-mapped IPv6 address is the same address: 20 attempts at
	// once cannot all pass a 5/s quota.
	mapped := netip.MustParseAddr("::ffff:10.0.0.1")
	throttled := false
	for range 20 {
		throttled = throttled || m.RecordConnection(mapped, start.Add(10*time.Second)) > 0
	}
	if !throttled {
		t.Error("::ffff:10.0.0.1 escaped 10.0.0.1's quota")
	}
	m.SetQuotas(nil)
	if d := m.RecordConnection(a, start.Add(10*time.Second)); d != 0 {
		t.Errorf("quotas removed: throttled %v", d)
	}
}

// TestQuotaConcurrent records from many goroutines (run with -race): each
// client's sensor has its own lock, the set of quotas changes under them.
func TestQuotaConcurrent(t *testing.T) {
	m := NewQuotaManager(time.Second, 11)
	q := map[metadata.QuotaEntity]map[string]float64{{ClientID: def}: {"producer_byte_rate": 1e6, "request_percentage": 50}}
	m.SetQuotas(q)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				now := time.Unix(0, int64(i)*int64(time.Millisecond))
				m.Record(ProduceQuota, "", fmt.Sprint("c", g%3), 100, now)
				m.Record(RequestQuota, "", fmt.Sprint("c", g%3), 0.01, now)
				if i%500 == 0 {
					m.SetQuotas(q)
				}
			}
		})
	}
	wg.Wait()
}
