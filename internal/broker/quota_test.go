package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// fakeClock advances by step at every reading, so each request is
// measured as handled in exactly step.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

// TestRequestQuotaThrottle: request_percentage throttles any API with a
// throttle_time_ms (here ApiVersions), by the time Kafka's rate gives,
// bounded by one window; the time a handler spends in a coordinator or
// the controller is not counted.
func TestRequestQuotaThrottle(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0), step: 50 * time.Millisecond}
	quotas := security.NewQuotaManager(time.Second, 2)
	client := "busy"
	quotas.SetQuotas(map[metadata.QuotaEntity]map[string]float64{
		{ClientID: metadata.QuotaName{Present: true, Name: client}}: {"request_percentage": 10},
	})
	b := New(Config{Quotas: quotas, Now: clock.now, Image: metadata.NewLoader("c", nil).Image})
	req := func() wire.Request {
		body := kmsg.NewPtrApiVersionsRequest()
		body.Version = 3
		return wire.Request{Header: wire.RequestHeader{APIKey: int16(kmsg.ApiVersions), APIVersion: 3, ClientID: &client}, Body: body}
	}
	// Each request: 50 ms of a thread, 5 percent-seconds, one every
	// 100 ms; the quota is 10 over a span of at least 1 s. The first two
	// fit (10 over 1.1 s); the third is 15 over 1.2 s, 12.5: throttled
	// (12.5-10)/10 × 1.2 s = 300 ms; the fourth 20 over 1.3 s, 700 ms.
	var got []int32
	for range 4 {
		resp, err := b.Handle(context.Background(), nil, req())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.(*kmsg.ApiVersionsResponse).ThrottleMillis)
	}
	if got[0] != 0 || got[1] != 0 || got[2] != 300 || got[3] < 699 || got[3] > 700 {
		t.Errorf("throttles %v ms: want 0, 0, 300, 700", got)
	}
	// Far over the quota the throttle stops at one window (Kafka's bound
	// for request quotas).
	clock.step = time.Second
	resp, err := b.Handle(context.Background(), nil, req())
	if err != nil {
		t.Fatal(err)
	}
	if ms := resp.(*kmsg.ApiVersionsResponse).ThrottleMillis; ms != 1000 {
		t.Errorf("a request of 1 s against 10%%: throttle %d ms, want the 1000 ms bound", ms)
	}

	// Time away from the handler is not counted: a forward to a
	// controller that takes 10 clock readings (500 ms) costs nothing.
	clock.t, clock.step = clock.t.Add(time.Hour), 50*time.Millisecond
	ctx := withRequest(context.Background(), &requestState{clock: requestClock{now: clock.now, start: clock.now()}})
	back := away(ctx)
	for range 10 {
		clock.now()
	}
	back()
	st := ctx.Value(requestKey{}).(*requestState)
	if d := st.clock.handling(clock.now()); d != 100*time.Millisecond {
		t.Errorf("handled for %v around 500 ms away, want the 100 ms of the two readings outside", d)
	}
}

// TestNoQuotaNoClock: without any request quota the broker does not read
// the clock for it.
func TestNoQuotaNoClock(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0), step: time.Millisecond}
	b := New(Config{Quotas: security.NewQuotaManager(time.Second, 2), Now: clock.now})
	body := kmsg.NewPtrApiVersionsRequest()
	start := clock.t
	if _, err := b.Handle(context.Background(), nil, wire.Request{Header: wire.RequestHeader{APIKey: int16(kmsg.ApiVersions)}, Body: body}); err != nil {
		t.Fatal(err)
	}
	if n := clock.t.Sub(start) / time.Millisecond; n != 0 {
		t.Errorf("the clock was read %d times for one request without quotas", n)
	}
}
