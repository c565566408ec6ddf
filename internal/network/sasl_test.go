package network

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// testMechanism is a one-step SASL mechanism: the token "user:NAME"
// authenticates as NAME, "expiring:NAME:UNIXMS" as NAME with a credential
// that expires at UNIXMS, "two:NAME" takes two steps (the first answered
// "more"), anything else fails with a message the client may see.
type testMechanism struct {
	user   string
	steps  int
	expiry time.Time
}

func (m *testMechanism) Step(token []byte) ([]byte, bool, error) {
	m.steps++
	s := string(token)
	switch {
	case len(s) > 5 && s[:5] == "user:":
		m.user = s[5:]
		return []byte("ok"), true, nil
	case strings.HasPrefix(s, "expiring:"):
		user, ms, _ := strings.Cut(strings.TrimPrefix(s, "expiring:"), ":")
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			break
		}
		m.user, m.expiry = user, time.UnixMilli(n)
		return []byte("ok"), true, nil
	case len(s) > 4 && s[:4] == "two:" && m.steps == 1:
		m.user = s[4:]
		return []byte("more"), false, nil
	case m.steps == 2 && s == "done" && m.user != "":
		return []byte("ok"), true, nil
	}
	return nil, false, &security.AuthenticationError{Message: "Authentication failed: bad token"}
}

func (m *testMechanism) Principal() security.Principal { return security.User(m.user) }

func (m *testMechanism) CredentialExpiry() time.Time { return m.expiry }

// saslHandler answers ApiVersions and Metadata like fakeHandler and
// records the principal of every request it handles; it answers
// SaslHandshake as the broker does after authentication.
type saslHandler struct {
	fakeHandler
	mu   sync.Mutex
	seen []string
}

func (h *saslHandler) Handle(ctx context.Context, c *Conn, req wire.Request) (kmsg.Response, error) {
	h.mu.Lock()
	h.seen = append(h.seen, c.Principal().String())
	h.mu.Unlock()
	if hs, ok := req.Body.(*kmsg.SASLHandshakeRequest); ok {
		resp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.Version = hs.Version
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	return h.fakeHandler.Handle(ctx, c, req)
}

func (h *saslHandler) principals() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

// fakeClock is a settable clock for session lifetimes.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

const testDelay = 150 * time.Millisecond

func startSASLServer(t *testing.T, lifetime time.Duration) (*Server, *saslHandler, *fakeClock) {
	return startSASLServerDelay(t, lifetime, testDelay)
}

func startSASLServerDelay(t *testing.T, lifetime, delay time.Duration) (*Server, *saslHandler, *fakeClock) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &saslHandler{fakeHandler: fakeHandler{fetching: make(chan struct{}, 16)}}
	clock := &fakeClock{}
	clock.ns.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := Serve(ln, Config{
		Listener:       "SASL_PLAINTEXT",
		MaxRequestSize: 1 << 20,
		Handler:        h,
		Versions: wire.NewVersionTable(
			wire.VersionRange{Key: kmsg.ApiVersions, Min: 0, Max: 4},
			wire.VersionRange{Key: kmsg.Metadata, Min: 0, Max: 13},
			wire.VersionRange{Key: kmsg.SASLHandshake, Min: 0, Max: 1},
			wire.VersionRange{Key: kmsg.SASLAuthenticate, Min: 0, Max: 2},
		),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		SASL: &SASLConfig{
			Mechanisms:                []string{"TEST", "OTHER"},
			NewServer:                 func(string) security.SASLServer { return &testMechanism{} },
			MaxReceiveSize:            4096,
			FailedAuthenticationDelay: delay,
			SessionLifetime:           map[string]time.Duration{"TEST": lifetime},
			Now:                       clock.now,
		},
	})
	t.Cleanup(func() { s.Close() })
	return s, h, clock
}

// decode reads a response body of resp's type at version v, skipping the
// header's tag section for flexible versions.
func decode[R kmsg.Response](t *testing.T, body []byte, resp R, v int16) R {
	t.Helper()
	resp.SetVersion(v)
	if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %T: %v", resp, err)
	}
	return resp
}

func handshake(t *testing.T, c net.Conn, version int16, mechanism string, cid int32) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = version
	req.Mechanism = mechanism
	if _, err := c.Write(frame(req, cid)); err != nil {
		t.Fatal(err)
	}
	got, body := readResponse(t, c)
	if got != cid {
		t.Fatalf("handshake answer has correlation id %d, want %d", got, cid)
	}
	return decode(t, body, kmsg.NewPtrSASLHandshakeResponse(), version)
}

func saslAuthenticate(t *testing.T, c net.Conn, version int16, token string, cid int32) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = version
	req.SASLAuthBytes = []byte(token)
	if _, err := c.Write(frame(req, cid)); err != nil {
		t.Fatal(err)
	}
	got, body := readResponse(t, c)
	if got != cid {
		t.Fatalf("authenticate answer has correlation id %d, want %d", got, cid)
	}
	return decode(t, body, kmsg.NewPtrSASLAuthenticateResponse(), version)
}

// metadataOK sends a Metadata request and expects its answer.
func metadataOK(t *testing.T, c net.Conn, cid int32) {
	t.Helper()
	if _, err := c.Write(frame(metadataReq(1), cid)); err != nil {
		t.Fatal(err)
	}
	if got, _ := readResponse(t, c); got != cid {
		t.Fatalf("metadata answer has correlation id %d, want %d", got, cid)
	}
}

// login runs ApiVersions, SaslHandshake v1 and SaslAuthenticate v2.
func login(t *testing.T, c net.Conn, user string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	if _, err := c.Write(frame(av, 1)); err != nil {
		t.Fatal(err)
	}
	if cid, _ := readResponse(t, c); cid != 1 {
		t.Fatalf("api versions correlation id %d", cid)
	}
	if hs := handshake(t, c, 1, "TEST", 2); hs.ErrorCode != 0 {
		t.Fatalf("handshake error %d", hs.ErrorCode)
	}
	resp := saslAuthenticate(t, c, 2, "user:"+user, 3)
	if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != "ok" {
		t.Fatalf("authenticate: error %d %v, bytes %q", resp.ErrorCode, resp.ErrorMessage, resp.SASLAuthBytes)
	}
	return resp
}

// expectClosedAfter expects the server to close c no sooner than min
// after start.
func expectClosedAfter(t *testing.T, c net.Conn, start time.Time, min time.Duration) {
	t.Helper()
	expectClosed(t, c)
	if el := time.Since(start); el < min {
		t.Fatalf("closed after %v, want at least the failed-authentication delay %v", el, min)
	}
}

func TestSASLHandshakeV1(t *testing.T) {
	s, h, _ := startSASLServer(t, 0)
	c := dial(t, s)
	resp := login(t, c, "alice")
	if resp.SessionLifetimeMillis != 0 {
		t.Fatalf("session lifetime %d without connections.max.reauth.ms", resp.SessionLifetimeMillis)
	}
	metadataOK(t, c, 4)
	// The broker's handler answers a later SaslHandshake (ILLEGAL_SASL_STATE):
	// without a session lifetime there is no re-authentication.
	if hs := handshake(t, c, 1, "TEST", 5); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after authentication: error %d, want ILLEGAL_SASL_STATE", hs.ErrorCode)
	}
	got := h.principals()
	want := []string{"User:ANONYMOUS", "User:alice", "User:alice"}
	if len(got) != len(want) {
		t.Fatalf("handler saw %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("handler saw %v, want %v", got, want)
		}
	}
}

func TestSASLTwoSteps(t *testing.T) {
	s, _, _ := startSASLServer(t, 0)
	c := dial(t, s)
	if hs := handshake(t, c, 1, "TEST", 1); hs.ErrorCode != 0 || len(hs.SupportedMechanisms) != 2 {
		t.Fatalf("handshake: %+v", hs)
	}
	if r := saslAuthenticate(t, c, 0, "two:bob", 2); r.ErrorCode != 0 || string(r.SASLAuthBytes) != "more" {
		t.Fatalf("first step: %+v", r)
	}
	if r := saslAuthenticate(t, c, 1, "done", 3); r.ErrorCode != 0 || string(r.SASLAuthBytes) != "ok" {
		t.Fatalf("second step: %+v", r)
	}
	metadataOK(t, c, 4)
}

func TestSASLRefusals(t *testing.T) {
	s, h, _ := startSASLServer(t, 0)
	t.Run("request before authentication", func(t *testing.T) {
		c := dial(t, s)
		start := time.Now()
		if _, err := c.Write(frame(metadataReq(1), 1)); err != nil {
			t.Fatal(err)
		}
		expectClosedAfter(t, c, start, testDelay)
	})
	t.Run("request between handshake and authenticate", func(t *testing.T) {
		c := dial(t, s)
		handshake(t, c, 1, "TEST", 1)
		if _, err := c.Write(frame(metadataReq(1), 2)); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c)
	})
	t.Run("second ApiVersions", func(t *testing.T) {
		c := dial(t, s)
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version = 3
		if _, err := c.Write(append(frame(av, 1), frame(av, 2)...)); err != nil {
			t.Fatal(err)
		}
		readResponse(t, c)
		expectClosed(t, c)
	})
	t.Run("unknown mechanism", func(t *testing.T) {
		c := dial(t, s)
		start := time.Now()
		hs := handshake(t, c, 1, "GSSAPI", 1)
		if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
			t.Fatalf("error %d, want UNSUPPORTED_SASL_MECHANISM", hs.ErrorCode)
		}
		if len(hs.SupportedMechanisms) != 2 || hs.SupportedMechanisms[0] != "TEST" || hs.SupportedMechanisms[1] != "OTHER" {
			t.Fatalf("mechanisms %v, want [TEST OTHER]", hs.SupportedMechanisms)
		}
		expectClosedAfter(t, c, start, testDelay)
	})
	t.Run("failed authentication", func(t *testing.T) {
		c := dial(t, s)
		handshake(t, c, 1, "TEST", 1)
		start := time.Now()
		r := saslAuthenticate(t, c, 2, "wrong", 2)
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Authentication failed: bad token" {
			t.Fatalf("answer %d %v, want SASL_AUTHENTICATION_FAILED with the mechanism's message", r.ErrorCode, r.ErrorMessage)
		}
		// Nothing more is read: a retry on the same connection gets no answer.
		saslReq := kmsg.NewPtrSASLAuthenticateRequest()
		saslReq.Version = 2
		saslReq.SASLAuthBytes = []byte("user:alice")
		c.Write(frame(saslReq, 3))
		expectClosedAfter(t, c, start, testDelay)
	})
	t.Run("oversized token", func(t *testing.T) {
		c := dial(t, s)
		handshake(t, c, 1, "TEST", 1)
		// A 100 MB SaslAuthenticate: only its size prefix is sent; the
		// server must refuse it from that alone.
		if _, err := c.Write(binary.BigEndian.AppendUint32(nil, 100<<20)); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c)
		other := dial(t, s)
		login(t, other, "carol")
		metadataOK(t, other, 4)
	})
	t.Run("oversized first frame", func(t *testing.T) {
		// Under socket.request.max.bytes but over sasl.server.max.receive.size.
		c := dial(t, s)
		if _, err := c.Write(frame(metadataReq(500), 1)); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c)
	})
	for _, p := range h.principals() {
		if p != "User:ANONYMOUS" && p != "User:carol" {
			t.Fatalf("handler saw a request of %s", p)
		}
	}
}

// TestSASLHandshakeV0 sends raw tokens after SaslHandshake v0, as clients
// of Kafka 0.10 do.
func TestSASLHandshakeV0(t *testing.T) {
	s, h, _ := startSASLServer(t, 0)
	c := dial(t, s)
	if hs := handshake(t, c, 0, "TEST", 1); hs.ErrorCode != 0 {
		t.Fatalf("handshake error %d", hs.ErrorCode)
	}
	tok := []byte("user:dave")
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	raw, err := wire.ReadFrame(c, 1<<20, nil)
	if err != nil || string(raw) != "ok" {
		t.Fatalf("raw challenge %q, %v; want \"ok\"", raw, err)
	}
	metadataOK(t, c, 2)
	if p := h.principals(); p[len(p)-1] != "User:dave" {
		t.Fatalf("principals %v", p)
	}

	// A failed raw exchange is answered by closing the connection.
	c = dial(t, s)
	handshake(t, c, 0, "TEST", 1)
	start := time.Now()
	bad := []byte("nope")
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(bad))), bad...)); err != nil {
		t.Fatal(err)
	}
	expectClosedAfter(t, c, start, testDelay)
}

func TestSASLReauthentication(t *testing.T) {
	const lifetime = 10 * time.Second
	s, h, clock := startSASLServer(t, lifetime)
	c := dial(t, s)
	if r := login(t, c, "erin"); r.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("session lifetime %d ms, want %d", r.SessionLifetimeMillis, lifetime.Milliseconds())
	}
	metadataOK(t, c, 4)

	// Re-authenticate within the session: the same connection goes on.
	clock.advance(8 * time.Second)
	if hs := handshake(t, c, 1, "TEST", 5); hs.ErrorCode != 0 {
		t.Fatalf("re-authentication handshake error %d", hs.ErrorCode)
	}
	if r := saslAuthenticate(t, c, 2, "user:erin", 6); r.ErrorCode != 0 || r.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("re-authentication: %+v", r)
	}
	// A second handshake within a second of the last re-authentication
	// is an ordinary request, which the handler refuses.
	clock.advance(500 * time.Millisecond)
	if hs := handshake(t, c, 1, "TEST", 7); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("second handshake within a second: error %d, want ILLEGAL_SASL_STATE", hs.ErrorCode)
	}
	// The new session runs from the re-authentication.
	clock.advance(7500 * time.Millisecond)
	metadataOK(t, c, 8)

	// Past the session's end, any request but a re-authentication closes.
	clock.advance(3 * time.Second)
	if _, err := c.Write(frame(metadataReq(1), 9)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)

	for _, p := range h.principals()[1:] {
		if p != "User:erin" {
			t.Fatalf("handler saw %s", p)
		}
	}
}

// An expiring credential (an OAUTHBEARER token) bounds the session as in
// Kafka: its expiry alone without connections.max.reauth.ms, the earlier
// of the two with it.
func TestSASLCredentialExpiry(t *testing.T) {
	for _, tc := range []struct {
		name           string
		reauth, expiry time.Duration
		want           time.Duration
	}{
		{"expiry only", 0, 4 * time.Second, 4 * time.Second},
		{"expiry first", 10 * time.Second, 4 * time.Second, 4 * time.Second},
		{"reauth first", 10 * time.Second, 20 * time.Second, 10 * time.Second},
		{"already expired", 0, -time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, clock := startSASLServer(t, tc.reauth)
			c := dial(t, s)
			if hs := handshake(t, c, 1, "TEST", 1); hs.ErrorCode != 0 {
				t.Fatalf("handshake error %d", hs.ErrorCode)
			}
			token := fmt.Sprintf("expiring:ivy:%d", clock.now().Add(tc.expiry).UnixMilli())
			r := saslAuthenticate(t, c, 2, token, 2)
			if r.ErrorCode != 0 || r.SessionLifetimeMillis != tc.want.Milliseconds() {
				t.Fatalf("answer %d, session lifetime %d ms, want %d", r.ErrorCode, r.SessionLifetimeMillis, tc.want.Milliseconds())
			}
			if tc.want > 0 {
				clock.advance(tc.want - time.Millisecond)
				metadataOK(t, c, 3)
			}
			// Past the expiry the session is over.
			clock.advance(2 * time.Millisecond)
			if _, err := c.Write(frame(metadataReq(1), 4)); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, c)
		})
	}
}

func TestSASLReauthenticationRefusals(t *testing.T) {
	s, _, _ := startSASLServer(t, time.Minute)
	t.Run("other principal", func(t *testing.T) {
		c := dial(t, s)
		login(t, c, "frank")
		handshake(t, c, 1, "TEST", 4)
		r := saslAuthenticate(t, c, 2, "user:grace", 5)
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil ||
			*r.ErrorMessage != "Cannot change principals during re-authentication from User.frank: User.grace" {
			t.Fatalf("answer %d %v", r.ErrorCode, r.ErrorMessage)
		}
		expectClosed(t, c)
	})
	t.Run("other mechanism", func(t *testing.T) {
		c := dial(t, s)
		login(t, c, "frank")
		if hs := handshake(t, c, 1, "OTHER", 4); hs.ErrorCode != 0 {
			t.Fatalf("handshake error %d", hs.ErrorCode)
		}
		r := saslAuthenticate(t, c, 2, "user:frank", 5)
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil ||
			*r.ErrorMessage != "SASL mechanism 'OTHER' requested by client is not supported for re-authentication of mechanism 'TEST'" {
			t.Fatalf("answer %d %v", r.ErrorCode, r.ErrorMessage)
		}
		expectClosed(t, c)
	})
	t.Run("failed", func(t *testing.T) {
		c := dial(t, s)
		login(t, c, "frank")
		handshake(t, c, 1, "TEST", 4)
		if r := saslAuthenticate(t, c, 2, "bad", 5); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("error %d", r.ErrorCode)
		}
		expectClosed(t, c)
	})
}

// TestSASLCloseDuringDelay: closing the server does not wait out the
// failed-authentication delay of its connections.
func TestSASLCloseDuringDelay(t *testing.T) {
	s, _, _ := startSASLServerDelay(t, 0, time.Hour)
	c := dial(t, s)
	if _, err := c.Write(frame(metadataReq(1), 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the failed-authentication delay")
	}
	expectClosed(t, c)
}
