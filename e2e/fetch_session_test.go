package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionConn sends raw Fetch requests of one version over one
// connection, as a client keeping a fetch session (KIP-227) would.
type sessionConn struct {
	t       *testing.T
	c       net.Conn
	version int16
	topic   string
	id      [16]byte
	cid     int32
}

// fetchAt names a partition and the offset to fetch it from.
type fetchAt struct {
	partition int32
	offset    int64
}

// fetch sends one Fetch of the session (sessionID, epoch) naming parts
// and forgetting forget, waiting at most 50 ms for data.
func (s *sessionConn) fetch(sessionID, epoch int32, parts []fetchAt, forget ...int32) *kmsg.FetchResponse {
	s.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = s.version
	req.ReplicaID = -1
	req.ReplicaState.ID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 50, 1, 1<<20
	req.SessionID, req.SessionEpoch = sessionID, epoch
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = s.topic, s.id
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.partition, p.offset, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = s.topic, s.id, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	s.cid++
	rawWrite(s.t, s.c, rawFrame(req, s.cid))
	resp := &kmsg.FetchResponse{Version: s.version}
	if cid := rawDecode(s.t, s.c, resp); cid != s.cid {
		s.t.Fatalf("correlation id %d, want %d", cid, s.cid)
	}
	return resp
}

// partitionsOf lists the partitions a response carries, in order, as
// "p<partition>:<records>" (records decoded from the batches) or
// "p<partition>:<error name>".
func partitionsOf(t *testing.T, resp *kmsg.FetchResponse) []string {
	t.Helper()
	var got []string
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				got = append(got, fmt.Sprintf("p%d:%s", p.Partition, kerr.ErrorForCode(p.ErrorCode).(*kerr.Error).Message))
				continue
			}
			got = append(got, fmt.Sprintf("p%d:%d", p.Partition, len(batchRecords(t, p.RecordBatches))))
		}
	}
	return got
}

func wantPartitions(t *testing.T, what string, resp *kmsg.FetchResponse, want ...string) {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("%s: error %v", what, kerr.ErrorForCode(resp.ErrorCode))
	}
	if got := partitionsOf(t, resp); !slices.Equal(got, want) {
		t.Fatalf("%s: response carries %v, want %v", what, got, want)
	}
}

// startSessionTopic starts a broker with extra settings and a topic of
// three partitions holding 2, 1 and 0 records.
func startSessionTopic(t *testing.T, ctx context.Context, topic string, extra ...string) (addr string, adm *kadm.Client, produce func(partition int32, values ...string)) {
	t.Helper()
	addr = startBroker(t, extra...)
	adm = newKadm(t, addr)
	franzCreate(t, ctx, adm, topic, 3, nil)
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce = func(partition int32, values ...string) {
		t.Helper()
		for _, v := range values {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce to %s[%d]: %v", topic, partition, err)
			}
		}
	}
	produce(0, "a", "b")
	produce(1, "c")
	return addr, adm, produce
}

// TestFetchSessionIncremental: an incremental response carries exactly
// the partitions with something new (Kafka's
// CachedPartition.maybeUpdateResponseData), for topics by id (v17) and
// by name (v12).
func TestFetchSessionIncremental(t *testing.T) {
	for _, version := range []int16{12, 17} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			ctx := testContext(t)
			const topic = "session-incremental"
			addr, adm, produce := startSessionTopic(t, ctx, topic)
			id := topicID(t, ctx, adm, topic)
			s := &sessionConn{t: t, c: rawDial(t, addr), version: version, topic: topic, id: id}
			r := s.fetch(0, 0, []fetchAt{{0, 0}, {1, 0}, {2, 0}})
			wantPartitions(t, "full fetch", r, "p0:2", "p1:1", "p2:0")
			sid := r.SessionID
			if sid == 0 {
				t.Fatal("full fetch at epoch 0 got no session")
			}
			// The offsets move past what was read; nothing else changed.
			ends := map[int32]int64{0: 2, 1: 1, 2: 0}
			r = s.fetch(sid, 1, []fetchAt{{0, ends[0]}, {1, ends[1]}})
			wantPartitions(t, "epoch 1, nothing new", r)
			if r.SessionID != sid {
				t.Fatalf("epoch 1 answered session %d, want %d", r.SessionID, sid)
			}
			// A record on partition 1: only it is answered, although the
			// request names no partition.
			produce(1, "d")
			r = s.fetch(sid, 2, nil)
			wantPartitions(t, "epoch 2 after a record on p1", r, "p1:1")
			ends[1]++
			// Its high watermark was sent: nothing is new.
			r = s.fetch(sid, 3, []fetchAt{{1, ends[1]}})
			wantPartitions(t, "epoch 3", r)
			// An error is answered every time (and the high watermark
			// again once it clears).
			r = s.fetch(sid, 4, []fetchAt{{2, 99}})
			wantPartitions(t, "epoch 4, p2 out of range", r, "p2:"+kerr.OffsetOutOfRange.Message)
			r = s.fetch(sid, 5, nil)
			wantPartitions(t, "epoch 5, p2 still out of range", r, "p2:"+kerr.OffsetOutOfRange.Message)
			r = s.fetch(sid, 6, []fetchAt{{2, 0}})
			wantPartitions(t, "epoch 6, p2 back in range", r, "p2:0")
			// A moved log start offset is news.
			produce(0, "e")
			ends[0]++
			r = s.fetch(sid, 7, []fetchAt{{0, ends[0]}})
			wantPartitions(t, "epoch 7, the new record on p0 was read at its end", r, "p0:0")
			del := kadm.Offsets{}
			del.AddOffset(topic, 0, 1, -1)
			if res, err := adm.DeleteRecords(ctx, del); err != nil || res.Error() != nil {
				t.Fatalf("delete records: %v %v", err, res.Error())
			}
			r = s.fetch(sid, 8, nil)
			wantPartitions(t, "epoch 8, p0's log start moved", r, "p0:0")
			// A forgotten partition is not answered any more.
			r = s.fetch(sid, 9, nil, 0)
			wantPartitions(t, "epoch 9, p0 forgotten", r)
			produce(0, "f")
			r = s.fetch(sid, 10, nil)
			wantPartitions(t, "epoch 10, a record on forgotten p0", r)
			// Forgetting the last partitions closes the session.
			r = s.fetch(sid, 11, nil, 1, 2)
			wantPartitions(t, "epoch 11, all forgotten", r)
			if r.SessionID != 0 {
				t.Fatalf("epoch 11 emptied the session but answered session id %d", r.SessionID)
			}
			r = s.fetch(sid, 12, nil)
			wantCode(t, "epoch 12 of the closed session", r.ErrorCode, kerr.FetchSessionIDNotFound)
		})
	}
}

// TestFetchSessionErrors: the session errors of FetchManager.newContext,
// each answered with no partitions and session id 0.
func TestFetchSessionErrors(t *testing.T) {
	ctx := testContext(t)
	const topic = "session-errors"
	addr, adm, _ := startSessionTopic(t, ctx, topic)
	id := topicID(t, ctx, adm, topic)
	s := &sessionConn{t: t, c: rawDial(t, addr), version: 17, topic: topic, id: id}
	open := func() int32 {
		t.Helper()
		r := s.fetch(0, 0, []fetchAt{{0, 0}})
		wantPartitions(t, "full fetch", r, "p0:2")
		if r.SessionID == 0 {
			t.Fatal("no session")
		}
		return r.SessionID
	}
	wantError := func(what string, r *kmsg.FetchResponse, code *kerr.Error) {
		t.Helper()
		wantCode(t, what, r.ErrorCode, code)
		if len(r.Topics) != 0 || r.SessionID != 0 {
			t.Fatalf("%s: %d topics, session id %d; want none, 0", what, len(r.Topics), r.SessionID)
		}
	}

	sid := open()
	wantError("epoch 2 of a session at 1", s.fetch(sid, 2, nil), kerr.InvalidFetchSessionEpoch)
	wantError("an unknown session id", s.fetch(sid+1, 1, nil), kerr.FetchSessionIDNotFound)
	// The errors left the session as it was.
	wantPartitions(t, "epoch 1 after the errors", s.fetch(sid, 1, []fetchAt{{0, 2}}))
	wantError("epoch 1 again", s.fetch(sid, 1, nil), kerr.InvalidFetchSessionEpoch)

	// A session opened with topic ids cannot go on with names, nor the
	// reverse.
	s.version = 12
	wantError("v12 in a v17 session", s.fetch(sid, 2, nil), kerr.FetchSessionTopicIDError)
	named := open()
	s.version = 17
	wantError("v17 in a v12 session", s.fetch(named, 1, nil), kerr.FetchSessionTopicIDError)

	// A full fetch naming a session closes it: at epoch 0 opening a new
	// one, at epoch -1 none.
	r := s.fetch(sid, 0, []fetchAt{{0, 0}})
	wantPartitions(t, "epoch 0 in session", r, "p0:2")
	if r.SessionID == 0 || r.SessionID == sid {
		t.Fatalf("epoch 0 naming session %d answered session %d, want a new one", sid, r.SessionID)
	}
	wantError("the session closed by epoch 0", s.fetch(sid, 2, nil), kerr.FetchSessionIDNotFound)
	sid = r.SessionID
	r = s.fetch(sid, -1, []fetchAt{{0, 0}})
	wantPartitions(t, "epoch -1", r, "p0:2")
	if r.SessionID != 0 {
		t.Fatalf("epoch -1 answered session %d", r.SessionID)
	}
	wantError("the session closed by epoch -1", s.fetch(sid, 1, nil), kerr.FetchSessionIDNotFound)

	// Before v7 there are no sessions, whatever the fields would say.
	s.version = 6
	if r := s.fetch(0, 0, []fetchAt{{0, 0}}); r.ErrorCode != 0 || r.SessionID != 0 {
		t.Fatalf("v6 fetch: error %d, session %d", r.ErrorCode, r.SessionID)
	}
}

// TestFetchSessionEviction: with max.incremental.fetch.session.cache.slots=8
// each of the 8 shards holds one session. A ninth consumer session is
// refused (every session is younger than 120 s), and a follower's
// privileged session evicts a consumer's: exactly one of the eight.
func TestFetchSessionEviction(t *testing.T) {
	ctx := testContext(t)
	const topic = "session-eviction"
	addr, adm, _ := startSessionTopic(t, ctx, topic, "max.incremental.fetch.session.cache.slots=8")
	id := topicID(t, ctx, adm, topic)
	s := &sessionConn{t: t, c: rawDial(t, addr), version: 17, topic: topic, id: id}
	var sessions []int32
	for i := range 8 {
		r := s.fetch(0, 0, []fetchAt{{0, 0}})
		if r.SessionID == 0 {
			t.Fatalf("session %d of 8 was refused", i+1)
		}
		sessions = append(sessions, r.SessionID)
	}
	if r := s.fetch(0, 0, []fetchAt{{0, 0}, {1, 0}}); r.SessionID != 0 {
		t.Fatalf("a ninth consumer session was opened (%d) in a full cache of young sessions", r.SessionID)
	}

	// A follower fetch (replica id 7: no such broker, so its partition
	// answers an error, but the session is made as in Kafka).
	req := kmsg.NewPtrFetchRequest()
	req.Version = 17
	req.ReplicaState.ID, req.ReplicaState.Epoch = 7, -1
	req.MaxBytes, req.SessionEpoch = 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	s.cid++
	rawWrite(t, s.c, rawFrame(req, s.cid))
	fr := &kmsg.FetchResponse{Version: 17}
	rawDecode(t, s.c, fr)
	if fr.SessionID == 0 {
		t.Fatal("a follower's session was refused where it may evict a consumer's")
	}

	gone := 0
	for i, sid := range sessions {
		r := s.fetch(sid, 1, nil)
		switch r.ErrorCode {
		case 0:
		case kerr.FetchSessionIDNotFound.Code:
			gone++
		default:
			t.Fatalf("session %d: %v", i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if gone != 1 {
		t.Fatalf("%d consumer sessions were evicted by one follower session, want 1", gone)
	}
}

// TestFetchSessionsDisabled: with no slots a full fetch opens no session
// and a franz-go consumer (which asks for sessions) still reads
// everything.
func TestFetchSessionsDisabled(t *testing.T) {
	ctx := testContext(t)
	const topic = "session-none"
	addr, adm, produce := startSessionTopic(t, ctx, topic, "max.incremental.fetch.session.cache.slots=0")
	s := &sessionConn{t: t, c: rawDial(t, addr), version: 17, topic: topic, id: topicID(t, ctx, adm, topic)}
	if r := s.fetch(0, 0, []fetchAt{{0, 0}}); r.ErrorCode != 0 || r.SessionID != 0 {
		t.Fatalf("fetch with no session slots: error %d, session %d", r.ErrorCode, r.SessionID)
	}
	produce(2, "x")
	cl := newKgo(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	deadline := time.Now().Add(20 * time.Second)
	for got < 4 && time.Now().Before(deadline) {
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(fctx)
		cancel()
		got += fs.NumRecords()
	}
	if got != 4 {
		t.Fatalf("consumed %d records, want 4", got)
	}
}
