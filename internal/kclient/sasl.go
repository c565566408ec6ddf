package kclient

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/samsa-io/samsa/internal/wire"
)

// SASL on node-to-node connections: after ApiVersions, the client side of
// Kafka's SaslHandshake v1 + SaslAuthenticate exchange (KIP-152), with a
// franz-go mechanism (pkg/sasl/plain, pkg/sasl/scram) producing the
// tokens. SCRAM's mechanism checks the server's signature in the final
// message, so a node also knows it talks to a server that holds the
// credential. The exchange is part of the dial: a Conn returned by Dial
// is authenticated, and nothing else is sent before it is.

// ErrAuthentication wraps a failed SASL exchange, so callers can tell a
// refused login (a configuration error that retrying will not fix) from a
// network failure.
var ErrAuthentication = errors.New("kclient: SASL authentication failed")

// authenticate runs the SASL exchange of mech on a fresh connection.
func (c *Conn) authenticate(ctx context.Context, addr string, mech sasl.Mechanism) error {
	if _, maxV, ok := c.Versions(kmsg.SASLHandshake.Int16()); !ok || maxV < 1 {
		return fmt.Errorf("%w: %s does not serve SaslHandshake v1", ErrAuthentication, addr)
	}
	authV := int16(2)
	if _, maxV, ok := c.Versions(kmsg.SASLAuthenticate.Int16()); ok {
		authV = min(authV, maxV)
	}
	lifetime, err := exchangeSASL(ctx, addr, mech, authV, c.do)
	if lifetime > 0 {
		c.setExpiry(lifetime)
	}
	return err
}

// AuthenticateRaw runs the client side of a SASL exchange on nc, one
// request at a time and without ApiVersions (Kafka lets SaslHandshake
// come first), and leaves nc right after the last response: the raft
// transport authenticates this way before its own protocol starts on
// the same connection.
func AuthenticateRaw(ctx context.Context, nc net.Conn, mech sasl.Mechanism) error {
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	format := kmsg.NewRequestFormatter(kmsg.FormatterClientID("samsa-raft"))
	var id int32
	do := func(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
		id++
		if _, err := nc.Write(format.AppendRequest(nil, req, id)); err != nil {
			return nil, err
		}
		frame, err := wire.ReadFrame(nc, maxResponseSize, nil)
		if err != nil {
			return nil, err
		}
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		if err := decodeResponse(resp, frame, id); err != nil {
			return nil, err
		}
		return resp, nil
	}
	_, err := exchangeSASL(ctx, nc.RemoteAddr().String(), mech, 2, do)
	return err
}

// decodeResponse reads a response frame (correlation id, header tags,
// body) into resp.
func decodeResponse(resp kmsg.Response, frame []byte, id int32) error {
	if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != id {
		return fmt.Errorf("response with an unexpected correlation id")
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		if len(body) < 1 || body[0] != 0 {
			return fmt.Errorf("unexpected response header tags")
		}
		body = body[1:]
	}
	return resp.ReadFrom(body)
}

// exchangeSASL is the exchange itself: SaslHandshake v1 naming the
// mechanism, then SaslAuthenticate (version authV) rounds until the
// mechanism is done. It returns the session lifetime the server set.
func exchangeSASL(ctx context.Context, addr string, mech sasl.Mechanism, authV int16,
	do func(context.Context, kmsg.Request) (kmsg.Response, error)) (time.Duration, error) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech.Name()
	hs.SetVersion(1)
	r, err := do(ctx, hs)
	if err != nil {
		return 0, fmt.Errorf("sasl handshake with %s: %w", addr, err)
	}
	hr := r.(*kmsg.SASLHandshakeResponse)
	if err := kerr.ErrorForCode(hr.ErrorCode); err != nil {
		return 0, fmt.Errorf("%w: %s refuses mechanism %s (it enables %v): %w", ErrAuthentication, addr, mech.Name(), hr.SupportedMechanisms, err)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	session, token, err := mech.Authenticate(ctx, host)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrAuthentication, mech.Name(), err)
	}
	var lifetime time.Duration
	for done := false; !done; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = token
		req.SetVersion(authV)
		resp, err := do(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("sasl authenticate with %s: %w", addr, err)
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
			msg := ""
			if ar.ErrorMessage != nil {
				msg = ": " + *ar.ErrorMessage
			}
			return 0, fmt.Errorf("%w: %s with %s%s (%w)", ErrAuthentication, mech.Name(), addr, msg, err)
		}
		if ar.SessionLifetimeMillis > 0 {
			lifetime = time.Duration(ar.SessionLifetimeMillis) * time.Millisecond
		}
		if done, token, err = session.Challenge(ar.SASLAuthBytes); err != nil {
			return 0, fmt.Errorf("%w: %s with %s: %w", ErrAuthentication, mech.Name(), addr, err)
		}
		if done && len(token) > 0 {
			return 0, fmt.Errorf("%w: %s with %s: the mechanism has a last message, which SaslAuthenticate cannot carry", ErrAuthentication, mech.Name(), addr)
		}
	}
	return lifetime, nil
}

// setExpiry notes a session lifetime (connections.max.reauth.ms on the
// server). Rather than re-authenticate a pipelined connection, the
// Conn stops taking requests a little before the server would close it
// (ErrSessionExpired: the caller sends them on a new connection), and
// closes once the requests already sent have their answers.
func (c *Conn) setExpiry(lifetime time.Duration) {
	margin := min(max(lifetime/20, time.Second), lifetime/2)
	c.mu.Lock()
	c.mu.expiry = time.Now().Add(max(lifetime-margin, 0))
	c.mu.Unlock()
}
