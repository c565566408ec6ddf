package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/samsa-io/samsa/internal/security"
)

// ConnectionQuotas is Kafka's ConnectionQuotas: the limits on the
// connections a broker's client listeners accept, which they share. In the
// order Kafka applies them to a new connection:
//
//  1. max.connections and max.connection.creation.rate, for the broker and
//     for the connection's listener: while either is at its count or over
//     its rate, the listener accepts nothing (its accept loop waits; new
//     connections queue in the kernel's backlog), then takes the
//     connection. The inter-broker listener is exempt from the broker-wide
//     limits when there are other listeners, so replication always finds a
//     way in.
//  2. connection_creation_rate of the client's ip entity (KIP-612, from the
//     metadata image through IPRates): a connection over it is held
//     unserved for the throttle time, then closed, so the client's
//     reconnect backoff slows it to its rate; it is not counted.
//  3. max.connections.per.ip (max.connections.per.ip.overrides for an
//     address it names): a connection beyond it is closed at once.
//
// Limits change live (SetLimits); one lowered below the connections
// already open closes none of them (Kafka closes the least recently used
// over max.connections) but admits no new one until enough have closed.
type ConnectionQuotas struct {
	cfg ConnectionQuotasConfig

	mu struct {
		sync.Mutex
		limits        ConnectionLimits
		total         int
		perIP         map[netip.Addr]int
		perListener   map[string]int
		brokerRate    *security.Rate
		listenerRates map[string]*security.Rate
		// freed is closed, and replaced, when a connection closes or the
		// limits change: a listener waiting for a slot looks again.
		freed chan struct{}
	}
}

// ConnectionQuotasConfig configures ConnectionQuotas.
type ConnectionQuotasConfig struct {
	// Limits are the initial limits (config.ConnectionLimits resolved).
	Limits ConnectionLimits
	// IPRates counts each connection against its address's
	// connection_creation_rate (a security.QuotaManager); nil: none.
	IPRates IPRates
	// InterBrokerListener is inter.broker.listener.name.
	InterBrokerListener string
	// Window and Samples measure the creation rates
	// (quota.window.size.seconds, quota.window.num).
	Window  time.Duration
	Samples int
	// Now defaults to time.Now.
	Now func() time.Time
}

// IPRates counts a new connection from addr against its ip entity's
// connection_creation_rate and says how long to throttle it (zero: accept
// it; a throttled one is not counted).
type IPRates interface {
	RecordConnection(addr netip.Addr, now time.Time) time.Duration
}

// ConnectionLimits are the counts and rates ConnectionQuotas enforces; a
// listener absent from Listeners has no limits of its own.
type ConnectionLimits struct {
	MaxConnections            int                // max.connections
	MaxConnectionsPerIP       int                // max.connections.per.ip
	PerIPOverrides            map[netip.Addr]int // max.connections.per.ip.overrides
	MaxConnectionCreationRate int                // max.connection.creation.rate, per second
	Listeners                 map[string]ListenerLimits
}

// ListenerLimits are one listener's max.connections and
// max.connection.creation.rate.
type ListenerLimits struct {
	MaxConnections            int
	MaxConnectionCreationRate int
}

// errConnectionThrottled marks a connection over its address's rate.
var errConnectionThrottled = errors.New("connection creation rate of the address exceeded")

// tooManyConnections is the refusal of a connection over its address's
// count.
type tooManyConnections struct {
	addr  netip.Addr
	limit int
}

func (e *tooManyConnections) Error() string {
	return fmt.Sprintf("address %s already has the configured maximum of %d connections", e.addr, e.limit)
}

// NewConnectionQuotas returns quotas enforcing cfg.Limits.
func NewConnectionQuotas(cfg ConnectionQuotasConfig) *ConnectionQuotas {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	q := &ConnectionQuotas{cfg: cfg}
	q.mu.limits = cfg.Limits
	q.mu.perIP = map[netip.Addr]int{}
	q.mu.perListener = map[string]int{}
	q.mu.brokerRate = security.NewRate(cfg.Window, cfg.Samples)
	q.mu.listenerRates = map[string]*security.Rate{}
	q.mu.freed = make(chan struct{})
	return q
}

// SetLimits replaces the limits (a dynamic config change); listeners
// waiting for a slot look again.
func (q *ConnectionQuotas) SetLimits(l ConnectionLimits) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.limits = l
	q.wakeLocked()
}

// admit decides a new connection from addr on listener, waiting while the
// broker or the listener has no room for it (see ConnectionQuotas). It
// returns nil to serve the connection, which release must give back;
// errConnectionThrottled with how long to hold it before closing it;
// a *tooManyConnections to close it now; or ctx's error.
func (q *ConnectionQuotas) admit(ctx context.Context, listener string, addr netip.Addr) (time.Duration, error) {
	addr = addr.Unmap()
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.waitForSlotLocked(ctx, listener); err != nil {
		return 0, err
	}
	if q.cfg.IPRates != nil {
		now := q.cfg.Now()
		if d := q.cfg.IPRates.RecordConnection(addr, now); d > 0 {
			// Not accepted: the broker's and the listener's rates take
			// it back too (Kafka's updateListenerMetrics).
			q.recordRatesLocked(listener, -1, now)
			return d, errConnectionThrottled
		}
	}
	l := q.mu.limits
	limit, ok := l.PerIPOverrides[addr]
	if !ok {
		limit = l.MaxConnectionsPerIP
	}
	if q.mu.perIP[addr] >= limit {
		return 0, &tooManyConnections{addr: addr, limit: limit}
	}
	q.mu.perIP[addr]++
	q.mu.perListener[listener]++
	q.mu.total++
	return 0, nil
}

// release gives back a connection admit accepted, once it closes.
func (q *ConnectionQuotas) release(listener string, addr netip.Addr) {
	addr = addr.Unmap()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.perIP[addr]--; q.mu.perIP[addr] <= 0 {
		delete(q.mu.perIP, addr)
	}
	q.mu.perListener[listener]--
	q.mu.total--
	q.wakeLocked()
}

// waitForSlotLocked is Kafka's waitForConnectionSlot: it counts the
// connection in the broker's and the listener's creation rates, then
// waits out the longer of their throttles and until both have room under
// max.connections.
func (q *ConnectionQuotas) waitForSlotLocked(ctx context.Context, listener string) error {
	now := q.cfg.Now()
	until := now.Add(q.recordRatesLocked(listener, 1, now))
	for {
		wait := until.Sub(q.cfg.Now())
		if wait <= 0 && q.slotAvailableLocked(listener) {
			return nil
		}
		freed := q.mu.freed
		q.mu.Unlock()
		var timer *time.Timer
		var expired <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			expired = timer.C
		}
		select {
		case <-ctx.Done():
		case <-freed:
		case <-expired:
		}
		if timer != nil {
			timer.Stop()
		}
		q.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// recordRatesLocked records value connections in the broker's rate
// (unless the listener is protected) and the listener's, and returns the
// longer of their throttles.
func (q *ConnectionQuotas) recordRatesLocked(listener string, value float64, now time.Time) time.Duration {
	l := q.mu.limits
	var d time.Duration
	if !q.protectedLocked(listener) {
		q.mu.brokerRate.Record(value, now)
		d = q.mu.brokerRate.Throttle(float64(l.MaxConnectionCreationRate), now)
	}
	if ll, ok := l.Listeners[listener]; ok {
		r := q.mu.listenerRates[listener]
		if r == nil {
			r = security.NewRate(q.cfg.Window, q.cfg.Samples)
			q.mu.listenerRates[listener] = r
		}
		r.Record(value, now)
		d = max(d, r.Throttle(float64(ll.MaxConnectionCreationRate), now))
	}
	return d
}

func (q *ConnectionQuotas) slotAvailableLocked(listener string) bool {
	l := q.mu.limits
	if ll, ok := l.Listeners[listener]; ok && q.mu.perListener[listener] >= ll.MaxConnections {
		return false
	}
	return q.protectedLocked(listener) || q.mu.total < l.MaxConnections
}

// protectedLocked is Kafka's protectedListener: the inter-broker listener,
// when it is not the only one.
func (q *ConnectionQuotas) protectedLocked(listener string) bool {
	return listener == q.cfg.InterBrokerListener && len(q.mu.limits.Listeners) > 1
}

func (q *ConnectionQuotas) wakeLocked() {
	close(q.mu.freed)
	q.mu.freed = make(chan struct{})
}

// remoteAddr is the client's address of nc, the zero Addr when it has
// none (a test's pipe).
func remoteAddr(nc net.Conn) netip.Addr {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
