package cluster

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// proxy forwards TCP connections from its own loopback address to a
// target, and can be cut like a network link: while cut, connections stay
// open but no byte goes through either way (a black hole, not a reset, as
// in a real partition); healing closes the connections that lived through
// the cut, so both ends redial, and forwards new ones again.
type proxy struct {
	ln     net.Listener
	target string
	cut    atomic.Bool

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

// serve forwards one connection. While cut, nothing is dialed: the
// client's bytes are read and dropped.
func (p *proxy) serve(c net.Conn) {
	defer p.untrack(c)
	for p.cut.Load() {
		if _, err := c.Read(make([]byte, 4096)); err != nil {
			return
		}
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	go func() { p.pipe(up, c); done <- struct{}{} }()
	p.pipe(c, up)
	<-done
}

// pipe copies src to dst, dropping what it reads while the proxy is cut;
// it closes both ends when either fails.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// setCut cuts or heals the link.
func (p *proxy) setCut(cut bool) {
	was := p.cut.Swap(cut)
	if was && !cut {
		p.closeConns()
	}
}

func (p *proxy) closeConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	p.wg.Wait()
}

// quorumNet puts a proxy on every voter-to-voter link of a cluster (each
// node's view of each other node's controller listener), so a test can cut
// one node off the quorum — raft, registration and heartbeats — while
// clients and replica fetchers still reach it on its client listener.
type quorumNet struct {
	t       *testing.T
	mu      sync.Mutex
	proxies map[[2]int32]*proxy // [from, to]
}

func newQuorumNet(t *testing.T) *quorumNet {
	return &quorumNet{t: t, proxies: map[[2]int32]*proxy{}}
}

// voterAddr is devcluster.Config.VoterAddr.
func (q *quorumNet) voterAddr(from, to int32, addr string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := newProxy(q.t, addr)
	q.proxies[[2]int32{from, to}] = p
	return p.addr()
}

// isolate cuts (or, with cut false, heals) every link from or to node id.
func (q *quorumNet) isolate(id int32, cut bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for link, p := range q.proxies {
		if link[0] == id || link[1] == id {
			p.setCut(cut)
		}
	}
}
