package raft

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Wire protocol of TCPTransport (all integers big-endian).
//
// Each node dials every peer once and only writes on that connection; it
// receives on the connections its peers dial to it. A connection opens with
// a hello from the dialer and a one-byte answer from the listener:
//
//	hello:  magic "SMRT" | version u8 | from u64 | to u64 | clusterLen u8 | clusterID
//	answer: status u8 (0 ok, see handshake* constants)
//
// then carries frames until either side closes it:
//
//	+----------+----------+-----------------------------------+
//	| len u32  | crc u32  | raftpb.Message (protobuf), len B  |
//	+----------+----------+-----------------------------------+
//
// crc is CRC-32C of the body. A frame longer than MaxFrameBytes, a bad CRC
// or an undecodable body closes the connection: the stream can no longer be
// trusted, and raft recovers the lost messages by retrying.
const (
	transportMagic   = "SMRT"
	transportVersion = 1
	helloFixedLen    = 4 + 1 + 8 + 8 + 1
	wireHeaderLen    = 8
)

// Handshake answers.
const (
	handshakeOK byte = iota
	handshakeBadVersion
	handshakeClusterMismatch
	handshakeUnknownSender
	handshakeWrongReceiver
)

var handshakeReasons = map[byte]string{
	handshakeBadVersion:      "unsupported protocol version",
	handshakeClusterMismatch: "cluster id mismatch",
	handshakeUnknownSender:   "sender is not a configured voter",
	handshakeWrongReceiver:   "addressed to another node id",
}

var errFrameTooLarge = errors.New("raft transport: frame exceeds MaxFrameBytes")

// Reporter receives delivery feedback for raft (Node implements it): a leader
// keeps a follower it sent a snapshot to paused until told how it went.
type Reporter interface {
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, failed bool)
}

// TCPConfig configures a TCPTransport.
type TCPConfig struct {
	// ID is this node's id; ClusterID must match on both ends of every
	// connection (Kafka's cluster.id), so that a node pointed at the wrong
	// quorum is refused instead of voting in it.
	ID        uint64
	ClusterID string
	// Peers maps every voter id to its host:port (controller.quorum.voters).
	// This node's own entry, if present, is ignored.
	Peers map[uint64]string
	// Listener is already bound and accepts peers' connections. The
	// transport owns it and closes it on Close.
	Listener net.Listener
	// Dial connects to a peer's controller listener; nil dials plain
	// TCP. An SSL controller listener needs a TLS dial (and Listener
	// then accepts connections whose TLS handshake is done).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// DialTimeout bounds a dial plus handshake; default 2s. WriteTimeout
	// bounds one flush to a peer; default 5s.
	DialTimeout  time.Duration
	WriteTimeout time.Duration
	// QueueLen is the per-peer outbound queue, in messages; default 1024.
	// Send drops messages for a peer whose queue is full.
	QueueLen int
	// MaxFrameBytes bounds one message on the wire in both directions;
	// default 64 MiB (a metadata snapshot travels in one frame).
	MaxFrameBytes int
}

// Validate checks the configuration and fills defaults.
func (c *TCPConfig) Validate() error {
	if c.ID == 0 {
		return errors.New("raft transport: ID must be non-zero")
	}
	if c.Listener == nil {
		return errors.New("raft transport: Listener is required")
	}
	if len(c.ClusterID) > 255 {
		return fmt.Errorf("raft transport: ClusterID %q longer than 255 bytes", c.ClusterID)
	}
	for id, addr := range c.Peers {
		if id == 0 || (id != c.ID && addr == "") {
			return fmt.Errorf("raft transport: invalid peer %d@%q: want id > 0 and host:port", id, addr)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 2 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.QueueLen <= 0 {
		c.QueueLen = 1024
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = 64 << 20
	}
	return nil
}

// TCPTransport is the Transport of a multi-voter quorum: one outbound
// connection per peer, reconnected with backoff, fed by a bounded queue.
type TCPTransport struct {
	cfg TCPConfig
	log *slog.Logger
	// peers is replaced whole (under mu) by SetPeer and RemovePeer, so
	// Send reads it without a lock.
	peers  atomic.Pointer[map[uint64]*peer]
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	handler  atomic.Pointer[func(*pb.Message)]
	reporter atomic.Pointer[Reporter]
	// drop, when set, discards matching messages in both directions: the
	// tests' way to partition a node.
	drop atomic.Pointer[func(*pb.Message) bool]

	mu struct {
		sync.Mutex
		closed bool
		conns  map[net.Conn]struct{} // every open connection, both directions
		// refused are the reasons connections were refused for,
		// each logged as a warning once.
		refused map[string]bool
	}
}

type peer struct {
	id     uint64
	addr   string
	q      chan outMsg
	ctx    context.Context // cancelled when the peer is removed or replaced
	cancel context.CancelFunc
}

// outMsg is a message already encoded on the sender's goroutine, so the
// writer never touches raft-owned memory.
type outMsg struct {
	frame []byte
	snap  bool
}

// NewTCPTransport starts accepting on cfg.Listener and one writer per peer.
func NewTCPTransport(cfg TCPConfig) (*TCPTransport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &TCPTransport{cfg: cfg, log: cfg.Logger.With("raft_node", cfg.ID)}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.mu.conns = map[net.Conn]struct{}{}
	t.peers.Store(&map[uint64]*peer{})
	t.wg.Add(1)
	go t.acceptLoop()
	for id, addr := range cfg.Peers {
		t.SetPeer(id, addr)
	}
	return t, nil
}

// SetPeer adds peer id at addr, or moves it there (a voter whose endpoint
// changed). This node's own id is ignored. Safe to call at any time: a
// quorum that changes its voters (AddVoter, RemoveVoter) updates the
// transport as each change is applied.
func (t *TCPTransport) SetPeer(id uint64, addr string) {
	if id == t.cfg.ID || id == 0 || addr == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.peers.Load()
	if p, ok := old[id]; (ok && p.addr == addr) || t.mu.closed {
		return
	}
	next := make(map[uint64]*peer, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	if p, ok := old[id]; ok {
		p.cancel()
	}
	p := &peer{id: id, addr: addr, q: make(chan outMsg, t.cfg.QueueLen)}
	p.ctx, p.cancel = context.WithCancel(t.ctx)
	next[id] = p
	t.peers.Store(&next)
	t.wg.Add(1)
	go t.runPeer(p)
}

// RemovePeer stops sending to peer id and refuses its connections.
func (t *TCPTransport) RemovePeer(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.peers.Load()
	p, ok := old[id]
	if !ok {
		return
	}
	p.cancel()
	next := make(map[uint64]*peer, len(old))
	for k, v := range old {
		if k != id {
			next[k] = v
		}
	}
	t.peers.Store(&next)
}

// Peers returns the peers' addresses by id.
func (t *TCPTransport) Peers() map[uint64]string {
	ps := *t.peers.Load()
	out := make(map[uint64]string, len(ps))
	for id, p := range ps {
		out[id] = p.addr
	}
	return out
}

// SetHandler sets where received messages go, typically Node.Step. Messages
// received before it is set are dropped.
func (t *TCPTransport) SetHandler(h func(*pb.Message)) { t.handler.Store(&h) }

// SetReporter sets who hears about unreachable peers and snapshot outcomes.
func (t *TCPTransport) SetReporter(r Reporter) { t.reporter.Store(&r) }

// Attach wires the transport to a node: received messages go to n.Step and
// delivery feedback to n.
func (t *TCPTransport) Attach(n *Node) {
	t.SetReporter(n)
	t.SetHandler(func(m *pb.Message) { _ = n.Step(t.ctx, m) })
}

// Addr is the address peers dial.
func (t *TCPTransport) Addr() net.Addr { return t.cfg.Listener.Addr() }

func (t *TCPTransport) setDrop(f func(*pb.Message) bool) {
	if f == nil {
		t.drop.Store(nil)
		return
	}
	t.drop.Store(&f)
}

func (t *TCPTransport) dropped(m *pb.Message) bool {
	f := t.drop.Load()
	return f != nil && (*f)(m)
}

// Send queues msgs for their peers without blocking; messages for an unknown
// or backed-up peer are dropped, as raft retransmits what matters.
func (t *TCPTransport) Send(msgs []*pb.Message) {
	if t.ctx.Err() != nil {
		return
	}
	for _, m := range msgs {
		snap := m.GetType() == pb.MsgSnap
		p := (*t.peers.Load())[m.GetTo()]
		if p == nil || t.dropped(m) {
			t.reportSnap(m.GetTo(), snap, true)
			continue
		}
		frame, err := encodeFrame(m, t.cfg.MaxFrameBytes)
		if err != nil {
			t.log.Error("raft transport: dropping message", "to", p.id, "type", m.GetType().String(), "err", err)
			t.reportSnap(p.id, snap, true)
			continue
		}
		select {
		case p.q <- outMsg{frame: frame, snap: snap}:
		default:
			t.log.Debug("raft transport: queue full, dropping", "to", p.id, "type", m.GetType().String())
			t.reportSnap(p.id, snap, true)
		}
	}
}

func (t *TCPTransport) reportSnap(id uint64, snap, failed bool) {
	if r := t.reporter.Load(); snap && r != nil {
		(*r).ReportSnapshot(id, failed)
	}
}

func (t *TCPTransport) reportUnreachable(id uint64) {
	if r := t.reporter.Load(); r != nil {
		(*r).ReportUnreachable(id)
	}
}

// Close stops accepting and dialing, closes every connection and waits for
// all goroutines. Send after Close is a no-op.
func (t *TCPTransport) Close() error {
	t.cancel()
	err := t.cfg.Listener.Close()
	t.mu.Lock()
	t.mu.closed = true
	for c := range t.mu.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// track registers c so Close can unblock its goroutine; false once closed.
func (t *TCPTransport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return false
	}
	t.mu.conns[c] = struct{}{}
	return true
}

func (t *TCPTransport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.mu.conns, c)
	t.mu.Unlock()
	c.Close()
}

// ---- outbound ----

const (
	minBackoff = 20 * time.Millisecond
	maxBackoff = time.Second
)

func (t *TCPTransport) runPeer(p *peer) {
	defer t.wg.Done()
	backoff := minBackoff
	var lastErr string
	for p.ctx.Err() == nil {
		c, err := t.dial(p)
		if err == nil {
			backoff = minBackoff
			lastErr = ""
			err = t.writeLoop(p, c)
			t.untrack(c)
		}
		if p.ctx.Err() != nil {
			return
		}
		// Log each distinct failure once, not every retry.
		if s := err.Error(); s != lastErr {
			t.log.Warn("raft transport: peer connection failed", "peer", p.id, "addr", p.addr, "err", err)
			lastErr = s
		}
		t.reportUnreachable(p.id)
		t.discardQueue(p)
		select {
		case <-time.After(backoff):
		case <-p.ctx.Done():
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// discardQueue drops what piled up while the peer was unreachable: stale
// heartbeats and appends would only be rejected or resent.
func (t *TCPTransport) discardQueue(p *peer) {
	for {
		select {
		case m := <-p.q:
			t.reportSnap(p.id, m.snap, true)
		default:
			return
		}
	}
}

func (t *TCPTransport) dial(p *peer) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, t.cfg.DialTimeout)
	defer cancel()
	dial := t.cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	c, err := dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if !t.track(c) {
		c.Close()
		return nil, net.ErrClosed
	}
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	hello := make([]byte, 0, helloFixedLen+len(t.cfg.ClusterID))
	hello = append(hello, transportMagic...)
	hello = append(hello, transportVersion)
	hello = binary.BigEndian.AppendUint64(hello, t.cfg.ID)
	hello = binary.BigEndian.AppendUint64(hello, p.id)
	hello = append(hello, byte(len(t.cfg.ClusterID)))
	hello = append(hello, t.cfg.ClusterID...)
	var ans [1]byte
	if _, err = c.Write(hello); err == nil {
		_, err = io.ReadFull(c, ans[:])
	}
	if err == nil && ans[0] != handshakeOK {
		err = fmt.Errorf("peer %d refused us: %s (check node.id, controller.quorum.voters and cluster.id)",
			p.id, handshakeReasons[ans[0]])
	}
	if err != nil {
		t.untrack(c)
		return nil, fmt.Errorf("handshake: %w", err)
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// writeLoop owns c and writes queued frames, batching what is ready into
// one flush.
func (t *TCPTransport) writeLoop(p *peer, c net.Conn) error {
	bw := bufio.NewWriterSize(c, 64<<10)
	var snaps int
	for {
		var m outMsg
		select {
		case m = <-p.q:
		case <-p.ctx.Done():
			return nil
		}
		for {
			if m.snap {
				snaps++
			}
			bw.Write(m.frame) // an error sticks and surfaces at Flush
			select {
			case m = <-p.q:
				continue
			default:
			}
			break
		}
		c.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
		err := bw.Flush()
		for ; snaps > 0; snaps-- {
			t.reportSnap(p.id, true, err != nil)
		}
		if err != nil {
			return err
		}
	}
}

// ---- inbound ----

func (t *TCPTransport) acceptLoop() {
	defer t.wg.Done()
	for {
		c, err := t.cfg.Listener.Accept()
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.Warn("raft transport: accept", "err", err)
			select {
			case <-time.After(50 * time.Millisecond):
			case <-t.ctx.Done():
				return
			}
			continue
		}
		if !t.track(c) {
			c.Close()
			return
		}
		t.wg.Add(1)
		go t.serveConn(c)
	}
}

func (t *TCPTransport) serveConn(c net.Conn) {
	defer t.wg.Done()
	defer t.untrack(c)
	from, err := t.acceptHello(c)
	if err != nil {
		// A controller waiting to be added to the quorum dials every
		// voter about once a second: warn once per reason.
		level := slog.LevelWarn
		if !t.firstRefusal(err.Error()) {
			level = slog.LevelDebug
		}
		t.log.Log(t.ctx, level, "raft transport: refused connection", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	br := bufio.NewReaderSize(c, 64<<10)
	for {
		m, err := readFrame(br, t.cfg.MaxFrameBytes)
		if err != nil {
			if t.ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.log.Warn("raft transport: closing connection", "peer", from, "err", err)
			}
			return
		}
		if m.GetFrom() != from {
			t.log.Warn("raft transport: closing connection: message from wrong sender",
				"peer", from, "claimed", m.GetFrom())
			return
		}
		if t.dropped(m) {
			continue
		}
		if h := t.handler.Load(); h != nil {
			(*h)(m)
		}
	}
}

// acceptHello reads and checks the dialer's hello and answers it.
func (t *TCPTransport) acceptHello(c net.Conn) (uint64, error) {
	c.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	var hdr [helloFixedLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, fmt.Errorf("reading hello: %w", err)
	}
	if string(hdr[:4]) != transportMagic {
		return 0, fmt.Errorf("not a samsa raft peer (first bytes %q)", hdr[:4])
	}
	from := binary.BigEndian.Uint64(hdr[5:])
	to := binary.BigEndian.Uint64(hdr[13:])
	cluster := make([]byte, hdr[21])
	if _, err := io.ReadFull(c, cluster); err != nil {
		return 0, fmt.Errorf("reading hello: %w", err)
	}
	status, why := handshakeOK, ""
	switch {
	case hdr[4] != transportVersion:
		status, why = handshakeBadVersion, fmt.Sprintf("version %d, we speak %d", hdr[4], transportVersion)
	case string(cluster) != t.cfg.ClusterID:
		status, why = handshakeClusterMismatch, fmt.Sprintf("node %d has cluster id %q, ours is %q", from, cluster, t.cfg.ClusterID)
	case (*t.peers.Load())[from] == nil:
		status, why = handshakeUnknownSender, fmt.Sprintf("node %d is not in our voters", from)
	case to != t.cfg.ID:
		status, why = handshakeWrongReceiver, fmt.Sprintf("node %d dialed us as node %d, we are %d", from, to, t.cfg.ID)
	}
	_, err := c.Write([]byte{status})
	if status != handshakeOK {
		return 0, errors.New(why)
	}
	if err != nil {
		return 0, err
	}
	c.SetDeadline(time.Time{})
	return from, nil
}

// firstRefusal reports whether reason is new, and remembers it.
func (t *TCPTransport) firstRefusal(reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.refused[reason] {
		return false
	}
	if t.mu.refused == nil || len(t.mu.refused) > 1000 {
		t.mu.refused = map[string]bool{}
	}
	t.mu.refused[reason] = true
	return true
}

// ---- framing ----

func encodeFrame(m *pb.Message, max int) ([]byte, error) {
	body, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(body) > max {
		return nil, fmt.Errorf("%w: %d > %d bytes", errFrameTooLarge, len(body), max)
	}
	f := make([]byte, wireHeaderLen, wireHeaderLen+len(body))
	binary.BigEndian.PutUint32(f[0:], uint32(len(body)))
	binary.BigEndian.PutUint32(f[4:], crc32.Checksum(body, castagnoli))
	return append(f, body...), nil
}

// readFrame reads one frame; any error means the stream is unusable.
func readFrame(r io.Reader, max int) (*pb.Message, error) {
	var hdr [wireHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[0:])
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: %d > %d bytes", errFrameTooLarge, n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("short frame: %w", err)
	}
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
		return nil, errors.New("frame CRC mismatch")
	}
	m := &pb.Message{}
	if err := proto.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("decoding raft message: %w", err)
	}
	return m, nil
}
