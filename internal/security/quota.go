package security

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/metadata"
)

// QuotaType is what a client quota limits.
type QuotaType int

// The byte-rate quotas the broker enforces, keyed as Kafka's quota
// configs name them.
const (
	ProduceQuota QuotaType = iota // producer_byte_rate: bytes produced per second
	FetchQuota                    // consumer_byte_rate: bytes fetched per second
	numQuotaTypes
)

var quotaKeys = [numQuotaTypes]string{ProduceQuota: "producer_byte_rate", FetchQuota: "consumer_byte_rate"}

// QuotaManager is Kafka's ClientQuotaManager for the byte-rate quotas:
// it finds each client's quota among the client quota entities of the
// metadata image (Kafka's precedence, most specific first), measures the
// client's rate over a sliding window of samples, and says how long to
// throttle a client that went over.
//
// As in Kafka's default quota callback, the rate is measured per
// (user, client-id) pair where the quota that applies names both, per
// user where it names the user alone, and per client id otherwise, so
// clients sharing a quota entity share its rate.
type QuotaManager struct {
	window  time.Duration // quota.window.size.seconds
	samples int           // quota.window.num

	quotas atomic.Pointer[map[metadata.QuotaEntity]map[string]float64]

	mu      sync.Mutex
	sensors map[sensorKey]*rate
	swept   time.Time
}

// sensorKey names one measured rate: a quota type and the metric tags
// (user, client id) Kafka would give its sensor.
type sensorKey struct {
	typ            QuotaType
	user, clientID string
}

// sensorIdle is how long an unused rate is kept (Kafka expires quota
// sensors after an hour of inactivity).
const sensorIdle = time.Hour

// NewQuotaManager returns a manager measuring over samples windows of
// window each, with no quotas until SetQuotas.
func NewQuotaManager(window time.Duration, samples int) *QuotaManager {
	m := &QuotaManager{window: window, samples: max(samples, 2), sensors: map[sensorKey]*rate{}}
	empty := map[metadata.QuotaEntity]map[string]float64{}
	m.quotas.Store(&empty)
	return m
}

// SetQuotas replaces the quotas, as a new metadata image has them; the
// map is not modified afterwards.
func (m *QuotaManager) SetQuotas(q map[metadata.QuotaEntity]map[string]float64) {
	m.quotas.Store(&q)
}

// Record adds value (bytes) to the client's rate for typ and returns how
// long to throttle it: zero within its quota or without one. The
// throttle is the time the rate needs, with nothing more recorded, to
// fall back to the quota (Kafka's QuotaUtils.throttleTime), at most the
// whole measuring window.
func (m *QuotaManager) Record(typ QuotaType, user, clientID string, value float64, now time.Time) time.Duration {
	q := *m.quotas.Load()
	if len(q) == 0 {
		return 0
	}
	key, limit, ok := m.find(q, typ, user, clientID)
	if !ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(now)
	r := m.sensors[key]
	if r == nil {
		r = &rate{}
		m.sensors[key] = r
	}
	r.record(value, now, m.window, m.samples)
	observed, span := r.measure(now, m.window, m.samples)
	if observed <= limit {
		return 0
	}
	throttle := time.Duration((observed - limit) / limit * float64(span))
	return min(throttle, time.Duration(m.samples)*m.window)
}

// find is Kafka's DefaultQuotaCallback: the quota of the most specific
// entity that matches, and the tags of the rate that counts against it.
func (m *QuotaManager) find(q map[metadata.QuotaEntity]map[string]float64, typ QuotaType, user, clientID string) (sensorKey, float64, bool) {
	name := func(n string) metadata.QuotaName { return metadata.QuotaName{Present: true, Name: n} }
	def := metadata.QuotaName{Present: true, Default: true}
	both := sensorKey{typ, user, clientID}
	userOnly := sensorKey{typ, user, ""}
	clientOnly := sensorKey{typ, "", clientID}
	for _, c := range []struct {
		e   metadata.QuotaEntity
		key sensorKey
	}{
		{metadata.QuotaEntity{User: name(user), ClientID: name(clientID)}, both},
		{metadata.QuotaEntity{User: name(user), ClientID: def}, both},
		{metadata.QuotaEntity{User: name(user)}, userOnly},
		{metadata.QuotaEntity{User: def, ClientID: name(clientID)}, both},
		{metadata.QuotaEntity{User: def, ClientID: def}, both},
		{metadata.QuotaEntity{User: def}, userOnly},
		{metadata.QuotaEntity{ClientID: name(clientID)}, clientOnly},
		{metadata.QuotaEntity{ClientID: def}, clientOnly},
	} {
		if v, ok := q[c.e][quotaKeys[typ]]; ok {
			return c.key, v, true
		}
	}
	return sensorKey{}, 0, false
}

// sweepLocked drops rates unused for sensorIdle, at most once a minute.
func (m *QuotaManager) sweepLocked(now time.Time) {
	if now.Sub(m.swept) < time.Minute {
		return
	}
	m.swept = now
	for k, r := range m.sensors {
		if now.Sub(r.last) > sensorIdle {
			delete(m.sensors, k)
		}
	}
}

// rate is Kafka's Rate over a SampledStat: samples windows of window
// each; a sample older than all of them together no longer counts.
type rate struct {
	starts []time.Time
	values []float64
	cur    int
	last   time.Time
}

func (r *rate) record(value float64, now time.Time, window time.Duration, samples int) {
	r.last = now
	if len(r.starts) == 0 {
		r.starts, r.values = make([]time.Time, samples), make([]float64, samples)
		r.starts[0] = now
	} else if now.Sub(r.starts[r.cur]) >= window {
		r.cur = (r.cur + 1) % samples
		r.starts[r.cur], r.values[r.cur] = now, 0
	}
	r.values[r.cur] += value
}

// measure returns the rate per second and the span it was measured over:
// from the oldest sample that still counts to now, plus the whole windows
// it lacks of samples-1, so a client's first burst is not measured over a
// few milliseconds (Kafka's Rate.windowSize).
func (r *rate) measure(now time.Time, window time.Duration, samples int) (float64, time.Duration) {
	expire := time.Duration(samples) * window
	var total float64
	oldest := now
	for i, start := range r.starts {
		if start.IsZero() || now.Sub(start) >= expire {
			continue
		}
		total += r.values[i]
		if start.Before(oldest) {
			oldest = start
		}
	}
	span := now.Sub(oldest)
	if full := int(span / window); full < samples-1 {
		span += time.Duration(samples-1-full) * window
	}
	return total / span.Seconds(), span
}
