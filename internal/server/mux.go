package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// The controller listener carries two protocols on one port: the raft
// transport and Kafka requests (splitListener tells them apart by their
// first bytes). Its Kafka requests go to two owners (controllerMux): the
// controller's API table (internal/controller: registration, heartbeats,
// AlterPartition, producer id blocks and the admin requests brokers
// forward, bare or in an Envelope naming the client) and the raft
// leader's metadata log, which observers fetch (raft.MetadataLog).

// The controller listener serves the nodes only. With an authorizer,
// every Kafka request on it but ApiVersions and the SASL exchange, and
// every raft connection, needs CLUSTER_ACTION on the cluster — what
// Kafka's ControllerApis asks of the requests nodes send (registration,
// heartbeats, AlterPartition, the quorum's own) and of the Envelope a
// broker wraps forwarded admin requests in. The broker has authorized the
// client before forwarding (bare or in an Envelope), so the sender's
// CLUSTER_ACTION covers what it forwards. Until the ACLs
// of a first image are loaded only super users pass, as with Kafka's
// StandardAuthorizer: the nodes' own principals must be super users for
// a restarted quorum to form again.

// controllerMux serves the Kafka requests of the controller listener.
type controllerMux struct {
	ctrl     *controller.Controller
	meta     *raft.MetadataLog
	versions *wire.VersionTable
	authz    *security.Authorizer // nil: authorization is off
}

// newControllerMux serves ctrl and rn's metadata log; withSASL (a SASL
// controller listener) advertises the SASL exchange's APIs too, which the
// network layer serves before any other request.
func newControllerMux(ctrl *controller.Controller, rn *raft.Node, withSASL bool, authz *security.Authorizer) *controllerMux {
	ranges := []wire.VersionRange{{Key: kmsg.ApiVersions, Min: 0, Max: 4}, {Key: kmsg.Envelope, Min: 0, Max: 0}}
	if withSASL {
		ranges = append(ranges, wire.VersionRange{Key: kmsg.SASLHandshake, Min: 0, Max: 1}, wire.VersionRange{Key: kmsg.SASLAuthenticate, Min: 0, Max: 2})
	}
	for _, a := range raft.ObserverAPIs() {
		ranges = append(ranges, wire.VersionRange{Key: a.Key, Min: a.Min, Max: a.Max})
	}
	for _, a := range controller.APIs() {
		ranges = append(ranges, wire.VersionRange{Key: a.Key, Min: a.Min, Max: a.Max})
	}
	return &controllerMux{ctrl: ctrl, meta: raft.NewMetadataLog(rn), versions: wire.NewVersionTable(ranges...), authz: authz}
}

// Handle implements network.Handler.
func (m *controllerMux) Handle(ctx context.Context, c *network.Conn, req wire.Request) (kmsg.Response, error) {
	key := kmsg.Key(req.Header.APIKey)
	if key == kmsg.ApiVersions {
		return m.apiVersions(req), nil
	}
	if req.Body == nil {
		return nil, fmt.Errorf("controller listener: unsupported API %s version %d", kmsg.NameForKey(int16(key)), req.Header.APIVersion)
	}
	var resp kmsg.Response
	switch {
	case key != kmsg.SASLHandshake && key != kmsg.SASLAuthenticate && !clusterAction(m.authz, c.Principal(), remoteHost(c.RemoteAddr())):
		resp = clusterAuthorizationFailed(req.Body)
	case key == kmsg.SASLHandshake || key == kmsg.SASLAuthenticate:
		// The network layer ran the exchange; one after it is out of
		// place, as on a broker listener.
		resp = req.Body.ResponseKind()
		switch r := resp.(type) {
		case *kmsg.SASLHandshakeResponse:
			r.ErrorCode = kerr.IllegalSaslState.Code
		case *kmsg.SASLAuthenticateResponse:
			r.ErrorCode = kerr.IllegalSaslState.Code
		}
	case key == kmsg.Fetch || key == kmsg.FetchSnapshot:
		resp = m.meta.Handle(ctx, req.Body)
	case key == kmsg.Envelope:
		resp = m.envelope(ctx, req.Body.(*kmsg.EnvelopeRequest))
	default:
		api, _ := controller.LookupAPI(key) // the version table lists only served keys
		resp = api.Serve(ctx, m.ctrl, req.Body)
	}
	resp.SetVersion(req.Body.GetVersion())
	return resp, nil
}

// clusterAction reports whether principal p, connected from host, may
// act as a node (CLUSTER_ACTION on the cluster); always with no
// authorizer.
func clusterAction(a *security.Authorizer, p security.Principal, host netip.Addr) bool {
	switch {
	case a == nil:
		return true
	case !a.Loaded():
		return a.IsSuperUser(p)
	}
	return a.Authorize(security.Request{Principal: p, Host: host, Op: kmsg.ACLOperationClusterAction,
		ResourceType: kmsg.ACLResourceTypeCluster, Name: security.ClusterName})
}

// remoteHost is the IP address of a TCP peer (the zero address for any
// other kind, which only matches ACLs of host "*").
func remoteHost(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort().Addr()
	}
	return netip.Addr{}
}

// clusterAuthorizationFailed answers req, refused for want of
// CLUSTER_ACTION, as Kafka's ControllerApis does: every error code of
// the response is CLUSTER_AUTHORIZATION_FAILED.
func clusterAuthorizationFailed(req kmsg.Request) kmsg.Response {
	code := kerr.ClusterAuthorizationFailed.Code
	if api, ok := controller.LookupAPI(kmsg.Key(req.Key())); ok && api.Forwarded() {
		return api.Failed(req, kerr.ClusterAuthorizationFailed)
	}
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		r.ErrorCode = code
	case *kmsg.BrokerHeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.AlterPartitionResponse:
		r.ErrorCode = code
	case *kmsg.AllocateProducerIDsResponse:
		r.ErrorCode = code
	case *kmsg.FetchResponse:
		r.ErrorCode = code
	case *kmsg.FetchSnapshotResponse:
		r.ErrorCode = code
	case *kmsg.EnvelopeResponse:
		r.ErrorCode = code
	default:
		// A new controller API must say how it is refused.
		panic("controller listener: no refusal for " + kmsg.NameForKey(req.Key()))
	}
	return resp
}

// envelope serves a client's request a broker forwarded in an Envelope
// (KIP-590; Kafka's ControllerApis.handleEnvelopeRequest): the embedded
// request is decided for the client the Envelope names, whose quotas
// apply (controller.WithRequester). Only the admin requests brokers
// forward may be embedded; a request that does not parse, or a principal
// that does not, is refused at the Envelope's level. Authorization stays
// with the broker that received the request (internal/broker,
// forward.go).
func (m *controllerMux) envelope(ctx context.Context, e *kmsg.EnvelopeRequest) kmsg.Response {
	resp := e.ResponseKind().(*kmsg.EnvelopeResponse)
	inner, err := wire.ParseRequest(e.RequestData, m.versions)
	api, ok := controller.LookupAPI(kmsg.Key(inner.Header.APIKey))
	switch {
	case err != nil:
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	case inner.Body == nil:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp
	case !ok || !api.Forwarded():
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	var p kmsg.DefaultPrincipalData
	if err := p.ReadFrom(e.RequestPrincipal); err != nil {
		resp.ErrorCode = kerr.PrincipalDeserializationFailure.Code
		return resp
	}
	r := controller.Requester{Principal: security.Principal{Type: p.Type, Name: p.Name}}
	if id := inner.Header.ClientID; id != nil {
		r.ClientID = *id
	}
	out := api.Serve(controller.WithRequester(ctx, r), m.ctrl, inner.Body)
	out.SetVersion(inner.Header.APIVersion)
	// AppendResponse writes the frame's size first; an Envelope embeds
	// the header and body only.
	resp.ResponseData = wire.AppendResponse(nil, inner.Header.CorrelationID, out)[4:]
	return resp
}

func (m *controllerMux) apiVersions(req wire.Request) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, r := range m.versions.All() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(r.Key), r.Min, r.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	if req.Body == nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp // version 0, so any client can read it
	}
	resp.SetVersion(req.Body.GetVersion())
	return resp
}

// raftMagic starts every raft transport connection (internal/raft's
// hello). As a Kafka size prefix it would be a 1.4 GB request, far above
// socket.request.max.bytes, so the two cannot be confused.
const raftMagic = "SMRT"

// splitListener shares the controller listener between the raft transport
// and Kafka-protocol clients (brokers registering, heartbeating, forwarding
// admin requests): it peeks at the first four bytes of each connection and
// hands it to one of two listeners.
type splitListener struct {
	ln     net.Listener
	logger *slog.Logger
	raft   *chanListener
	kafka  *chanListener
	wg     sync.WaitGroup
	// tls, when set (an SSL controller listener), is the TLS both
	// protocols run under: each connection's handshake is done before
	// its first bytes are peeked.
	tls *tls.Config
	// sasl, when set (a SASL controller listener), authenticates both
	// protocols: Kafka clients through the network layer as on any SASL
	// listener, raft connections here (authenticateRaft).
	sasl     *network.SASLConfig
	listener string
	// authz, when set, admits only raft connections whose principal may
	// act as a node (clusterAction); tlsPrincipal names the principal of
	// an SSL listener's connections.
	authz        *security.Authorizer
	tlsPrincipal func(tls.ConnectionState) (security.Principal, error)
}

func newSplitListener(ln net.Listener, logger *slog.Logger, tlsSrv *security.TLSServer, listener string, sasl *network.SASLConfig, authz *security.Authorizer) *splitListener {
	s := &splitListener{ln: ln, logger: logger, listener: listener, sasl: sasl, authz: authz,
		raft: newChanListener(ln.Addr()), kafka: newChanListener(ln.Addr())}
	if tlsSrv != nil {
		s.tls, s.tlsPrincipal = tlsSrv.Config(), tlsSrv.Principal
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s
}

func (s *splitListener) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.raft.close()
			s.kafka.close()
			return
		}
		go s.route(c)
	}
}

func (s *splitListener) route(c net.Conn) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if s.tls != nil {
		tc := tls.Server(c, s.tls)
		if err := tc.Handshake(); err != nil {
			s.logger.Info("controller listener: TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
			c.Close()
			return
		}
		c = tc
	}
	br := bufio.NewReader(c)
	head, err := br.Peek(len(raftMagic))
	c.SetDeadline(time.Time{})
	if err != nil {
		if err != io.EOF {
			s.logger.Debug("controller listener: connection closed before its first bytes", "remote", c.RemoteAddr().String(), "err", err)
		}
		c.Close()
		return
	}
	var pc net.Conn = &peekedConn{Conn: c, r: br}
	if tc, ok := c.(*tls.Conn); ok {
		pc = &peekedTLSConn{peekedConn{Conn: c, r: br}, tc}
	}
	if string(head) == raftMagic {
		p, ok := s.raftPrincipal(c, br, pc)
		if !ok {
			return
		}
		if !clusterAction(s.authz, p, remoteHost(c.RemoteAddr())) {
			s.logger.Warn("controller listener: raft connection refused: its principal may not act as a node (CLUSTER_ACTION on the cluster)",
				"remote", c.RemoteAddr().String(), "principal", p.String())
			c.Close()
			return
		}
		s.raft.deliver(pc)
	} else {
		s.kafka.deliver(pc)
	}
}

// raftPrincipal is who a raft connection is: its SASL principal on a
// SASL listener (authenticateRaft), its certificate's on an SSL one,
// else User:ANONYMOUS. It reports whether pc may go on; a refused
// connection is closed.
func (s *splitListener) raftPrincipal(c net.Conn, br *bufio.Reader, pc net.Conn) (security.Principal, bool) {
	if s.sasl != nil {
		return s.authenticateRaft(c, br, pc)
	}
	if tc, ok := c.(*tls.Conn); ok && s.tlsPrincipal != nil {
		p, err := s.tlsPrincipal(tc.ConnectionState())
		if err != nil {
			s.logger.Info("controller listener: raft connection without a principal", "remote", c.RemoteAddr().String(), "err", err)
			c.Close()
			return security.Principal{}, false
		}
		return p, true
	}
	return security.Anonymous, true
}

// authenticateRaft runs SASL on a raft connection of a SASL controller
// listener: after the magic, the dialer (sasl_client.go) logs in with
// Kafka's SaslHandshake and SaslAuthenticate, and only then does the
// transport's own hello follow, so nothing reaches the quorum from a
// node that did not authenticate.
func (s *splitListener) authenticateRaft(c net.Conn, br *bufio.Reader, pc net.Conn) (security.Principal, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = br.Discard(len(raftMagic))
	p, err := network.AuthenticateConn(ctx, pc, s.listener, s.sasl, s.logger)
	c.SetDeadline(time.Time{})
	if err != nil {
		s.logger.Info("controller listener: raft connection failed SASL authentication", "remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		return security.Principal{}, false
	}
	s.logger.Debug("controller listener: raft connection authenticated", "remote", c.RemoteAddr().String(), "principal", p.String())
	return p, true
}

// peekedTLSConn is a peekedConn under TLS; its ConnectionState lets the
// network layer set the connection's principal.
type peekedTLSConn struct {
	peekedConn
	tc *tls.Conn
}

func (c *peekedTLSConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

// Close stops accepting; connections already handed out stay open.
func (s *splitListener) Close() error {
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// peekedConn replays the bytes peeked while routing.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanListener is a net.Listener fed by splitListener.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) close() { l.once.Do(func() { close(l.done) }) }

// Close stops this half only; the shared socket closes with the
// splitListener.
func (l *chanListener) Close() error { l.close(); return nil }

func (l *chanListener) Addr() net.Addr { return l.addr }
