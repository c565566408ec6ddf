package broker

// Client quotas: after a handler answers, Handle measures the request
// against the client's quotas and throttles it (Kafka's KafkaApis and
// RequestHandlerHelper): the response's throttle_time_ms says how long,
// and the connection is muted for that long (network.Conn.Throttle).
//
//   - producer_byte_rate counts a produce request's size, acks=0 included:
//     that request gets no answer, but its connection is muted all the
//     same.
//   - consumer_byte_rate counts a consumer fetch's response size. A
//     throttled fetch still carries its records (Kafka answers it empty):
//     the delay that follows keeps the client to its quota either way.
//   - request_percentage counts the time the broker spent handling the
//     request (requestClock) as percent of one thread, for every request
//     but those Kafka exempts: a follower's fetch, WriteTxnMarkers (cluster
//     actions) and produce with acks=0.
//   - controller_mutation_rate is counted by the active controller, which
//     answers a forwarded CreateTopics, CreatePartitions or DeleteTopics
//     with its throttle (internal/controller, quotas.go).
//
// The throttle applied is the longest of them, as Kafka combines them.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// throttle records req, answered by resp (nil for acks=0), against the
// client's quotas; over one, it sets resp's throttle_time_ms and mutes c.
func (b *Broker) throttle(c *network.Conn, req wire.Request, resp kmsg.Response, clock *requestClock) {
	q := b.cfg.Quotas
	if q == nil {
		return
	}
	user, clientID := security.Anonymous.Name, ""
	if c != nil {
		user = c.Principal().Name
	}
	if req.Header.ClientID != nil {
		clientID = *req.Header.ClientID
	}
	// The clock is read once, and only when some quota needs it.
	var now time.Time
	tick := func() time.Time {
		if now.IsZero() {
			now = b.cfg.Now()
		}
		return now
	}
	var d time.Duration
	exempt := false
	switch body := req.Body.(type) {
	case *kmsg.ProduceRequest:
		if q.Enabled(security.ProduceQuota) {
			d = q.Record(security.ProduceQuota, user, clientID, float64(req.Size), tick())
		}
		exempt = body.Acks == 0
	case *kmsg.FetchRequest:
		if fetchReplicaID(body) >= 0 {
			return // a follower: replication is not a client's quota
		}
		if q.Enabled(security.FetchQuota) {
			// SizeHint is the response's size to within a few bytes per
			// partition: the records dominate it.
			d = q.Record(security.FetchQuota, user, clientID, float64(wire.SizeHint(resp)), tick())
		}
	case *kmsg.WriteTxnMarkersRequest:
		return // a cluster action, sent by another broker
	}
	if !exempt && clock.measuring() {
		t := tick()
		d = max(d, q.Record(security.RequestQuota, user, clientID, security.RequestTime(clock.handling(t)), t))
	}
	tr, ok := resp.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	})
	if ok {
		// A forwarded request's answer carries the controller's throttle
		// (Kafka's sendForwardedResponse takes the longer).
		ms, _ := tr.Throttle()
		d = max(d, time.Duration(ms)*time.Millisecond)
		tr.SetThrottle(int32(d.Milliseconds()))
	}
	if d > 0 && c != nil {
		c.Throttle(d)
	}
}

// requestClock measures how long the broker handles a request, as Kafka's
// request_percentage counts it: request handler thread time plus network
// thread time. That is the time since Handle began, less the time away —
// waiting for replication (acks=all) or new records (a fetch's
// max_wait_ms), or in a coordinator or the controller (delegates.go):
// Kafka parks such requests in a purgatory or hands them to another
// thread, off the handler's clock — plus the connection's network time
// (parsing this request, encoding the previous answer). Socket writes,
// on the connection's writer goroutine, are not counted. Only the
// goroutine handling the request touches it.
type requestClock struct {
	now   func() time.Time
	start time.Time // zero: not measuring (no request quota anywhere)
	away  time.Duration
}

func (k *requestClock) measuring() bool { return k != nil && !k.start.IsZero() }

// handling is the time spent handling the request as of now.
func (k *requestClock) handling(now time.Time) time.Duration {
	return max(0, now.Sub(k.start)-k.away)
}

// requestState is what a handler's context carries about its request.
type requestState struct {
	header wire.RequestHeader
	clock  requestClock
}

type requestKey struct{}

func withRequest(ctx context.Context, st *requestState) context.Context {
	return context.WithValue(ctx, requestKey{}, st)
}

// requestHeader returns the header of the request being handled.
func requestHeader(ctx context.Context) wire.RequestHeader {
	if st, ok := ctx.Value(requestKey{}).(*requestState); ok {
		return st.header
	}
	return wire.RequestHeader{}
}

// away marks the time until the returned function is called as spent
// away from the handler (requestClock).
func away(ctx context.Context) (back func()) {
	st, ok := ctx.Value(requestKey{}).(*requestState)
	if !ok || !st.clock.measuring() {
		return func() {}
	}
	k := &st.clock
	left := k.now()
	return func() { k.away += k.now().Sub(left) }
}
