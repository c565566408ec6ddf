package network

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metrics"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// Handler answers requests. A nil response sends nothing (Produce with
// acks=0); an error closes the connection.
type Handler interface {
	Handle(ctx context.Context, c *Conn, req wire.Request) (kmsg.Response, error)
}

// Config configures a Server.
type Config struct {
	// Listener is the name of the listener, e.g. PLAINTEXT; for logs and for
	// handlers that answer differently per listener.
	Listener string
	// MaxRequestSize is socket.request.max.bytes: a larger frame closes the
	// connection before anything is allocated for it.
	MaxRequestSize int32
	// RequestBudget bounds the bytes of requests read and not yet
	// answered, across every connection sharing it
	// (queued.max.request.bytes); see serveOne. Nil: unbounded.
	RequestBudget *record.Budget
	Handler       Handler
	Versions      *wire.VersionTable
	Logger        *slog.Logger

	// TLS, when set, makes this an SSL listener: a connection's first
	// bytes must be a TLS handshake, which runs on the connection's own
	// goroutine (never the accept loop) within HandshakeTimeout. A
	// failed handshake (plaintext bytes, an untrusted or missing client
	// certificate) closes that connection only; nothing unencrypted
	// reaches the Handler.
	TLS *tls.Config
	// HandshakeTimeout bounds the TLS handshake, so a client that
	// connects and sends nothing holds nothing for long; 0 means 10 s.
	HandshakeTimeout time.Duration
	// TLSPrincipal, when set, turns the handshake's state into the
	// connection's principal (the mapped subject of the client's
	// certificate); its error closes the connection, as Kafka fails the
	// authentication. It also applies to a listener whose connections
	// arrive already under TLS (their net.Conn has ConnectionState).
	TLSPrincipal func(tls.ConnectionState) (security.Principal, error)

	// SASL, when set, makes every client authenticate with SASL before
	// its first request reaches Handler (sasl.go), after the TLS
	// handshake on a SASL_SSL listener; the principal is then the SASL
	// one. Nil serves clients as they connect (or as TLS made them).
	SASL *SASLConfig

	// Connections, when set, limits the connections accepted
	// (connquota.go); the broker's client listeners share one. Nil
	// accepts every connection.
	Connections *ConnectionQuotas

	// Requests counts requests and their time by API
	// (kafka.network:type=RequestMetrics); nil counts nothing.
	Requests *metrics.Requests
}

// defaultHandshakeTimeout is Java clients' socket.connection.setup.timeout.ms.
const defaultHandshakeTimeout = 10 * time.Second

// Server serves one listener.
type Server struct {
	cfg Config
	ln  net.Listener

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[*Conn]struct{}
}

// Conn is one client connection, as handlers see it.
type Conn struct {
	srv *Server
	nc  net.Conn // a *tls.Conn on an SSL listener
	raw net.Conn // the socket under nc, closed to stop the connection at once
	// in buffers the reads of nc (reader goroutine only): a small request
	// (a fetch, a heartbeat) and its size come in one read system call,
	// and pipelined requests share one. Nil on a connection authenticated
	// for someone else (AuthenticateConn), who reads nc afterwards.
	in  *bufio.Reader
	out chan outFrame
	// vectored: a fetch answer's record batches in memory are written
	// from where they are, with writev; sendfile: nc is a plain TCP
	// socket, so batches in files are sent from them (sendfile.go).
	vectored, sendfile bool
	// principal is who the client authenticated as, and sasl its SASL
	// session; only the reader goroutine, which runs the handshakes and
	// the handlers, touches them.
	principal security.Principal
	sasl      saslSession
	// addr is the client's address, as Connections counts it.
	addr netip.Addr
	// mute is how long to stop reading after the current request
	// (Throttle), netTime what NetworkTime returns; owned by the reader
	// goroutine too.
	mute, netTime time.Duration
}

// Principal is who the client authenticated as (security.Anonymous
// when it did not).
func (c *Conn) Principal() security.Principal { return c.principal }

// TokenAuthenticated reports whether the client authenticated with a
// delegation token.
func (c *Conn) TokenAuthenticated() bool { return c.sasl.token }

// UsesSASL reports whether the connection's listener authenticates
// clients with SASL.
func (c *Conn) UsesSASL() bool { return c.srv.cfg.SASL != nil }

// Listener names the listener the connection arrived on.
func (c *Conn) Listener() string { return c.srv.cfg.Listener }

// TLSState is the connection's TLS state once its handshake is done;
// false on a plaintext connection.
func (c *Conn) TLSState() (tls.ConnectionState, bool) {
	if tc, ok := c.nc.(interface{ ConnectionState() tls.ConnectionState }); ok {
		st := tc.ConnectionState()
		return st, st.HandshakeComplete
	}
	return tls.ConnectionState{}, false
}

// RemoteAddr is the client's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Serve starts serving on ln and returns at once. Close stops it.
func Serve(ln net.Listener, cfg Config) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, ln: ln, ctx: ctx, cancel: cancel, conns: make(map[*Conn]struct{})}
	s.wg.Add(1)
	go s.accept()
	return s
}

// Name is the listener's name.
func (s *Server) Name() string { return s.cfg.Listener }

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting, closes every connection and waits for all of the
// server's goroutines to end.
func (s *Server) Close() error {
	s.cancel()
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.raw.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				s.cfg.Logger.Error("accept failed", "listener", s.cfg.Listener, "err", err)
			}
			return
		}
		addr := remoteAddr(nc)
		if !s.admit(nc, addr) {
			if s.ctx.Err() != nil {
				return
			}
			continue
		}
		c := &Conn{srv: s, nc: nc, raw: nc, out: make(chan outFrame, 64), principal: security.Anonymous, addr: addr}
		_, tcp := nc.(*net.TCPConn)
		c.vectored = tcp && vectoredWrites
		if s.cfg.TLS != nil {
			c.nc = tls.Server(nc, s.cfg.TLS) // no I/O until the reader's handshake
		}
		_, c.sendfile = c.nc.(*net.TCPConn)
		c.sendfile = c.sendfile && sendfileWrites
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			nc.Close()
			s.release(c)
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(2)
		go c.write()
		go c.read()
	}
}

// admit applies the connection quotas to a new connection and reports
// whether to serve it. It may wait first; a connection over its address's
// rate is closed after its throttle time (Kafka's delayed close), one
// over its address's count at once.
func (s *Server) admit(nc net.Conn, addr netip.Addr) bool {
	q := s.cfg.Connections
	if q == nil {
		return true
	}
	d, err := q.admit(s.ctx, s.cfg.Listener, addr)
	var tooMany *tooManyConnections
	switch {
	case err == nil:
		return true
	case errors.Is(err, errConnectionThrottled):
		s.cfg.Logger.Debug("delaying closing of connection over its address's connection_creation_rate", "listener", s.cfg.Listener, "remote", addr, "throttle", d)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-s.ctx.Done():
			}
			nc.Close()
		}()
		return false
	case errors.As(err, &tooMany):
		s.cfg.Logger.Info("rejected connection", "listener", s.cfg.Listener, "remote", addr, "err", err)
	}
	nc.Close()
	return false
}

// release gives c's place back to the connection quotas.
func (s *Server) release(c *Conn) {
	if q := s.cfg.Connections; q != nil {
		q.release(s.cfg.Listener, c.addr)
	}
}

// read owns the read side: frames in, one request handled at a time,
// responses queued for the writer in order.
func (c *Conn) read() {
	s := c.srv
	defer s.wg.Done()
	defer func() {
		close(c.out) // the writer drains what is queued, then closes the socket
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.release(c)
	}()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	if err := c.handshake(ctx); err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Info("closing connection: authentication failed", "listener", s.cfg.Listener, "remote", c.nc.RemoteAddr(), "err", err)
		}
		return
	}
	c.in = bufio.NewReaderSize(c.nc, readBufferBytes)
	if s.cfg.SASL != nil {
		if err := c.authenticate(ctx, nil); err != nil {
			c.logClose(ctx, err)
			return
		}
	}
	for c.serveOne(ctx) {
	}
}

// uncountedFrameBytes is the frame size up to which a request does not
// draw on the request budget. Each connection has one request in flight,
// so small ones are bounded by the connection count; and the requests a
// full budget's holders wait on (followers' fetches, heartbeats, the
// controller's answers) are small, so they can never be shut out by them.
const uncountedFrameBytes = 64 << 10

// serveOne reads, handles and queues the answer of one request; false
// ends the connection. A frame above uncountedFrameBytes first waits for
// its size in the request budget, before its body is allocated or read
// (beyond what the connection's read buffer, readBufferBytes, already
// holds), and holds it until the handler returns: like Kafka's memory
// pool, a full budget stops reading from sockets rather than growing the
// heap.
func (c *Conn) serveOne(ctx context.Context) bool {
	s := c.srv
	n, err := wire.ReadFrameSize(c.reader(), s.cfg.MaxRequestSize)
	if err == nil && n > uncountedFrameBytes {
		var charge int64
		charge, err = s.cfg.RequestBudget.Acquire(ctx, int64(n))
		defer s.cfg.RequestBudget.Release(charge)
	}
	var frame []byte
	if err == nil {
		frame, err = c.readBody(n)
	}
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
			s.cfg.Logger.Info("closing connection", "remote", c.nc.RemoteAddr(), "err", err)
		}
		return false
	}
	parsing := time.Now()
	req, err := wire.ParseRequest(frame, s.cfg.Versions)
	c.netTime += time.Since(parsing)
	if err != nil {
		s.cfg.Logger.Info("closing connection", "remote", c.nc.RemoteAddr(), "err", err)
		return false
	}
	if s.cfg.SASL != nil {
		if kmsg.Key(req.Header.APIKey) == kmsg.SASLHandshake && c.mayReauthenticate() {
			err := c.authenticate(ctx, &req)
			c.logClose(ctx, err)
			return err == nil
		}
		if c.sessionExpired() {
			s.cfg.Logger.Info("closing connection: its SASL session expired (connections.max.reauth.ms)", "remote", c.nc.RemoteAddr(),
				"principal", c.principal.String(), "api", kmsg.NameForKey(req.Header.APIKey))
			return false
		}
	}
	resp, err := s.cfg.Handler.Handle(ctx, c, req)
	if kmsg.Key(req.Header.APIKey) == kmsg.Produce {
		// Nothing keeps a Produce request's bytes once it is handled: the
		// batches were copied into the log by its write (or refused), the
		// decoded strings are copies, and the answer holds none of them.
		defer putBuf(frame)
	}
	if err != nil && ctx.Err() != nil {
		return false // shutting down
	}
	if err != nil {
		s.cfg.Logger.Info("closing connection", "remote", c.nc.RemoteAddr(),
			"api", kmsg.NameForKey(req.Header.APIKey), "version", req.Header.APIVersion, "err", err)
		return false
	}
	if resp != nil {
		encoding := time.Now()
		f, err := c.encode(req.Header.CorrelationID, resp)
		if err != nil {
			s.cfg.Logger.Warn("closing connection: encoding the answer failed", "remote", c.nc.RemoteAddr(),
				"api", kmsg.NameForKey(req.Header.APIKey), "err", err)
			return false
		}
		c.out <- f
		c.netTime = time.Since(encoding) // counted with the next request
	}
	s.cfg.Requests.Done(req.Header.APIKey, req.Header.APIVersion, parsing)
	if d := c.mute; d > 0 {
		// Throttled for a quota: as Kafka mutes the channel, read
		// nothing more from this client until the time is over. A
		// request without an answer (acks=0) is muted all the same.
		c.mute = 0
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// readBody reads the n bytes of a request frame into a buffer of its
// own: decoded bodies alias it, and a handler may keep what it decoded (a
// group member's metadata). A Produce request past a page is read into a
// pooled buffer, which serveOne gives back once the request is handled;
// its API key, read first, tells which kind a frame is.
func (c *Conn) readBody(n int32) ([]byte, error) {
	if n <= 1<<minBufClass {
		return wire.ReadFrameBody(c.reader(), n, nil)
	}
	var key [2]byte
	if _, err := io.ReadFull(c.reader(), key[:]); err != nil {
		return nil, unexpectedEOF(err)
	}
	var buf []byte
	if kmsg.Key(binary.BigEndian.Uint16(key[:])) == kmsg.Produce {
		buf = getBuf(int(n))[:n]
	} else {
		buf = make([]byte, n)
	}
	copy(buf, key[:])
	if _, err := io.ReadFull(c.reader(), buf[len(key):]); err != nil {
		return nil, unexpectedEOF(err)
	}
	return buf, nil
}

// readBufferBytes is the size of a connection's read buffer: a page
// holds any fetch, metadata or group request; a larger frame's body is
// read past it, straight into its own buffer.
const readBufferBytes = 4 << 10

// reader is where the connection's frames are read from.
func (c *Conn) reader() io.Reader {
	if c.in != nil {
		return c.in
	}
	return c.nc
}

// unexpectedEOF is err, with a frame cut short by the peer's close said so.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// NetworkTime returns, once, the time this connection's goroutine spent
// on the client's requests outside the handler: parsing the current one
// and encoding the previous answer. A request quota counts it with the
// current request (Kafka records network thread time after the response
// is sent, so it weighs on the client's next request). Only the handler
// of the connection's current request may call it.
func (c *Conn) NetworkTime() time.Duration {
	d := c.netTime
	c.netTime = 0
	return d
}

// Throttle mutes the connection for d once the request being handled is
// answered, or handled when it gets no answer: nothing more is read from
// the client until then (Kafka's ClientQuotaManager.throttle mutes the
// channel). Of several calls the longest applies. Only the handler of the
// connection's current request may call it.
func (c *Conn) Throttle(d time.Duration) { c.mute = max(c.mute, d) }

// logClose logs why a connection is closed, unless it simply ended, the
// server is shutting down, or err is nil. A failed authentication was
// logged already.
func (c *Conn) logClose(ctx context.Context, err error) {
	var failed *authFailure
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || ctx.Err() != nil || errors.As(err, &failed) {
		return
	}
	c.srv.cfg.Logger.Info("closing connection", "remote", c.nc.RemoteAddr(), "err", err)
}

// encode makes the frame of a response. A fetch answer on a plain TCP
// socket keeps its record batches where they are (wire.AppendFetchFrame):
// only the bytes around them are copied into the frame buffer; one whose
// batches are in files is sendfile.go's. An error (a file that could not
// be read) ends the connection.
func (c *Conn) encode(correlationID int32, resp kmsg.Response) (outFrame, error) {
	switch f := resp.(type) {
	case *wire.FetchWithFiles:
		return c.encodeWithFiles(correlationID, f)
	case *kmsg.FetchResponse:
		if !c.vectored {
			break
		}
		if buf, bufs, ok := wire.AppendFetchFrame(getBuf(wire.FetchHeadSizeHint(f)), correlationID, f); ok {
			return outFrame{buf: buf, bufs: bufs}, nil
		}
	}
	return outFrame{buf: wire.AppendResponse(getBuf(wire.SizeHint(resp)), correlationID, resp)}, nil
}

// write owns the socket's write side. On a write error it closes the socket,
// which ends the reader, and drains the queue so the reader never blocks.
func (c *Conn) write() {
	defer c.srv.wg.Done()
	defer c.nc.Close()
	for f := range c.out {
		if err := f.writeTo(c.nc); err != nil {
			c.nc.Close()
			for f := range c.out {
				f.discard()
			}
			return
		}
	}
}

// handshake runs the TLS handshake of an SSL listener's connection, with
// a deadline, and sets the connection's principal from it.
func (c *Conn) handshake(ctx context.Context) error {
	s := c.srv
	if tc, ok := c.nc.(*tls.Conn); ok && s.cfg.TLS != nil {
		timeout := s.cfg.HandshakeTimeout
		if timeout <= 0 {
			timeout = defaultHandshakeTimeout
		}
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			return fmt.Errorf("TLS handshake: %w", err)
		}
	}
	st, ok := c.TLSState()
	if !ok || s.cfg.TLSPrincipal == nil {
		return nil
	}
	p, err := s.cfg.TLSPrincipal(st)
	if err != nil {
		return err
	}
	c.principal = p
	return nil
}
