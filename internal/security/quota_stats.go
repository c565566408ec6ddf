package security

import "time"

// The two measures of client quotas, as Kafka's metrics package has them.

// rate is Kafka's Rate over a SampledStat: samples windows of window
// each; a sample older than all of them together no longer counts.
type rate struct {
	starts []time.Time
	values []float64
	cur    int
}

func (r *rate) record(value float64, now time.Time, window time.Duration, samples int) {
	if len(r.starts) == 0 {
		r.starts, r.values = make([]time.Time, samples), make([]float64, samples)
		r.starts[0] = now
	} else if now.Sub(r.starts[r.cur]) >= window {
		r.cur = (r.cur + 1) % samples
		r.starts[r.cur], r.values[r.cur] = now, 0
	}
	r.values[r.cur] += value
}

// throttle is how long the rate, with nothing more recorded, needs to
// fall back to limit: (observed - limit) / limit × the span measured
// (Kafka's QuotaUtils.throttleTime); zero within the limit.
func (r *rate) throttle(limit float64, now time.Time, window time.Duration, samples int) time.Duration {
	observed, span := r.measure(now, window, samples)
	if observed <= limit {
		return 0
	}
	return time.Duration((observed - limit) / limit * float64(span))
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

// tokenBucket is Kafka's TokenBucket (KIP-599): credits refill at the
// quota per second up to a burst of quota × the whole window, a record
// spends them and may take them below zero; the quota is exhausted while
// they are. Unlike a rate, a burst costs exactly the time it needs to
// earn back, not the time it takes to leave the window.
type tokenBucket struct {
	tokens float64
	last   time.Time // zero: never used, so full
}

// refill adds what the quota earned since the last refill and returns
// the tokens.
func (b *tokenBucket) refill(quota, burst float64, now time.Time) float64 {
	if b.last.IsZero() {
		b.tokens = burst
	} else {
		b.tokens = min(burst, b.tokens+quota*now.Sub(b.last).Seconds())
	}
	b.last = now
	return b.tokens
}

// spend takes n tokens (after a refill) and returns what is left.
func (b *tokenBucket) spend(n, burst float64) float64 {
	b.tokens = min(burst, b.tokens-n)
	return b.tokens
}

// Rate is Kafka's Rate over samples windows of window each, for the
// limits kept outside client quotas (max.connection.creation.rate, per
// broker and per listener). The caller serialises its use.
type Rate struct {
	r       rate
	window  time.Duration
	samples int
}

// NewRate returns an empty rate (quota.window.size.seconds,
// quota.window.num).
func NewRate(window time.Duration, samples int) *Rate {
	return &Rate{window: window, samples: max(samples, 2)}
}

// Record adds value (negative to take back an earlier record).
func (r *Rate) Record(value float64, now time.Time) { r.r.record(value, now, r.window, r.samples) }

// Throttle is how long the rate, with nothing more recorded, needs to
// fall back to limit, at most one window (Kafka bounds connection
// throttles so: ConnectionQuotas.recordAndGetThrottleTimeMs); zero within
// it.
func (r *Rate) Throttle(limit float64, now time.Time) time.Duration {
	return min(r.r.throttle(limit, now, r.window, r.samples), r.window)
}
