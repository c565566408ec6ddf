package network

// SASL authentication of a connection, as Kafka's SaslServerAuthenticator
// runs it on SASL_PLAINTEXT and SASL_SSL listeners. The exchange runs
// over whatever net.Conn the listener accepted (TLS or not), on the
// connection's reader goroutine, before any request reaches the handler:
//
//	ApiVersions (at most once; an unsupported version may be retried)
//	SaslHandshake v0 → raw tokens: size-prefixed SASL bytes each way,
//	                   no Kafka header
//	SaslHandshake v1 → SaslAuthenticate requests and responses (v0-v2)
//
// Any other request before the client authenticated closes the
// connection. Every frame read until then is bounded by
// sasl.server.max.receive.size. A failed exchange is answered where
// Kafka answers (UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED)
// and the connection is closed after connection.failed.authentication.delay.ms,
// during which nothing more is read from it.
//
// Re-authentication (KIP-368): when connections.max.reauth.ms or the
// credential's expiry (security.ExpiringCredential: an OAUTHBEARER
// token's exp) gives the session a lifetime, SaslAuthenticate v1+
// reports it, and a SaslHandshake on the authenticated connection — at
// most one a second — starts the exchange again with the same mechanism;
// it must end with the same principal. A request other than that
// handshake arriving after the session expired closes the connection.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// SASLConfig makes a listener authenticate each client with SASL before
// serving it.
type SASLConfig struct {
	// Mechanisms are the enabled mechanisms, in the order SaslHandshake
	// answers list them.
	Mechanisms []string
	// NewServer starts one exchange of an enabled mechanism.
	NewServer func(mechanism string) security.SASLServer
	// MaxReceiveSize (sasl.server.max.receive.size) bounds every frame
	// read until the client is authenticated, and during
	// re-authentication.
	MaxReceiveSize int32
	// FailedAuthenticationDelay (connection.failed.authentication.delay.ms)
	// is how long a connection that failed authentication stays open,
	// its answer sent and nothing more read, before it is closed: it
	// slows down password guessing.
	FailedAuthenticationDelay time.Duration
	// SessionLifetime (connections.max.reauth.ms) of each mechanism; a
	// missing or zero one means sessions do not expire.
	SessionLifetime map[string]time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// minReauthInterval is Kafka's: a SaslHandshake less than a second after
// the previous re-authentication began is an ordinary request (and is
// refused).
const minReauthInterval = time.Second

// saslSession is a connection's SASL state after authentication, owned
// by the reader goroutine.
type saslSession struct {
	mechanism string
	// token reports that the client authenticated with a delegation token.
	token bool
	// expires is when the session ends (zero: never); lastReauth when the
	// latest re-authentication began.
	expires, lastReauth time.Time
}

// authStep is where an exchange is.
type authStep int

const (
	stepFirst        authStep = iota // ApiVersions or SaslHandshake
	stepHandshake                    // after ApiVersions: SaslHandshake
	stepAuthenticate                 // tokens of the chosen mechanism
)

// exchange is one run of the authenticator on a connection.
type exchange struct {
	c         *Conn
	cfg       *SASLConfig
	step      authStep
	reauth    bool
	framed    bool // SaslHandshake v1: tokens come in SaslAuthenticate
	mechanism string
	server    security.SASLServer
	done      bool
	// badMechanism fails a re-authentication that asked for another
	// mechanism, at its first token (Kafka's REAUTH_BAD_MECHANISM).
	badMechanism string
}

// authFailure is an exchange that failed: the connection is closed after
// the failed-authentication delay.
type authFailure struct{ err error }

func (f *authFailure) Error() string { return f.err.Error() }
func (f *authFailure) Unwrap() error { return f.err }

func failAuth(format string, args ...any) error {
	return &authFailure{err: fmt.Errorf(format, args...)}
}

// authenticate runs a SASL exchange to its end. handshake is the
// SaslHandshake that begins a re-authentication, nil for the first one.
// On success the connection's principal and session are set; any error
// means the connection must be closed (after the delay, already waited
// here, when the exchange failed).
func (c *Conn) authenticate(ctx context.Context, handshake *wire.Request) error {
	cfg := c.srv.cfg.SASL
	x := &exchange{c: c, cfg: cfg, reauth: handshake != nil}
	var err error
	if handshake != nil {
		x.step = stepHandshake
		err = x.handshake(*handshake)
	}
	for err == nil && !x.done {
		var frame []byte
		frame, err = wire.ReadFrame(c.reader(), cfg.MaxReceiveSize, nil)
		switch {
		case errors.Is(err, wire.ErrFrameTooLarge):
			err = &authFailure{err: fmt.Errorf("failing SASL authentication due to invalid receive size (sasl.server.max.receive.size): %w", err)}
		case err != nil:
			return err
		default:
			err = x.handle(ctx, frame)
		}
	}
	var failed *authFailure
	if errors.As(err, &failed) {
		c.srv.cfg.Logger.Info("failed authentication", "listener", c.srv.cfg.Listener, "remote", c.nc.RemoteAddr(),
			"mechanism", x.mechanism, "reauthentication", x.reauth, "err", failed.err)
		c.waitFailedDelay(ctx)
	}
	return err
}

// waitFailedDelay holds a failed connection open: its answer goes out,
// nothing more is read, and it closes when the delay ends.
func (c *Conn) waitFailedDelay(ctx context.Context) {
	d := c.srv.cfg.SASL.FailedAuthenticationDelay
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (x *exchange) now() time.Time {
	if x.cfg.Now != nil {
		return x.cfg.Now()
	}
	return time.Now()
}

// handle takes one frame of the exchange.
func (x *exchange) handle(ctx context.Context, frame []byte) error {
	if x.step == stepAuthenticate && !x.framed {
		return x.rawToken(frame)
	}
	req, err := wire.ParseRequest(frame, x.c.srv.cfg.Versions)
	if err != nil {
		return &authFailure{err: err}
	}
	key := kmsg.Key(req.Header.APIKey)
	switch {
	case x.step == stepAuthenticate && key == kmsg.SASLAuthenticate:
		return x.authenticateRequest(req)
	case x.step == stepAuthenticate:
		return failAuth("ILLEGAL_SASL_STATE: unexpected Kafka request of type %s during SASL authentication", kmsg.NameForKey(int16(key)))
	case key == kmsg.ApiVersions && x.step == stepFirst:
		resp, err := x.c.srv.cfg.Handler.Handle(ctx, x.c, req)
		if err != nil {
			return err
		}
		if resp != nil {
			x.c.send(req.Header.CorrelationID, resp)
		}
		if req.Body != nil {
			x.step = stepHandshake // one ApiVersions; a refused version may be retried
		}
		return nil
	case key == kmsg.SASLHandshake:
		return x.handshake(req)
	default:
		return failAuth("ILLEGAL_SASL_STATE: unexpected Kafka request of type %s during SASL handshake", kmsg.NameForKey(int16(key)))
	}
}

func (x *exchange) handshake(req wire.Request) error {
	body, ok := req.Body.(*kmsg.SASLHandshakeRequest)
	if !ok {
		return failAuth("SaslHandshake version %d is not supported", req.Header.APIVersion)
	}
	resp := body.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.Version = body.Version
	resp.SupportedMechanisms = slices.Clone(x.cfg.Mechanisms)
	x.mechanism = body.Mechanism
	if !slices.Contains(x.cfg.Mechanisms, body.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		x.c.send(req.Header.CorrelationID, resp)
		return failAuth("unsupported SASL mechanism %q", body.Mechanism)
	}
	x.c.send(req.Header.CorrelationID, resp)
	if x.reauth && body.Mechanism != x.c.sasl.mechanism {
		x.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
			body.Mechanism, x.c.sasl.mechanism)
	}
	x.framed = body.Version >= 1
	x.server = x.cfg.NewServer(body.Mechanism)
	x.step = stepAuthenticate
	return nil
}

// rawToken takes a token after SaslHandshake v0: the answer is the bare
// challenge, size-prefixed, and a failure is answered by closing.
func (x *exchange) rawToken(token []byte) error {
	if x.badMechanism != "" {
		return failAuth("%s", x.badMechanism)
	}
	challenge, done, err := x.evaluate(token)
	if err != nil {
		return &authFailure{err: err}
	}
	if done {
		x.complete()
	}
	b := getBuf(4 + len(challenge))
	b = binary.BigEndian.AppendUint32(b, uint32(len(challenge)))
	x.c.out <- outFrame{buf: append(b, challenge...)}
	return nil
}

func (x *exchange) authenticateRequest(req wire.Request) error {
	body, ok := req.Body.(*kmsg.SASLAuthenticateRequest)
	if !ok {
		return failAuth("SaslAuthenticate version %d is not supported", req.Header.APIVersion)
	}
	resp := body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.Version = body.Version
	fail := func(err error) error {
		msg := security.FailureMessage(err, x.mechanism, x.reauth)
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
		x.c.send(req.Header.CorrelationID, resp)
		return &authFailure{err: err}
	}
	if x.badMechanism != "" {
		return fail(&security.AuthenticationError{Message: x.badMechanism})
	}
	challenge, done, err := x.evaluate(body.SASLAuthBytes)
	if err != nil {
		return fail(err)
	}
	if challenge == nil {
		challenge = []byte{} // always answered, even when empty
	}
	resp.SASLAuthBytes = challenge
	if done {
		resp.SessionLifetimeMillis = x.complete().Milliseconds()
	}
	x.c.send(req.Header.CorrelationID, resp)
	return nil
}

// evaluate runs one step of the mechanism; a re-authentication must end
// with the principal the connection had.
func (x *exchange) evaluate(token []byte) ([]byte, bool, error) {
	challenge, done, err := x.server.Step(token)
	if err != nil || !done || !x.reauth {
		return challenge, done, err
	}
	if p, was := x.server.Principal(), x.c.principal; p != was {
		return nil, false, &security.AuthenticationError{Message: fmt.Sprintf(
			"Cannot change principals during re-authentication from %s.%s: %s.%s", was.Type, was.Name, p.Type, p.Name)}
	}
	return challenge, true, nil
}

// complete makes the client authenticated and returns its session
// lifetime (0: none). As in Kafka's SaslServerAuthenticator, a credential
// that expires (an OAUTHBEARER token) ends the session by its expiry even
// without connections.max.reauth.ms, and with it at the earlier of the
// two; a credential already expired (accepted within the clock skew)
// makes a session of 0 ms, which expires at once.
func (x *exchange) complete() time.Duration {
	x.done = true
	c := x.c
	c.principal = x.server.Principal()
	c.sasl.mechanism = x.mechanism
	t, ok := x.server.(security.TokenAuthenticated)
	c.sasl.token = ok && t.TokenAuthenticated()
	now := x.now()
	lifetime := max(x.cfg.SessionLifetime[x.mechanism], 0)
	expires := lifetime > 0
	if e, ok := x.server.(security.ExpiringCredential); ok && !e.CredentialExpiry().IsZero() {
		left := max(e.CredentialExpiry().Sub(now).Truncate(time.Millisecond), 0)
		if !expires || left < lifetime {
			lifetime = left
		}
		expires = true
	}
	c.sasl.expires = time.Time{}
	if expires {
		c.sasl.expires = now.Add(lifetime)
	}
	return lifetime
}

// mayReauthenticate reports whether a SaslHandshake on an authenticated
// connection begins a re-authentication, and notes its start: only when
// the session has a lifetime, and at most once a second.
func (c *Conn) mayReauthenticate() bool {
	s := &c.sasl
	if s.expires.IsZero() {
		return false
	}
	now := c.now()
	if !s.lastReauth.IsZero() && now.Sub(s.lastReauth) < minReauthInterval {
		return false
	}
	s.lastReauth = now
	return true
}

// sessionExpired reports whether the connection's SASL session has
// ended.
func (c *Conn) sessionExpired() bool {
	return !c.sasl.expires.IsZero() && c.now().After(c.sasl.expires)
}

func (c *Conn) now() time.Time {
	if n := c.srv.cfg.SASL.Now; n != nil {
		return n()
	}
	return time.Now()
}

// send queues a response for the writer.
func (c *Conn) send(correlationID int32, resp kmsg.Response) {
	c.out <- outFrame{buf: wire.AppendResponse(getBuf(wire.SizeHint(resp)), correlationID, resp)}
}
