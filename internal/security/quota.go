package security

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/metadata"
)

// QuotaType is what a client quota limits.
type QuotaType int

// The client quotas, keyed as Kafka's quota configs name them.
const (
	ProduceQuota  QuotaType = iota // producer_byte_rate: bytes produced per second
	FetchQuota                     // consumer_byte_rate: bytes fetched per second
	RequestQuota                   // request_percentage: request handling time, in percent of one thread
	MutationQuota                  // controller_mutation_rate: partitions created or deleted per second (KIP-599)
	numQuotaTypes
)

var quotaKeys = [numQuotaTypes]string{
	ProduceQuota:  "producer_byte_rate",
	FetchQuota:    "consumer_byte_rate",
	RequestQuota:  "request_percentage",
	MutationQuota: "controller_mutation_rate",
}

// connectionRateKey is the quota of ip entities (KIP-612).
const connectionRateKey = "connection_creation_rate"

// QuotaManager is Kafka's client quota managers in one: ClientQuotaManager
// for the byte rates, ClientRequestQuotaManager for request_percentage,
// ControllerMutationQuotaManager for controller_mutation_rate, and the
// per-IP part of ConnectionQuotas for connection_creation_rate. It finds
// each client's quota among the client quota entities of the metadata
// image (Kafka's precedence, most specific first), measures the client
// (a sliding window of samples; a token bucket for mutations) and says
// how long to throttle a client that went over.
//
// As in Kafka's default quota callback, a client is measured per
// (user, client-id) pair where the quota that applies names both, per
// user where it names the user alone, and per client id otherwise, so
// clients sharing a quota entity share its measure.
//
// Concurrency: the quotas are an immutable set swapped atomically; a
// quota type no entity sets costs a load and a branch. The measures
// ("sensors", as Kafka calls them) sit in a map under a read-write lock
// that only a client's first record takes for writing; each sensor has
// its own mutex, so clients never wait on each other.
type QuotaManager struct {
	window  time.Duration // quota.window.size.seconds
	samples int           // quota.window.num

	quotas atomic.Pointer[quotaSet]

	mu struct {
		sync.RWMutex
		sensors map[sensorKey]*sensor
		swept   time.Time
	}
}

// quotaSet is the quotas of one metadata image, indexed for look-ups.
type quotaSet struct {
	entities map[metadata.QuotaEntity]map[string]float64
	has      [numQuotaTypes]bool // some entity sets a quota of the type
	// ipRates are the connection_creation_rate of ip entities by address;
	// defaultIPRate that of the default ip entity, 0 when unset.
	ipRates       map[netip.Addr]float64
	defaultIPRate float64
}

// sensorKey names one measure: a quota type and the metric tags (user,
// client id; the address for connection rates) Kafka would give it.
type sensorKey struct {
	typ            QuotaType
	user, clientID string
}

// connectionSensor is the sensorKey type of per-IP connection rates.
const connectionSensor = numQuotaTypes

// sensor is one client's measure: a rate, or for mutations a token
// bucket.
type sensor struct {
	mu     sync.Mutex
	rate   rate
	bucket tokenBucket
	last   time.Time // last record, for expiry
}

// sensorIdle is how long an unused sensor is kept (Kafka expires quota
// sensors after an hour of inactivity).
const sensorIdle = time.Hour

// NewQuotaManager returns a manager measuring over samples windows of
// window each, with no quotas until SetQuotas.
func NewQuotaManager(window time.Duration, samples int) *QuotaManager {
	m := &QuotaManager{window: window, samples: max(samples, 2)}
	m.mu.sensors = map[sensorKey]*sensor{}
	m.quotas.Store(&quotaSet{})
	return m
}

// SetQuotas replaces the quotas, as a new metadata image has them; the
// map is not modified afterwards.
func (m *QuotaManager) SetQuotas(q map[metadata.QuotaEntity]map[string]float64) {
	s := &quotaSet{entities: q, ipRates: map[netip.Addr]float64{}}
	for e, kv := range q {
		for typ, key := range quotaKeys {
			if _, ok := kv[key]; ok {
				s.has[typ] = true
			}
		}
		rate, ok := kv[connectionRateKey]
		switch {
		case !ok || !e.IP.Present:
		case e.IP.Default:
			s.defaultIPRate = rate
		default:
			// The controller accepts only addresses (Kafka would resolve a
			// host name once); one written differently (::ffff:1.2.3.4,
			// 0:0::1) still names its address.
			if a, err := netip.ParseAddr(e.IP.Name); err == nil {
				s.ipRates[a.Unmap()] = rate
			}
		}
	}
	m.quotas.Store(s)
}

// Enabled reports whether any entity has a quota of typ, so a caller can
// skip measuring what it would record.
func (m *QuotaManager) Enabled(typ QuotaType) bool { return m.quotas.Load().has[typ] }

// Record adds value to the client's rate for typ (ProduceQuota and
// FetchQuota: bytes; RequestQuota: percent-seconds, see RequestTime) and
// returns how long to throttle it: zero within its quota or without one.
// The throttle is the time the rate needs, with nothing more recorded,
// to fall back to the quota (Kafka's QuotaUtils.throttleTime); a byte
// rate's is at most the whole measuring window, a request quota's at most
// one sample window (Kafka's ClientRequestQuotaManager bound).
func (m *QuotaManager) Record(typ QuotaType, user, clientID string, value float64, now time.Time) time.Duration {
	q := m.quotas.Load()
	if !q.has[typ] {
		return 0
	}
	key, limit, ok := q.find(typ, user, clientID)
	if !ok {
		return 0
	}
	bound := time.Duration(m.samples) * m.window
	if typ == RequestQuota {
		bound = m.window
	}
	s := m.sensor(key, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = now
	s.rate.record(value, now, m.window, m.samples)
	return min(s.rate.throttle(limit, now, m.window, m.samples), bound)
}

// RequestTime converts time spent handling a request into what
// request_percentage measures: percent of one thread, per second of
// rate window (Kafka's nanosToPercentage).
func RequestTime(d time.Duration) float64 { return float64(d) * 100 / float64(time.Second) }

// RecordConnection counts a new connection from addr against its ip
// entity's connection_creation_rate (KIP-612; Kafka's
// ConnectionQuotas.recordIpConnectionMaybeThrottle) and returns how long
// to throttle it: zero to accept it. A throttled connection is not
// counted, as Kafka un-records it: the client is kept to the rate, not
// shut out for its retries. The throttle is at most one sample window.
func (m *QuotaManager) RecordConnection(addr netip.Addr, now time.Time) time.Duration {
	q := m.quotas.Load()
	if len(q.ipRates) == 0 && q.defaultIPRate == 0 {
		return 0
	}
	addr = addr.Unmap()
	limit, ok := q.ipRates[addr]
	if !ok {
		limit = q.defaultIPRate
	}
	if limit <= 0 {
		return 0
	}
	s := m.sensor(sensorKey{typ: connectionSensor, user: addr.String()}, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = now
	s.rate.record(1, now, m.window, m.samples)
	d := min(s.rate.throttle(limit, now, m.window, m.samples), m.window)
	if d > 0 {
		s.rate.record(-1, now, m.window, m.samples)
	}
	return d
}

// Mutations returns the controller_mutation_rate quota of one request of
// the client (Kafka's newQuotaFor), nil when none applies. A strict quota
// refuses mutations once the client's tokens are spent; a permissive one
// (requests too old to carry THROTTLING_QUOTA_EXCEEDED) accepts them and
// only throttles.
func (m *QuotaManager) Mutations(user, clientID string, strict bool) *MutationQuotaRequest {
	q := m.quotas.Load()
	if !q.has[MutationQuota] {
		return nil
	}
	key, limit, ok := q.find(MutationQuota, user, clientID)
	if !ok {
		return nil
	}
	return &MutationQuotaRequest{m: m, key: key, limit: limit, strict: strict}
}

// MutationQuotaRequest is one request's view of its client's
// controller_mutation_rate (Kafka's Strict- and
// PermissiveControllerMutationQuota). A nil one is unbounded.
type MutationQuotaRequest struct {
	m      *QuotaManager
	key    sensorKey
	limit  float64
	strict bool
	// throttle is the last throttle a record computed, at recorded.
	throttle time.Duration
	recorded time.Time
}

// Record spends partitions tokens of the client's bucket (Kafka's
// TokenBucket: refilled at the quota per second, holding at most the
// quota times the whole window). A strict quota refuses — returns false
// and spends nothing — when the tokens are already below zero, so one
// request may overdraw the bucket but the next waits for the refill; a
// permissive one always accepts. Either way Throttle then tells how long
// the bucket needs to be back at zero.
func (q *MutationQuotaRequest) Record(partitions int, now time.Time) bool {
	if q == nil {
		return true
	}
	m := q.m
	s := m.sensor(q.key, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = now
	burst := q.limit * float64(m.samples) * m.window.Seconds()
	tokens := s.bucket.refill(q.limit, burst, now)
	if q.strict && tokens < 0 {
		q.setThrottle(tokens, now)
		return false
	}
	tokens = s.bucket.spend(float64(partitions), burst)
	if !q.strict && tokens < 0 {
		q.setThrottle(tokens, now)
	}
	return true
}

func (q *MutationQuotaRequest) setThrottle(tokens float64, now time.Time) {
	q.throttle = time.Duration(-tokens / q.limit * float64(time.Second)).Round(time.Millisecond)
	q.recorded = now
}

// Throttle is how long to throttle the client as of now: the last
// throttle a Record computed, less the time since (Kafka's
// AbstractControllerMutationQuota.throttleTime).
func (q *MutationQuotaRequest) Throttle(now time.Time) time.Duration {
	if q == nil {
		return 0
	}
	return max(0, q.throttle-now.Sub(q.recorded))
}

// find is Kafka's DefaultQuotaCallback: the quota of the most specific
// entity that matches, and the tags of the measure that counts against it.
func (q *quotaSet) find(typ QuotaType, user, clientID string) (sensorKey, float64, bool) {
	name := func(n string) metadata.QuotaName { return metadata.QuotaName{Present: true, Name: n} }
	def := metadata.QuotaName{Present: true, Default: true}
	both := sensorKey{typ, user, clientID}
	userOnly := sensorKey{typ, user, ""}
	clientOnly := sensorKey{typ, "", clientID}
	for _, c := range [...]struct {
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
		if v, ok := q.entities[c.e][quotaKeys[typ]]; ok {
			return c.key, v, true
		}
	}
	return sensorKey{}, 0, false
}

// sensor returns the sensor of key, made on first use. Making one also
// drops sensors unused for sensorIdle, at most once a minute: without new
// clients the map does not grow, so nothing needs sweeping.
func (m *QuotaManager) sensor(key sensorKey, now time.Time) *sensor {
	m.mu.RLock()
	s := m.mu.sensors[key]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.mu.sensors[key]; s == nil {
		m.sweepLocked(now)
		s = &sensor{last: now}
		m.mu.sensors[key] = s
	}
	return s
}

func (m *QuotaManager) sweepLocked(now time.Time) {
	if now.Sub(m.mu.swept) < time.Minute {
		return
	}
	m.mu.swept = now
	for k, s := range m.mu.sensors {
		s.mu.Lock()
		idle := now.Sub(s.last) > sensorIdle
		s.mu.Unlock()
		if idle {
			delete(m.mu.sensors, k)
		}
	}
}

// QuotaPublisher keeps M's quotas in step with the metadata image (Kafka's
// DynamicClientQuotaPublisher), so a quota set with AlterClientQuotas
// takes effect on every node without a restart.
type QuotaPublisher struct{ M *QuotaManager }

// Publish implements metadata.Publisher.
func (p QuotaPublisher) Publish(d *metadata.Delta, img *metadata.Image) {
	if d.Full || d.QuotasChanged {
		p.M.SetQuotas(img.ClientQuotas())
	}
}
