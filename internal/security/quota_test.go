package security

import (
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
