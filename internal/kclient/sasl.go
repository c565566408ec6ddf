package kclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
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
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech.Name()
	if _, maxV, ok := c.Versions(kmsg.SASLHandshake.Int16()); !ok || maxV < 1 {
		return fmt.Errorf("%w: %s does not serve SaslHandshake v1", ErrAuthentication, addr)
	}
	hs.SetVersion(1)
	r, err := c.do(ctx, hs)
	if err != nil {
		return fmt.Errorf("sasl handshake with %s: %w", addr, err)
	}
	hr := r.(*kmsg.SASLHandshakeResponse)
	if err := kerr.ErrorForCode(hr.ErrorCode); err != nil {
		return fmt.Errorf("%w: %s refuses mechanism %s (it enables %v): %w", ErrAuthentication, addr, mech.Name(), hr.SupportedMechanisms, err)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	session, token, err := mech.Authenticate(ctx, host)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAuthentication, mech.Name(), err)
	}
	for done := false; !done; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = token
		resp, err := c.Request(ctx, req)
		if err != nil {
			return fmt.Errorf("sasl authenticate with %s: %w", addr, err)
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
			msg := ""
			if ar.ErrorMessage != nil {
				msg = ": " + *ar.ErrorMessage
			}
			return fmt.Errorf("%w: %s with %s%s (%w)", ErrAuthentication, mech.Name(), addr, msg, err)
		}
		if ar.SessionLifetimeMillis > 0 {
			c.setExpiry(time.Duration(ar.SessionLifetimeMillis) * time.Millisecond)
		}
		if done, token, err = session.Challenge(ar.SASLAuthBytes); err != nil {
			return fmt.Errorf("%w: %s with %s: %w", ErrAuthentication, mech.Name(), addr, err)
		}
		if done && len(token) > 0 {
			return fmt.Errorf("%w: %s with %s: the mechanism has a last message, which SaslAuthenticate cannot carry", ErrAuthentication, mech.Name(), addr)
		}
	}
	return nil
}

// setExpiry notes a session lifetime (connections.max.reauth.ms on the
// server). Rather than re-authenticate a pipelined connection, the
// Conn stops taking requests a little before the server would close it,
// and the caller dials again, as it does for any broken connection.
func (c *Conn) setExpiry(lifetime time.Duration) {
	margin := max(lifetime/20, time.Second)
	c.mu.Lock()
	c.mu.expiry = time.Now().Add(max(lifetime-margin, 0))
	c.mu.Unlock()
}
