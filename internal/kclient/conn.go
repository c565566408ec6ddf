// Package kclient is the small Kafka protocol client one Samsa node uses to
// talk to another: brokers to the active controller (registration,
// heartbeats, AlterPartition, forwarded admin requests) and followers to
// leaders (replica fetches). It speaks to Samsa only, so it needs none of a
// general client's machinery (metadata, routing, retries): one connection,
// versions negotiated once with ApiVersions, requests pipelined and matched
// to responses by correlation id. A Dialer adds TLS and SASL (sasl.go) to
// the dial, so a Conn is ready for requests when Dial returns.
package kclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/samsa-io/samsa/internal/wire"
)

// maxResponseSize bounds one response frame.
const maxResponseSize = 256 << 20

// ErrClosed is returned for requests on a closed or broken connection.
var ErrClosed = errors.New("kclient: connection closed")

// ErrSessionExpired is the ErrClosed of a request that was not sent
// because the connection's SASL session is about to end
// (connections.max.reauth.ms). Nothing failed: the caller sends the
// request again at once on a new connection. Requests sent before still
// get their answers, and the connection closes itself after the last.
var ErrSessionExpired = fmt.Errorf("%w: its SASL session is about to end", ErrClosed)

// Conn is one connection to a Kafka listener. It is safe for concurrent
// use; once broken (any I/O error) every request fails and the caller
// dials again.
type Conn struct {
	nc       net.Conn
	format   *kmsg.RequestFormatter
	versions map[int16][2]int16 // api key → server min, max

	writeMu sync.Mutex
	wbuf    []byte

	mu struct {
		sync.Mutex
		next    int32
		pending map[int32]*call
		err     error // set once broken
		// expiry, when set, is when the SASL session ends (sasl.go):
		// from then on the connection is retired: new requests fail
		// with ErrSessionExpired and it closes once pending is empty.
		expiry  time.Time
		retired bool
	}
	done chan struct{}
}

type call struct {
	resp kmsg.Response
	ch   chan error
}

// Dial connects to addr over plain TCP and learns the server's API
// versions.
func Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	return Dialer{}.Dial(ctx, addr, clientID)
}

// Dialer dials node-to-node connections: plain TCP, or TLS when the
// listener dialed is an SSL listener.
type Dialer struct {
	// TLS, when set, returns the TLS configuration for dialing addr
	// (host:port); the connection is then TLS from its first byte, and
	// the handshake is part of the dial.
	TLS func(addr string) *tls.Config
	// SASL, when set, returns the mechanism to authenticate with after
	// ApiVersions (a SASL_PLAINTEXT or SASL_SSL listener); a refused
	// login fails the dial with ErrAuthentication.
	SASL func() sasl.Mechanism
	// SASLHint, when set, is added to a refused login's error: which
	// credentials were used and where they are configured.
	SASLHint string
}

// Dial connects to addr and learns the server's API versions.
func (dl Dialer) Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	var nc net.Conn
	var err error
	if dl.TLS != nil {
		d := tls.Dialer{Config: dl.TLS(addr)}
		nc, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	c := &Conn{
		nc:     nc,
		format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		done:   make(chan struct{}),
	}
	c.mu.pending = make(map[int32]*call)
	go c.readLoop()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "samsa"
	req.ClientSoftwareVersion = "1"
	req.SetVersion(3)
	resp, err := c.do(ctx, req)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("api versions from %s: %w", addr, err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if err := kerr.ErrorForCode(av.ErrorCode); err != nil {
		c.Close()
		return nil, fmt.Errorf("api versions from %s: %w", addr, err)
	}
	c.versions = make(map[int16][2]int16, len(av.ApiKeys))
	for _, k := range av.ApiKeys {
		c.versions[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if dl.SASL != nil {
		if err := c.authenticate(ctx, addr, dl.SASL()); err != nil {
			c.Close()
			if dl.SASLHint != "" && errors.Is(err, ErrAuthentication) {
				err = fmt.Errorf("%w (%s)", err, dl.SASLHint)
			}
			return nil, err
		}
	}
	return c, nil
}

// Addr is the remote address.
func (c *Conn) Addr() string { return c.nc.RemoteAddr().String() }

// Request sends req at the highest version both sides know and returns the
// response. An error means the connection is unusable or ctx ended.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	v, ok := c.versions[req.Key()]
	if !ok {
		return nil, fmt.Errorf("%s does not serve %s: %w", c.Addr(), kmsg.NameForKey(req.Key()), kerr.UnsupportedVersion)
	}
	version := min(req.MaxVersion(), v[1])
	if version < v[0] {
		return nil, fmt.Errorf("%s serves %s from version %d, we know up to %d: %w", c.Addr(), kmsg.NameForKey(req.Key()), v[0], req.MaxVersion(), kerr.UnsupportedVersion)
	}
	req.SetVersion(version)
	return c.do(ctx, req)
}

// RequestAsIs sends req at the version it carries, which Request would
// change: a request forwarded for a client must be encoded, and its
// response decoded, in the client's version. It fails with
// UNSUPPORTED_VERSION when the server does not serve that version.
func (c *Conn) RequestAsIs(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	v, ok := c.versions[req.Key()]
	if !ok || req.GetVersion() < v[0] || req.GetVersion() > v[1] {
		return nil, fmt.Errorf("%s does not serve %s v%d: %w", c.Addr(), kmsg.NameForKey(req.Key()), req.GetVersion(), kerr.UnsupportedVersion)
	}
	return c.do(ctx, req)
}

// Versions returns the server's version range for an API.
func (c *Conn) Versions(key int16) (minV, maxV int16, ok bool) {
	v, ok := c.versions[key]
	return v[0], v[1], ok
}

func (c *Conn) do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	cl := &call{resp: req.ResponseKind(), ch: make(chan error, 1)}
	cl.resp.SetVersion(req.GetVersion())
	c.mu.Lock()
	if c.mu.err == nil && !c.mu.expiry.IsZero() && time.Now().After(c.mu.expiry) {
		c.mu.retired = true
	}
	if c.mu.err == nil && c.mu.retired {
		idle := len(c.mu.pending) == 0
		c.mu.Unlock()
		if idle {
			c.close(ErrSessionExpired)
		}
		return nil, ErrSessionExpired
	}
	if c.mu.err != nil {
		err := c.mu.err
		c.mu.Unlock()
		return nil, err
	}
	id := c.mu.next
	c.mu.next++
	c.mu.pending[id] = cl
	c.mu.Unlock()

	c.writeMu.Lock()
	c.wbuf = c.format.AppendRequest(c.wbuf[:0], req, id)
	if dl, ok := ctx.Deadline(); ok {
		c.nc.SetWriteDeadline(dl)
	} else {
		c.nc.SetWriteDeadline(time.Time{})
	}
	_, err := c.nc.Write(c.wbuf)
	c.writeMu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("write to %s: %w", c.Addr(), err))
	}
	select {
	case err := <-cl.ch:
		if err != nil {
			return nil, err
		}
		return cl.resp, nil
	case <-ctx.Done():
		// The response may still come; the reader drops it.
		if c.forget(id) {
			c.close(ErrSessionExpired)
		}
		return nil, ctx.Err()
	}
}

// forget removes request id, whose caller gave up, from pending and
// reports whether the connection is retired and awaits no other
// answer: then the caller closes it.
func (c *Conn) forget(id int32) (drained bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.pending, id)
	return c.mu.retired && len(c.mu.pending) == 0
}

func (c *Conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var buf []byte
	for {
		frame, err := wire.ReadFrame(br, maxResponseSize, buf)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			c.fail(fmt.Errorf("read from %s: %w", c.Addr(), err))
			return
		}
		buf = frame[:0]
		if len(frame) < 4 {
			c.fail(fmt.Errorf("response from %s: %d-byte frame", c.Addr(), len(frame)))
			return
		}
		if c.deliver(frame) {
			// Retired, and that was the last answer awaited.
			c.close(ErrSessionExpired)
			return
		}
	}
}

// deliver hands a response frame to the request it answers and reports
// whether the connection is retired and awaits no other answer.
func (c *Conn) deliver(frame []byte) (drained bool) {
	id := int32(binary.BigEndian.Uint32(frame))
	c.mu.Lock()
	cl := c.mu.pending[id]
	delete(c.mu.pending, id)
	drained = c.mu.retired && len(c.mu.pending) == 0
	c.mu.Unlock()
	if cl == nil {
		return drained // its caller gave up
	}
	body := frame[4:]
	// Flexible responses carry a tag buffer in their header, except
	// ApiVersions, whose header stays v0 so old clients can read it.
	if cl.resp.IsFlexible() && cl.resp.Key() != kmsg.ApiVersions.Int16() {
		if len(body) < 1 || body[0] != 0 {
			cl.ch <- fmt.Errorf("response from %s: unexpected header tags", c.Addr())
			return drained
		}
		body = body[1:]
	}
	// Copy: the frame buffer is reused and responses alias their input.
	cl.ch <- cl.resp.ReadFrom(append([]byte(nil), body...))
	return drained
}

// fail breaks the connection, failing every pending request.
func (c *Conn) fail(err error) { c.close(fmt.Errorf("%w: %v", ErrClosed, err)) }

// close closes the connection for good: pending and later requests fail
// with err, which wraps ErrClosed.
func (c *Conn) close(err error) {
	c.mu.Lock()
	if c.mu.err == nil {
		c.mu.err = err
		close(c.done)
		c.nc.Close()
	}
	pending := c.mu.pending
	c.mu.pending = make(map[int32]*call)
	err = c.mu.err
	c.mu.Unlock()
	for _, cl := range pending {
		cl.ch <- err
	}
}

// Done is closed when the connection breaks or is closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close closes the connection; pending requests fail.
func (c *Conn) Close() error {
	c.fail(errors.New("closed by caller"))
	return nil
}
