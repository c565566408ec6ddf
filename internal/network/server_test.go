package network

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/wire"
)

// fakeHandler answers ApiVersions with an empty table, Metadata with a
// response naming the requested topic count in its throttle field (so a
// test can tell answers apart; from bigAnswer topics on, the answer also
// lists that many topics, so a client that never reads fills its socket
// quickly), and Produce with nothing (acks=0). A Produce with acks=2 is an
// error. Fetch signals fetching, then waits for the context, to test that
// Close ends in-flight handlers.
type fakeHandler struct {
	handled  atomic.Int32
	fetching chan struct{}
	// unblock, closed, ends the Fetch handlers early.
	unblock chan struct{}
}

const bigAnswer = 1000

func (h *fakeHandler) Handle(ctx context.Context, _ *Conn, req wire.Request) (kmsg.Response, error) {
	h.handled.Add(1)
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := body.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.Version = body.Version
		return resp, nil
	case *kmsg.MetadataRequest:
		resp := body.ResponseKind().(*kmsg.MetadataResponse)
		resp.Version = body.Version
		resp.ThrottleMillis = int32(len(body.Topics))
		if len(body.Topics) >= bigAnswer {
			resp.Topics = make([]kmsg.MetadataResponseTopic, len(body.Topics))
			for i := range resp.Topics {
				resp.Topics[i] = kmsg.NewMetadataResponseTopic()
				resp.Topics[i].Topic = body.Topics[i].Topic
			}
		}
		return resp, nil
	case *kmsg.ProduceRequest:
		if body.Acks == 2 {
			return nil, errors.New("bad acks")
		}
		return nil, nil
	case *kmsg.FetchRequest:
		select {
		case h.fetching <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-h.unblock:
			resp := body.ResponseKind().(*kmsg.FetchResponse)
			resp.Version = body.Version
			return resp, nil
		}
	}
	return nil, errors.New("unserved")
}

func startServer(t *testing.T, maxRequest int32) (*Server, *fakeHandler) {
	t.Helper()
	return startServerWith(t, Config{MaxRequestSize: maxRequest})
}

// startServerWith serves the fake handler with cfg, filling in what the
// tests share.
func startServerWith(t *testing.T, cfg Config) (*Server, *fakeHandler) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHandler{fetching: make(chan struct{}, 16), unblock: make(chan struct{})}
	cfg.Listener = "PLAINTEXT"
	cfg.Handler = h
	cfg.Versions = wire.NewVersionTable(
		wire.VersionRange{Key: kmsg.ApiVersions, Min: 0, Max: 4},
		wire.VersionRange{Key: kmsg.Metadata, Min: 0, Max: 13},
		wire.VersionRange{Key: kmsg.Produce, Min: 3, Max: 12},
		wire.VersionRange{Key: kmsg.Fetch, Min: 4, Max: 17},
	)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s := Serve(ln, cfg)
	t.Cleanup(func() {
		// Bounded, so that a stuck Close fails the test with its message
		// instead of hanging the binary.
		done := make(chan struct{})
		go func() { s.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Close did not return within 30 s")
		}
	})
	return s, h
}

func dial(t *testing.T, s *Server) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// frame encodes a whole request frame as a client would.
func frame(req kmsg.Request, correlationID int32) []byte {
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, correlationID)
	id := "test"
	b = kbin.AppendNullableString(b, &id)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func metadataReq(topics int) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	for i := 0; i < topics; i++ {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("t")
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func produceReq(acks int16) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = acks
	return req
}

// readResponse reads one response frame and returns its correlation id
// and the rest.
func readResponse(t *testing.T, c net.Conn) (int32, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := wire.ReadFrame(c, 1<<20, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:]
}

// expectClosed fails unless the server closes c, sending nothing more.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf [64]byte
	n, err := c.Read(buf[:])
	if n > 0 {
		t.Fatalf("read %d bytes, want the connection closed", n)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read: %v, want EOF (connection closed)", err)
	}
}

func TestPipelinedResponsesInOrder(t *testing.T) {
	s, _ := startServer(t, 1<<20)
	c := dial(t, s)
	var out []byte
	var want []int32
	for i := 0; i < 30; i++ {
		cid := int32(1000 - i*31) // not monotonic: order must come from the server
		switch i % 3 {
		case 0:
			av := kmsg.NewPtrApiVersionsRequest()
			av.Version = 3
			out = append(out, frame(av, cid)...)
			want = append(want, cid)
		case 1:
			out = append(out, frame(metadataReq(i), cid)...)
			want = append(want, cid)
		case 2:
			out = append(out, frame(produceReq(0), cid)...) // no answer
		}
	}
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		cid, body := readResponse(t, c)
		if cid != w {
			t.Fatalf("response %d: correlation id %d, want %d", i, cid, w)
		}
		if i%2 == 1 {
			// Metadata v12 response: header tags, then throttle.
			md := kmsg.NewPtrMetadataResponse()
			md.Version = 12
			if body[0] != 0 {
				t.Fatalf("response %d: header tag count %d", i, body[0])
			}
			if err := md.ReadFrom(body[1:]); err != nil {
				t.Fatal(err)
			}
			if want := int32(3*(i/2) + 1); md.ThrottleMillis != want {
				t.Fatalf("response %d answers a request with %d topics, want %d", i, md.ThrottleMillis, want)
			}
		}
	}
}

func TestHandlerErrorClosesAfterEarlierResponses(t *testing.T) {
	s, _ := startServer(t, 1<<20)
	c := dial(t, s)
	out := frame(metadataReq(1), 1)
	out = append(out, frame(produceReq(2), 2)...) // handler error
	out = append(out, frame(metadataReq(1), 3)...)
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	// The answer queued before the failure still goes out; nothing after.
	if cid, _ := readResponse(t, c); cid != 1 {
		t.Fatalf("correlation id %d, want 1", cid)
	}
	expectClosed(t, c)
}

func TestFrameLimits(t *testing.T) {
	s, h := startServer(t, 1024)
	oldProduce := produceReq(1)
	oldProduce.Version = 2 // the table serves Produce from v3
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"over socket.request.max.bytes", binary.BigEndian.AppendUint32(nil, 1025)},
		{"2 GiB", []byte{0x7f, 0xff, 0xff, 0xff}},
		{"negative", []byte{0xff, 0xff, 0xff, 0xfe}},
		{"malformed header", []byte{0, 0, 0, 3, 0, 18, 0}},
		{"unserved version", frame(oldProduce, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s)
			if _, err := c.Write(tc.data); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, c)
		})
	}
	if n := h.handled.Load(); n != 1 {
		// Only the unserved version reaches the handler (to be refused
		// there, as the broker does); the others never get that far.
		t.Fatalf("handler called %d times, want 1", n)
	}

	// A frame of exactly the limit is read and handled: the client id pads
	// a Metadata v12 request to 1024 bytes.
	req := metadataReq(0)
	const fixed = 2 + 2 + 4 + 2 + 1 // key, version, correlation id, client id length, header tags
	id := string(make([]byte, 1024-fixed-len(req.AppendTo(nil))))
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, 77)
	b = kbin.AppendNullableString(b, &id)
	b = append(b, 0)
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if len(b)-4 != 1024 {
		t.Fatalf("frame of %d bytes, want 1024", len(b)-4)
	}
	c := dial(t, s)
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	if cid, _ := readResponse(t, c); cid != 77 {
		t.Fatalf("correlation id %d, want 77", cid)
	}
}

func TestTruncatedFrameThenEOF(t *testing.T) {
	s, h := startServer(t, 1<<20)
	c := dial(t, s)
	if _, err := c.Write([]byte{0, 0, 0, 100, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); err != nil {
		t.Fatal(err)
	}
	c.CloseWrite()
	expectClosed(t, c)
	if n := h.handled.Load(); n != 0 {
		t.Fatalf("handler called %d times for a truncated frame", n)
	}
}

func TestCloseEndsBlockedHandlersAndSlowReaders(t *testing.T) {
	s, h := startServer(t, 1<<20)
	// One connection parked in a handler that waits for its context.
	blocked := dial(t, s)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	if _, err := blocked.Write(frame(fetch, 1)); err != nil {
		t.Fatal(err)
	}
	// One connection that sends requests with big answers and never
	// reads: the server's writer blocks on the full socket, its queue
	// fills, its reader stops, and then this client's writes stall. A
	// write that times out shows the server stopped reading.
	slow := dial(t, s)
	if err := slow.SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	stalled := make(chan struct{})
	go func() {
		f := frame(metadataReq(2*bigAnswer), 2)
		for {
			slow.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := slow.Write(f); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					close(stalled)
				}
				return
			}
		}
	}()
	for name, ch := range map[string]chan struct{}{"a fetch handler to start": h.fetching, "the slow reader's writes to stall": stalled} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no sign after 30 s of %s", name)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s: a connection goroutine is stuck")
	}
	expectClosed(t, blocked)
	// Accepting has stopped too.
	if c, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("dial succeeded after Close")
	}
}

func TestConnectionsAreIndependent(t *testing.T) {
	s, _ := startServer(t, 1<<20)
	good := dial(t, s)
	bad := dial(t, s)
	if _, err := bad.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, bad)
	if _, err := good.Write(frame(metadataReq(1), 9)); err != nil {
		t.Fatal(err)
	}
	if cid, _ := readResponse(t, good); cid != 9 {
		t.Fatalf("correlation id %d", cid)
	}
}

// bigFetch is a Fetch request whose frame is larger than
// uncountedFrameBytes.
func bigFetch() *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	for p := range int32(4000) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestRequestBudget: while large requests in flight hold the whole request
// budget, the next large one is not read (it waits, unhandled), small ones
// are still served, and the waiting one is served once the budget is
// returned.
func TestRequestBudget(t *testing.T) {
	f := frame(bigFetch(), 1)
	if len(f) <= uncountedFrameBytes {
		t.Fatalf("test frame of %d bytes is not above %d", len(f), uncountedFrameBytes)
	}
	budget := record.NewBudget(int64(len(f)) + 1000) // room for one
	s, h := startServerWith(t, Config{MaxRequestSize: 1 << 20, RequestBudget: budget})

	holder := dial(t, s)
	if _, err := holder.Write(f); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.fetching:
	case <-time.After(30 * time.Second):
		t.Fatal("the first fetch was not handled")
	}
	if got := budget.InUse(); got != int64(len(f)-4) {
		t.Fatalf("budget in use %d, want the held frame's %d bytes", got, len(f)-4)
	}

	waiter := dial(t, s)
	if _, err := waiter.Write(frame(bigFetch(), 2)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for budget.Waiting() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the second large request never waited for the budget (waiting %d)", budget.Waiting())
		}
		time.Sleep(5 * time.Millisecond)
	}

	small := dial(t, s)
	if _, err := small.Write(frame(metadataReq(1), 3)); err != nil {
		t.Fatal(err)
	}
	if cid, _ := readResponse(t, small); cid != 3 {
		t.Fatalf("small request: correlation id %d, want 3", cid)
	}
	if got := h.handled.Load(); got != 2 {
		t.Fatalf("%d requests handled while the budget was full, want 2 (the holder and the small one)", got)
	}

	close(h.unblock)
	if cid, _ := readResponse(t, holder); cid != 1 {
		t.Fatalf("holder: correlation id %d, want 1", cid)
	}
	if cid, _ := readResponse(t, waiter); cid != 2 {
		t.Fatalf("waiter: correlation id %d, want 2", cid)
	}
	for budget.InUse() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("budget still holds %d bytes after every request was answered", budget.InUse())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRequestBudgetWaiterLeavesOnClose: a request waiting for the budget
// gives up when the server closes, charging nothing.
func TestRequestBudgetWaiterLeavesOnClose(t *testing.T) {
	f := frame(bigFetch(), 1)
	budget := record.NewBudget(int64(len(f)) + 1000)
	s, h := startServerWith(t, Config{MaxRequestSize: 1 << 20, RequestBudget: budget})
	holder, waiter := dial(t, s), dial(t, s)
	if _, err := holder.Write(f); err != nil {
		t.Fatal(err)
	}
	<-h.fetching
	if _, err := waiter.Write(frame(bigFetch(), 2)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for budget.Waiting() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the second large request never waited for the budget")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if budget.InUse() != 0 || budget.Waiting() != 0 {
		t.Fatalf("after Close: %d bytes in use, %d waiting; want none", budget.InUse(), budget.Waiting())
	}
}
