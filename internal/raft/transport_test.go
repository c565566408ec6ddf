package raft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

func TestFrameRoundTrip(t *testing.T) {
	m := &pb.Message{Type: pb.MsgApp.Enum(), From: new(uint64(1)), To: new(uint64(2)), Term: new(uint64(7)),
		Index: new(uint64(41)), Entries: []*pb.Entry{{Term: new(uint64(7)), Index: new(uint64(42)), Data: []byte("hello")}}}
	f, err := encodeFrame(m, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := proto.Marshal(m)
	if got := binary.BigEndian.Uint32(f); int(got) != len(body) || len(f) != 8+len(body) {
		t.Fatalf("frame len field %d, frame %d bytes, body %d", got, len(f), len(body))
	}
	got, err := readFrame(bytes.NewReader(f), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, m) || string(got.Entries[0].Data) != "hello" || got.GetIndex() != 41 {
		t.Fatalf("round trip: got %v", got)
	}
	// Flip one body bit: the CRC must catch it.
	f[len(f)-1] ^= 1
	if _, err := readFrame(bytes.NewReader(f), 1<<20); err == nil || err.Error() != "frame CRC mismatch" {
		t.Fatalf("corrupt frame: err = %v", err)
	}
	// A truncated frame is an error, not a partial message.
	if _, err := readFrame(bytes.NewReader(f[:len(f)-3]), 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short frame: err = %v", err)
	}
}

func TestFrameSizeBound(t *testing.T) {
	big := &pb.Message{Type: pb.MsgSnap.Enum(), Snapshot: &pb.Snapshot{Data: make([]byte, 2000)}}
	if _, err := encodeFrame(big, 1000); !errors.Is(err, errFrameTooLarge) {
		t.Fatalf("encode oversize: err = %v", err)
	}
	// A header announcing 4 GiB is refused before anything is allocated.
	hdr := binary.BigEndian.AppendUint32(nil, 0xffffffff)
	hdr = binary.BigEndian.AppendUint32(hdr, 0)
	if _, err := readFrame(bytes.NewReader(hdr), 64<<20); !errors.Is(err, errFrameTooLarge) {
		t.Fatalf("decode oversize: err = %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	good, _ := encodeFrame(&pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(uint64(1))}, 1<<20)
	f.Add(good)
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := readFrame(bytes.NewReader(b), 1<<16)
		if err == nil && m == nil {
			t.Fatal("nil message without error")
		}
	})
}

// collector is a transport handler that records what arrives.
type collector struct {
	mu   sync.Mutex
	msgs []*pb.Message
	got  chan struct{}
}

func newCollector() *collector { return &collector{got: make(chan struct{}, 1000)} }

func (c *collector) handle(m *pb.Message) {
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
	c.got <- struct{}{}
}

func (c *collector) wait(t *testing.T, n int) []*pb.Message {
	t.Helper()
	for range n {
		select {
		case <-c.got:
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for %d messages", n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*pb.Message(nil), c.msgs...)
}

// pair starts two transports, 1 and 2, with the given cluster ids.
func pair(t *testing.T, cluster1, cluster2 string) (*TCPTransport, *TCPTransport) {
	t.Helper()
	l1, _ := net.Listen("tcp", "127.0.0.1:0")
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	peers := map[uint64]string{1: l1.Addr().String(), 2: l2.Addr().String()}
	t1, err := NewTCPTransport(TCPConfig{ID: 1, ClusterID: cluster1, Peers: peers, Listener: l1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t2, err := NewTCPTransport(TCPConfig{ID: 2, ClusterID: cluster2, Peers: peers, Listener: l2, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { t1.Close(); t2.Close() })
	return t1, t2
}

func heartbeat(from, to, term uint64) *pb.Message {
	return &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: new(from), To: new(to), Term: new(term)}
}

func TestTransportDeliversInOrder(t *testing.T) {
	t1, t2 := pair(t, "c", "c")
	col := newCollector()
	t2.SetHandler(col.handle)
	var batch []*pb.Message
	for term := uint64(1); term <= 50; term++ {
		batch = append(batch, heartbeat(1, 2, term))
	}
	// Messages may be dropped before the connection is up: warm it up
	// with term-0 heartbeats, then check one batch arrives whole, in order.
	deadline := time.Now().Add(5 * time.Second)
	for len(col.got) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no connection")
		}
		t1.Send([]*pb.Message{heartbeat(1, 2, 0)})
		time.Sleep(10 * time.Millisecond)
	}
	t1.Send(batch)
	var msgs []*pb.Message
	for len(msgs) < 50 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		col.mu.Lock()
		msgs = msgs[:0]
		for _, m := range col.msgs {
			if m.GetTerm() > 0 {
				msgs = append(msgs, m)
			}
		}
		col.mu.Unlock()
	}
	if len(msgs) != 50 {
		t.Fatalf("got %d of 50 messages", len(msgs))
	}
	for i, m := range msgs {
		if m.GetTerm() != uint64(i+1) || m.GetFrom() != 1 || m.GetType() != pb.MsgHeartbeat {
			t.Fatalf("message %d: %v", i, m)
		}
	}
	// Unknown peers and messages after Close are dropped without blocking.
	t1.Send([]*pb.Message{heartbeat(1, 9, 1)})
	t1.Close()
	t1.Send(batch)
}

// recorder is a Reporter that records feedback.
type recorder struct {
	mu          sync.Mutex
	unreachable []uint64
	snaps       []bool // failed?
}

func (r *recorder) ReportUnreachable(id uint64) {
	r.mu.Lock()
	r.unreachable = append(r.unreachable, id)
	r.mu.Unlock()
}

func (r *recorder) ReportSnapshot(id uint64, failed bool) {
	r.mu.Lock()
	r.snaps = append(r.snaps, failed)
	r.mu.Unlock()
}

func TestTransportRefusesWrongCluster(t *testing.T) {
	t1, t2 := pair(t, "cluster-a", "cluster-b")
	col := newCollector()
	t2.SetHandler(col.handle)
	rec := &recorder{}
	t1.SetReporter(rec)
	snap := &pb.Message{Type: pb.MsgSnap.Enum(), From: new(uint64(1)), To: new(uint64(2)),
		Snapshot: &pb.Snapshot{Data: []byte("s")}}
	for range 20 {
		t1.Send([]*pb.Message{heartbeat(1, 2, 1), snap})
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-col.got:
		t.Fatal("message crossed a cluster id mismatch")
	case <-time.After(100 * time.Millisecond):
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.unreachable) == 0 || rec.unreachable[0] != 2 {
		t.Fatalf("unreachable reports %v, want peer 2", rec.unreachable)
	}
	for _, failed := range rec.snaps {
		if !failed {
			t.Fatal("snapshot reported delivered across a refused connection")
		}
	}
	if len(rec.snaps) == 0 {
		t.Fatal("undeliverable snapshot never reported failed")
	}
}

// TestTransportHandshakeAnswers dials a transport by hand to check its
// answers and that it closes the connection on a bad frame.
func TestTransportHandshakeAnswers(t *testing.T) {
	_, t2 := pair(t, "c", "c")
	col := newCollector()
	t2.SetHandler(col.handle)
	hello := func(from, to uint64, cluster string) []byte {
		b := append([]byte(transportMagic), transportVersion)
		b = binary.BigEndian.AppendUint64(b, from)
		b = binary.BigEndian.AppendUint64(b, to)
		b = append(b, byte(len(cluster)))
		return append(b, cluster...)
	}
	dial := func(h []byte) (net.Conn, byte) {
		c, err := net.Dial("tcp", t2.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write(h)
		var ans [1]byte
		if _, err := io.ReadFull(c, ans[:]); err != nil {
			t.Fatalf("no answer: %v", err)
		}
		return c, ans[0]
	}
	for _, tc := range []struct {
		hello []byte
		want  byte
	}{
		{hello(1, 2, "other"), handshakeClusterMismatch},
		{hello(7, 2, "c"), handshakeUnknownSender},
		{hello(1, 3, "c"), handshakeWrongReceiver},
	} {
		c, got := dial(tc.hello)
		if got != tc.want {
			t.Fatalf("answer %d, want %d", got, tc.want)
		}
		if _, err := c.Read(make([]byte, 1)); !closedByPeer(err) {
			t.Fatalf("refused connection not closed: %v", err)
		}
	}
	// Accepted, then one good frame, then a frame with a bad CRC.
	c, got := dial(hello(1, 2, "c"))
	if got != handshakeOK {
		t.Fatalf("answer %d, want ok", got)
	}
	f, _ := encodeFrame(heartbeat(1, 2, 3), 1<<20)
	c.Write(f)
	if m := col.wait(t, 1); m[0].GetTerm() != 3 {
		t.Fatalf("got %v", m[0])
	}
	f[len(f)-1] ^= 0xff
	c.Write(f)
	if _, err := c.Read(make([]byte, 1)); !closedByPeer(err) {
		t.Fatalf("connection with corrupt frame not closed: %v", err)
	}
	// A frame claiming to come from another node is refused too.
	c, _ = dial(hello(1, 2, "c"))
	f, _ = encodeFrame(heartbeat(2, 2, 4), 1<<20)
	c.Write(f)
	if _, err := c.Read(make([]byte, 1)); !closedByPeer(err) {
		t.Fatalf("spoofed sender not closed: %v", err)
	}
}
