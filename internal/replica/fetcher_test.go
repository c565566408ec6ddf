package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/record"
)

// The replica fetcher against a scripted leader: each request the
// fetcher sends is handed to the test, which checks it and answers.

type fakeReply struct {
	resp kmsg.Response
	err  error
}

type fakeLeader struct {
	reqs    chan kmsg.Request
	replies chan fakeReply
	mu      sync.Mutex
	dials   []string
	expired bool // the next request finds its connection's session ended
}

func newFakeLeader() *fakeLeader {
	return &fakeLeader{reqs: make(chan kmsg.Request), replies: make(chan fakeReply)}
}

func (l *fakeLeader) dial(_ context.Context, addr string) (PeerConn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dials = append(l.dials, addr)
	return &fakeConn{l: l}, nil
}

func (l *fakeLeader) dialCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.dials)
}

type fakeConn struct{ l *fakeLeader }

func (c *fakeConn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.l.mu.Lock()
	expired := c.l.expired
	c.l.expired = false
	c.l.mu.Unlock()
	if expired {
		return nil, kclient.ErrSessionExpired
	}
	select {
	case c.l.reqs <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-c.l.replies:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *fakeConn) Close() error { return nil }

// next waits for the fetcher's next request.
func (l *fakeLeader) next(t *testing.T) kmsg.Request {
	t.Helper()
	select {
	case r := <-l.reqs:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no request from the fetcher")
		return nil
	}
}

func (l *fakeLeader) nextFetch(t *testing.T) *kmsg.FetchRequest {
	t.Helper()
	r, ok := l.next(t).(*kmsg.FetchRequest)
	if !ok {
		t.Fatalf("got %T, want a fetch", r)
	}
	return r
}

func (l *fakeLeader) reply(resp kmsg.Response, err error) { l.replies <- fakeReply{resp, err} }

// fakeFollower records what the fetcher does to the
type fakeFollower struct {
	mu         sync.Mutex
	fetchOff   int64
	lastEpoch  int32
	calls      []string
	appended   []byte
	appliedErr error
	syncUpTo   int64 // what AppendAsFollowerUnsynced asks to fsync
}

func (f *fakeFollower) FetchPosition() (int64, int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetchOff, f.lastEpoch
}

func (f *fakeFollower) Offsets() Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Snapshot{LogStartOffset: 0, LogEndOffset: f.fetchOff, HighWatermark: 0}
}

func (f *fakeFollower) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeFollower) AppendAsFollowerUnsynced(b []byte, hw, ls int64) (int64, error) {
	f.mu.Lock()
	f.appended = append([]byte(nil), b...)
	f.mu.Unlock()
	f.record(fmt.Sprintf("append %d bytes hw=%d ls=%d", len(b), hw, ls))
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncUpTo, f.appliedErr
}

func (f *fakeFollower) SyncAppended(upTo int64) error {
	f.record(fmt.Sprintf("sync %d", upTo))
	return nil
}

func (f *fakeFollower) UpdateFollowerHighWatermark(hw, ls int64) {
	f.record(fmt.Sprintf("hw=%d ls=%d", hw, ls))
}

func (f *fakeFollower) TruncateOnDivergence(d EpochEndOffset) error {
	f.record(fmt.Sprintf("truncate epoch=%d end=%d", d.Epoch, d.EndOffset))
	return nil
}

func (f *fakeFollower) TruncateFullyAndStartAt(off int64) error {
	f.record(fmt.Sprintf("restart at %d", off))
	return nil
}

// waitCall waits until the follower's latest call is want.
func (f *fakeFollower) waitCall(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		n := len(f.calls)
		last := ""
		if n > 0 {
			last = f.calls[n-1]
		}
		f.mu.Unlock()
		if last == want {
			return
		}
		time.Sleep(time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Fatalf("calls %q, want last %q", f.calls, want)
}

var testTopicID = [16]byte{1, 2, 3}

func testFetchers(t *testing.T, leader *fakeLeader, log followerLog, opts ...func(*FetcherConfig)) *FetcherManager {
	t.Helper()
	ld := metadata.NewLoader("c", slog.New(slog.DiscardHandler))
	data, err := metadata.EncodeBatch([]metadata.Record{&metadata.RegisterBrokerRecord{
		BrokerID: 2, BrokerEpoch: 3,
		Endpoints: []metadata.Endpoint{{Name: "CLIENTS", Host: "c2", Port: 9092}, {Name: "REPL", Host: "r2", Port: 9093}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ld.Apply(1, data); err != nil {
		t.Fatal(err)
	}
	cfg := FetcherConfig{
		NodeID: 1, BrokerEpoch: func() int64 { return 7 }, Image: ld.Image, Listener: "REPL",
		Dial: leader.dial,
		partition: func(topic string, p int32) (followerLog, bool) {
			return log, topic == "t" && p == 0
		},
		MaxWaitMs: 500, MinBytes: 1, MaxBytes: 1000, PartitionMaxBytes: 100,
		Backoff: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&cfg)
	}
	m := NewFetcherManager(cfg)
	t.Cleanup(m.Close)
	return m
}

func fetchResp(hw, logStart int64, records []byte, set func(*kmsg.FetchResponseTopicPartition)) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 16
	rt := kmsg.NewFetchResponseTopic()
	rt.TopicID = testTopicID
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hw, hw, logStart
	rp.RecordBatches = records
	if set != nil {
		set(&rp)
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

func TestFetcherReplicates(t *testing.T) {
	leader := newFakeLeader()
	log := &fakeFollower{fetchOff: 10, lastEpoch: 4}
	m := testFetchers(t, leader, log)
	tp := TopicPartition{Topic: "t", Partition: 0}
	m.Follow(tp, testTopicID, 2, 5)

	req := leader.nextFetch(t)
	if req.ReplicaID != 1 || req.ReplicaState.ID != 1 || req.ReplicaState.Epoch != 7 {
		t.Errorf("replica id %d state %+v, want 1 / {1 7}", req.ReplicaID, req.ReplicaState)
	}
	if req.SessionID != 0 || req.SessionEpoch != 0 || req.MaxWaitMillis != 500 || req.MinBytes != 1 || req.MaxBytes != 1000 {
		t.Errorf("session %d/%d wait %d min %d max %d", req.SessionID, req.SessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes)
	}
	if len(req.Topics) != 1 || req.Topics[0].TopicID != testTopicID || req.Topics[0].Topic != "t" || len(req.Topics[0].Partitions) != 1 {
		t.Fatalf("topics %+v", req.Topics)
	}
	rp := req.Topics[0].Partitions[0]
	if rp.Partition != 0 || rp.CurrentLeaderEpoch != 5 || rp.FetchOffset != 10 || rp.LastFetchedEpoch != 4 || rp.PartitionMaxBytes != 100 {
		t.Errorf("partition %+v", rp)
	}
	if got := leader.dials[:leader.dialCount()]; len(got) != 1 || got[0] != "r2:9093" {
		t.Errorf("dialed %q, want the inter-broker listener r2:9093", got)
	}

	// One whole batch and the start of the next: only the whole one is
	// appended, with the leader's high watermark and log start.
	batch := record.Build(record.BuildOptions{BaseOffset: 10, PartitionLeaderEpoch: 5}, []record.Record{{Value: []byte("v")}})
	leader.reply(fetchResp(11, 3, append(append([]byte(nil), batch...), batch[:20]...), nil), nil)
	log.waitCall(t, fmt.Sprintf("append %d bytes hw=11 ls=3", len(batch)))
	log.mu.Lock()
	same := bytes.Equal(log.appended, batch)
	log.mu.Unlock()
	if !same {
		t.Error("appended bytes differ from the whole batch")
	}

	leader.nextFetch(t)
	leader.reply(fetchResp(12, 3, nil, nil), nil)
	log.waitCall(t, "hw=12 ls=3")

	leader.nextFetch(t)
	leader.reply(fetchResp(12, 3, nil, func(p *kmsg.FetchResponseTopicPartition) {
		p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 3, 8
	}), nil)
	log.waitCall(t, "truncate epoch=3 end=8")

	// Fenced: the partition is parked until a newer epoch is handed.
	leader.nextFetch(t)
	leader.reply(fetchResp(-1, -1, nil, func(p *kmsg.FetchResponseTopicPartition) {
		p.ErrorCode = kerr.FencedLeaderEpoch.Code
	}), nil)
	select {
	case r := <-leader.reqs:
		t.Fatalf("parked partition fetched again: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	m.Follow(tp, testTopicID, 2, 5) // same epoch: stays parked
	select {
	case r := <-leader.reqs:
		t.Fatalf("parked partition fetched again at the same epoch: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	m.Follow(tp, testTopicID, 2, 6)
	if req := leader.nextFetch(t); req.Topics[0].Partitions[0].CurrentLeaderEpoch != 6 {
		t.Fatalf("current leader epoch %d after unpark, want 6", req.Topics[0].Partitions[0].CurrentLeaderEpoch)
	}

	// A broken connection is closed and dialed again.
	leader.reply(nil, errors.New("connection reset"))
	leader.nextFetch(t)
	if n := leader.dialCount(); n != 2 {
		t.Errorf("%d dials after a broken connection, want 2", n)
	}
	leader.reply(fetchResp(12, 3, nil, nil), nil)
	log.waitCall(t, "hw=12 ls=3")

	// Unfollowing the last partition stops the fetcher.
	m.Unfollow(tp)
	inFlight := 0
	for done := false; !done; {
		select {
		case <-leader.reqs: // sent before the fetcher saw it was stopped
			inFlight++
			leader.reply(fetchResp(13, 3, nil, nil), nil)
		case <-time.After(100 * time.Millisecond):
			done = true
		}
	}
	if inFlight > 1 {
		t.Errorf("%d fetches after unfollow, want at most the one in flight", inFlight)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.calls[len(log.calls)-1] != "hw=12 ls=3" {
		t.Errorf("response for an unfollowed partition applied: %q", log.calls)
	}
}

// TestFetcherSession: the fetcher keeps an incremental fetch session with
// the leader as Kafka's FetchSessionHandler does.
func TestFetcherSession(t *testing.T) {
	leader := newFakeLeader()
	log := &fakeFollower{fetchOff: 10, lastEpoch: 4}
	m := testFetchers(t, leader, log, func(c *FetcherConfig) {
		c.partition = func(topic string, p int32) (followerLog, bool) { return log, topic == "t" }
	})
	p0, p1 := TopicPartition{Topic: "t", Partition: 0}, TopicPartition{Topic: "t", Partition: 1}
	reply := func(sessionID int32, parts ...int32) {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version, resp.SessionID = 17, sessionID
		if len(parts) > 0 {
			rt := kmsg.NewFetchResponseTopic()
			rt.TopicID = testTopicID
			for _, p := range parts {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.HighWatermark, rp.LogStartOffset = p, 10, 0
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		leader.reply(resp, nil)
	}
	// want checks the next fetch's session, the partitions it names (as
	// partition@offset) and those it forgets.
	want := func(what string, sessionID, epoch int32, named string, forgotten string) {
		t.Helper()
		req := leader.nextFetch(t)
		var gotNamed, gotForgotten []string
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				gotNamed = append(gotNamed, fmt.Sprintf("%d@%d", p.Partition, p.FetchOffset))
			}
		}
		for _, ft := range req.ForgottenTopics {
			for _, p := range ft.Partitions {
				gotForgotten = append(gotForgotten, fmt.Sprint(p))
			}
		}
		slices.Sort(gotNamed) // the fetcher's partitions are a map
		if req.SessionID != sessionID || req.SessionEpoch != epoch || fmt.Sprint(gotNamed) != named || fmt.Sprint(gotForgotten) != forgotten {
			t.Fatalf("%s: session %d epoch %d names %v forgets %v; want session %d epoch %d names %s forgets %s",
				what, req.SessionID, req.SessionEpoch, gotNamed, gotForgotten, sessionID, epoch, named, forgotten)
		}
	}

	m.Follow(p0, testTopicID, 2, 5)
	want("first fetch", 0, 0, "[0@10]", "[]")
	reply(77, 0)
	want("nothing changed", 77, 1, "[]", "[]")
	m.Follow(p1, testTopicID, 2, 5)
	reply(77)
	want("p1 followed", 77, 2, "[1@10]", "[]")
	log.mu.Lock()
	log.fetchOff = 11 // as if records were appended
	log.mu.Unlock()
	reply(77, 1)
	want("fetch offsets moved", 77, 3, "[0@11 1@11]", "[]")
	m.Unfollow(p1)
	reply(77)
	want("p1 unfollowed", 77, 4, "[]", "[1]")

	// Session errors start over with a full fetch at once: closing the
	// session, unless the leader no longer knows it.
	resp := kmsg.NewPtrFetchResponse()
	resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
	leader.reply(resp, nil)
	want("after INVALID_FETCH_SESSION_EPOCH", 77, 0, "[0@11]", "[]")
	resp = kmsg.NewPtrFetchResponse()
	resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
	leader.reply(resp, nil)
	want("after FETCH_SESSION_ID_NOT_FOUND", 0, 0, "[0@11]", "[]")
	reply(0, 0)
	want("no session given", 0, 0, "[0@11]", "[]")
	reply(78, 0)
	want("a session given", 78, 1, "[]", "[]")
	// A lost connection: what the leader holds is unknown.
	leader.reply(nil, errors.New("connection reset"))
	want("after a lost connection", 78, 0, "[0@11]", "[]")
	reply(79, 0)
}

func listOffsetsReply(t *testing.T, leader *fakeLeader, wantTs, offset int64) {
	t.Helper()
	req, ok := leader.next(t).(*kmsg.ListOffsetsRequest)
	if !ok {
		t.Fatal("want a ListOffsets request")
	}
	p := req.Topics[0].Partitions[0]
	if req.ReplicaID != 1 || req.Topics[0].Topic != "t" || p.Timestamp != wantTs || p.CurrentLeaderEpoch != 5 {
		t.Fatalf("list offsets replica %d topic %s partition %+v, want replica 1 timestamp %d epoch 5", req.ReplicaID, req.Topics[0].Topic, p, wantTs)
	}
	resp := kmsg.NewPtrListOffsetsResponse()
	rt := kmsg.NewListOffsetsResponseTopic()
	rt.Topic = "t"
	rp := kmsg.NewListOffsetsResponseTopicPartition()
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	leader.reply(resp, nil)
}

func TestFetcherOutOfRange(t *testing.T) {
	oor := func(p *kmsg.FetchResponseTopicPartition) { p.ErrorCode = kerr.OffsetOutOfRange.Code }
	tp := TopicPartition{Topic: "t", Partition: 0}

	// Ahead of the leader: truncate to its log end offset.
	leader := newFakeLeader()
	log := &fakeFollower{fetchOff: 20, lastEpoch: 4}
	m := testFetchers(t, leader, log)
	m.Follow(tp, testTopicID, 2, 5)
	leader.nextFetch(t)
	leader.reply(fetchResp(-1, -1, nil, oor), nil)
	listOffsetsReply(t, leader, latestTimestamp, 15)
	log.waitCall(t, "truncate epoch=4 end=15")

	// Behind the leader's log start: start over there.
	leader = newFakeLeader()
	log = &fakeFollower{fetchOff: 5, lastEpoch: 4}
	m = testFetchers(t, leader, log)
	m.Follow(tp, testTopicID, 2, 5)
	leader.nextFetch(t)
	leader.reply(fetchResp(-1, -1, nil, oor), nil)
	listOffsetsReply(t, leader, latestTimestamp, 100)
	listOffsetsReply(t, leader, earliestTimestamp, 50)
	log.waitCall(t, "restart at 50")
}

func TestFetcherRetriesTransientErrors(t *testing.T) {
	// The leader may not have applied the metadata that made it leader:
	// the partition is retried after the backoff, not parked.
	leader := newFakeLeader()
	log := &fakeFollower{fetchOff: 0, lastEpoch: -1}
	m := testFetchers(t, leader, log)
	m.Follow(TopicPartition{Topic: "t", Partition: 0}, testTopicID, 2, 5)
	for _, code := range []int16{kerr.NotLeaderForPartition.Code, kerr.UnknownLeaderEpoch.Code, kerr.UnknownTopicID.Code} {
		leader.nextFetch(t)
		leader.reply(fetchResp(-1, -1, nil, func(p *kmsg.FetchResponseTopicPartition) { p.ErrorCode = code }), nil)
	}
	leader.nextFetch(t)
	leader.reply(fetchResp(0, 0, nil, nil), nil)
	log.waitCall(t, "hw=0 ls=0")
}

// A fetch that the connection did not send because its SASL session
// ends (connections.max.reauth.ms) is no failure: the fetcher sends it
// on a new connection, without a warning or the failure backoff.
func TestFetcherRedialsWhenTheSessionEnds(t *testing.T) {
	leader := newFakeLeader()
	log := &fakeFollower{fetchOff: 0, lastEpoch: -1}
	var logs bytes.Buffer
	var logsMu sync.Mutex
	m := testFetchers(t, leader, log, func(c *FetcherConfig) {
		c.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logsMu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	m.Follow(TopicPartition{Topic: "t", Partition: 0}, testTopicID, 2, 5)
	leader.nextFetch(t)
	leader.mu.Lock()
	leader.expired = true
	leader.mu.Unlock()
	leader.reply(fetchResp(0, 0, nil, nil), nil)
	log.waitCall(t, "hw=0 ls=0")
	leader.nextFetch(t)
	if n := leader.dialCount(); n != 2 {
		t.Errorf("%d dials, want a second connection", n)
	}
	logsMu.Lock()
	defer logsMu.Unlock()
	if logs.Len() > 0 {
		t.Errorf("the session's end was logged as a failure:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestWholeBatches(t *testing.T) {
	b := record.Build(record.BuildOptions{}, []record.Record{{Value: []byte("x")}})
	two := append(append([]byte(nil), b...), b...)
	for _, tc := range []struct {
		in   []byte
		want int
	}{
		{nil, 0}, {b, len(b)}, {two, len(two)}, {two[:len(two)-1], len(b)}, {b[:11], 0}, {append(b, b[:12]...), len(b)},
	} {
		if got := len(wholeBatches(tc.in)); got != tc.want {
			t.Errorf("wholeBatches(%d bytes) = %d bytes, want %d", len(tc.in), got, tc.want)
		}
	}
}

// TestFetcherSyncsBeforeNextFetch: when the flush policy makes an fsync
// due (flush.messages=1), the appended batches are fsynced before the
// next fetch tells the leader the follower's new position, which lets
// the leader's high watermark, and acks=all, pass them.
func TestFetcherSyncsBeforeNextFetch(t *testing.T) {
	leader := newFakeLeader()
	log := &fakeFollower{fetchOff: 10, lastEpoch: 4, syncUpTo: 11}
	m := testFetchers(t, leader, log)
	m.Follow(TopicPartition{Topic: "t", Partition: 0}, testTopicID, 2, 5)
	leader.nextFetch(t)
	batch := record.Build(record.BuildOptions{BaseOffset: 10, PartitionLeaderEpoch: 5}, []record.Record{{Value: []byte("v")}})
	leader.reply(fetchResp(11, 3, batch, nil), nil)
	leader.nextFetch(t)
	log.mu.Lock()
	calls := slices.Clone(log.calls)
	log.mu.Unlock()
	want := []string{fmt.Sprintf("append %d bytes hw=11 ls=3", len(batch)), "sync 11"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls before the next fetch %q, want %q", calls, want)
	}
}
