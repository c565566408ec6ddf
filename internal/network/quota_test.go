package network

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/wire"
)

// muteHandler throttles every request it handles by its mute, and
// answers ApiVersions only (a Produce gets no answer, as acks=0).
type muteHandler struct{ mute time.Duration }

func (h muteHandler) Handle(_ context.Context, c *Conn, req wire.Request) (kmsg.Response, error) {
	c.Throttle(h.mute)
	if body, ok := req.Body.(*kmsg.ApiVersionsRequest); ok {
		resp := body.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.Version = body.Version
		return resp, nil
	}
	return nil, nil
}

// TestThrottleMutesWithoutAnswer: a handler's Throttle mutes the
// connection even for a request without an answer (Produce acks=0): the
// request pipelined after it is answered only once the time is over.
func TestThrottleMutesWithoutAnswer(t *testing.T) {
	s, _ := startServerWith(t, Config{MaxRequestSize: 1 << 20})
	s.cfg.Handler = muteHandler{mute: 300 * time.Millisecond}
	c := dial(t, s)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	start := time.Now()
	if _, err := c.Write(append(frame(produceReq(0), 1), frame(av, 2)...)); err != nil {
		t.Fatal(err)
	}
	if id, _ := readResponse(t, c); id != 2 {
		t.Fatalf("answer to correlation id %d, want 2", id)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("the request after a muted acks=0 produce was answered after %v, want at least 300ms", took)
	}
}

// startQuotaServer serves ApiVersions under connection quotas.
func startQuotaServer(t *testing.T, q *ConnectionQuotas) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, Config{Listener: "PLAINTEXT", MaxRequestSize: 1 << 20, Handler: muteHandler{}, Connections: q,
		Versions: wire.NewVersionTable(wire.VersionRange{Key: kmsg.ApiVersions, Min: 0, Max: 4}),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { s.Close() })
	return s
}

// dialFrom connects to s from the loopback address from.
func dialFrom(t *testing.T, s *Server, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// served reports whether c gets an ApiVersions answer within wait, and
// false when it is closed or silent.
func served(t *testing.T, c net.Conn, wait time.Duration) bool {
	t.Helper()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	if _, err := c.Write(frame(av, 7)); err != nil {
		return false
	}
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := wire.ReadFrame(c, 1<<20, nil)
	return err == nil
}

func unlimited() ConnectionLimits {
	return ConnectionLimits{MaxConnections: math.MaxInt32, MaxConnectionsPerIP: math.MaxInt32, MaxConnectionCreationRate: math.MaxInt32}
}

// TestConnectionsPerIP: max.connections.per.ip closes a connection beyond
// it at once; an override raises it for one address; a closed connection
// frees its place; a lower limit set live applies to new connections.
func TestConnectionsPerIP(t *testing.T) {
	l := unlimited()
	l.MaxConnectionsPerIP = 2
	l.PerIPOverrides = map[netip.Addr]int{netip.MustParseAddr("127.0.0.3"): 3}
	q := NewConnectionQuotas(ConnectionQuotasConfig{Limits: l, Window: time.Second, Samples: 2})
	s := startQuotaServer(t, q)
	a1, a2 := dialFrom(t, s, "127.0.0.2"), dialFrom(t, s, "127.0.0.2")
	for _, c := range []net.Conn{a1, a2} {
		if !served(t, c, 5*time.Second) {
			t.Fatal("a connection within max.connections.per.ip was not served")
		}
	}
	expectClosed(t, dialFrom(t, s, "127.0.0.2"))
	for range 3 {
		if !served(t, dialFrom(t, s, "127.0.0.3"), 5*time.Second) {
			t.Fatal("127.0.0.3, overridden to 3 connections, refused")
		}
	}
	a1.Close()
	// The server releases the place once it sees the close.
	deadline := time.Now().Add(5 * time.Second)
	for !served(t, dialFrom(t, s, "127.0.0.2"), 200*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection's place was never freed")
		}
	}
	l.MaxConnectionsPerIP = 1
	q.SetLimits(l)
	expectClosed(t, dialFrom(t, s, "127.0.0.2")) // it has 2 open
	if !served(t, dialFrom(t, s, "127.0.0.4"), 5*time.Second) {
		t.Fatal("a first connection refused under max.connections.per.ip=1")
	}
}

// throttleFrom is an IPRates throttling one address.
type throttleFrom struct {
	addr netip.Addr
	d    time.Duration
	n    atomic.Int32
}

func (f *throttleFrom) RecordConnection(addr netip.Addr, _ time.Time) time.Duration {
	if addr == f.addr {
		f.n.Add(1)
		return f.d
	}
	return 0
}

// TestConnectionRateThrottledAddress: a connection over its address's
// connection_creation_rate is never served and is closed once its
// throttle time is over (Kafka's delayed close); other addresses are
// served.
func TestConnectionRateThrottledAddress(t *testing.T) {
	rates := &throttleFrom{addr: netip.MustParseAddr("127.0.0.5"), d: 300 * time.Millisecond}
	q := NewConnectionQuotas(ConnectionQuotasConfig{Limits: unlimited(), IPRates: rates, Window: time.Second, Samples: 2})
	s := startQuotaServer(t, q)
	c := dialFrom(t, s, "127.0.0.5")
	start := time.Now()
	if served(t, c, 5*time.Second) {
		t.Fatal("a throttled connection was served")
	}
	if took := time.Since(start); took < 250*time.Millisecond || took > 3*time.Second {
		t.Errorf("throttled connection closed after %v, want its 300ms throttle", took)
	}
	if !served(t, dialFrom(t, s, "127.0.0.6"), 5*time.Second) {
		t.Fatal("another address was not served")
	}
	if rates.n.Load() != 1 {
		t.Errorf("%d connections from the throttled address counted, want 1", rates.n.Load())
	}
}

// TestMaxConnectionsDelaysAccept: at max.connections a new connection
// waits to be accepted — it is not refused — until one closes.
func TestMaxConnectionsDelaysAccept(t *testing.T) {
	l := unlimited()
	l.MaxConnections = 1
	s := startQuotaServer(t, NewConnectionQuotas(ConnectionQuotasConfig{Limits: l, Window: time.Second, Samples: 2}))
	first := dialFrom(t, s, "127.0.0.1")
	if !served(t, first, 5*time.Second) {
		t.Fatal("first connection not served")
	}
	second := dialFrom(t, s, "127.0.0.1")
	if served(t, second, 300*time.Millisecond) {
		t.Fatal("a connection beyond max.connections=1 was served")
	}
	first.Close()
	second.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := wire.ReadFrame(second, 1<<20, nil); err != nil {
		t.Fatalf("the waiting connection was not served once the first closed: %v", err)
	}
}

// TestCreationRateDelaysAccept: max.connection.creation.rate=10, measured
// over two 1 s windows, delays connections to about 10 per second (10 in
// the first): 25 take about 2 s, every one served.
func TestCreationRateDelaysAccept(t *testing.T) {
	l := unlimited()
	l.MaxConnectionCreationRate = 10
	s := startQuotaServer(t, NewConnectionQuotas(ConnectionQuotasConfig{Limits: l, Window: time.Second, Samples: 2}))
	start := time.Now()
	for i := range 25 {
		c := dialFrom(t, s, "127.0.0.1")
		if !served(t, c, 5*time.Second) {
			t.Fatalf("connection %d not served", i)
		}
		c.Close()
	}
	if took := time.Since(start); took < time.Second || took > 4*time.Second {
		t.Errorf("25 connections at 10/s took %v, want about 2 s", took)
	}
}

// TestProtectedListener: the inter-broker listener, when there are
// others, is not held to the broker-wide max.connections (its
// connections still count towards it).
func TestProtectedListener(t *testing.T) {
	l := unlimited()
	l.MaxConnections = 1
	l.Listeners = map[string]ListenerLimits{"PLAINTEXT": {math.MaxInt32, math.MaxInt32}, "INTERNAL": {math.MaxInt32, math.MaxInt32}}
	q := NewConnectionQuotas(ConnectionQuotasConfig{Limits: l, InterBrokerListener: "INTERNAL", Window: time.Second, Samples: 2})
	addr := netip.MustParseAddr("10.0.0.1")
	ctx := context.Background()
	if _, err := q.admit(ctx, "PLAINTEXT", addr); err != nil {
		t.Fatal(err)
	}
	if _, err := q.admit(ctx, "INTERNAL", addr); err != nil {
		t.Fatalf("inter-broker listener at the broker's max.connections: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := q.admit(short, "PLAINTEXT", addr); err == nil {
		t.Fatal("a client listener admitted a connection beyond max.connections")
	}
	// The inter-broker connection counts in the total all the same.
	q.release("PLAINTEXT", addr)
	q.release("INTERNAL", addr)
	bounded, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	if _, err := q.admit(bounded, "PLAINTEXT", addr); err != nil {
		t.Fatalf("after the releases: %v", err)
	}
}
