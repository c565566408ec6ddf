package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/servertest"
)

// Robustness over raw TCP: what a broker must survive (garbage, truncated
// and oversized frames, unknown APIs), what it must answer exactly
// (pipelined requests in order, ApiVersions at any version), and the error
// codes of bad produce and fetch input, sent with kmsg so that no client
// library smooths them over.

// --- raw protocol helpers ---

// rawFrame encodes req as a whole request frame, size prefix included, the
// way a client writes it.
func rawFrame(req kmsg.Request, correlationID int32) []byte {
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, correlationID)
	id := "samsa-robust"
	b = kbin.AppendNullableString(b, &id)
	if req.IsFlexible() {
		b = append(b, 0) // no header tags
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// sizedFrame prefixes body with its size.
func sizedFrame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func rawDial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

func rawWrite(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// rawReadFrame reads one response frame and splits off the correlation id.
func rawReadFrame(t *testing.T, c net.Conn) (int32, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("read response size: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read response: %v", err)
	}
	if len(b) < 4 {
		t.Fatalf("response of %d bytes", len(b))
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:]
}

// rawDecode reads one response into resp (its Version set by the caller)
// and returns the correlation id. Flexible responses carry a header tag
// section, except ApiVersions.
func rawDecode(t *testing.T, c net.Conn, resp kmsg.Response) int32 {
	t.Helper()
	cid, body := rawReadFrame(t, c)
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("%s v%d response (cid %d): bad header tags", kmsg.NameForKey(resp.Key()), resp.GetVersion(), cid)
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %s v%d response (cid %d): %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), cid, err)
	}
	return cid
}

// expectConnClosed fails unless the broker closes c within a few seconds
// without sending anything. A close with our bytes still unread arrives as
// a reset rather than EOF; both mean the broker hung up.
func expectConnClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf [256]byte
	n, err := c.Read(buf[:])
	if n > 0 {
		t.Fatalf("broker answered %d bytes (% x), want the connection closed", n, buf[:min(n, 16)])
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read: %v, want the connection closed", err)
	}
}

// apiVersionsRoundTrip asks c for ApiVersions v3 and checks the answer.
func apiVersionsRoundTrip(t *testing.T, c net.Conn, cid int32) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-robust", "1.0"
	rawWrite(t, c, rawFrame(req, cid))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if got := rawDecode(t, c, resp); got != cid {
		t.Fatalf("correlation id %d, want %d", got, cid)
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v3: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	return resp
}

func newBatch(ts int64, p *record.ProducerInfo, values ...string) []byte {
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Timestamp: ts, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)}
	}
	return record.Build(record.BuildOptions{PartitionLeaderEpoch: -1, Producer: p}, recs)
}

func produceReq(acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// leaderBroker returns the single node as a kgo.Broker, for requests that
// must reach it exactly as built (kgo.Client.Request would route, and for
// an unknown topic, retry).
func leaderBroker(t *testing.T, ctx context.Context, cl *kgo.Client) *kgo.Broker {
	t.Helper()
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(md.Brokers) != 1 {
		t.Fatalf("metadata: %v, %d brokers", err, len(md.Brokers))
	}
	return cl.Broker(int(md.Brokers[0].NodeID))
}

// produceByName keeps a client's Produce at v12: v13 names topics by id,
// and rawProduce names topics, some that do not exist.
func produceByName() kgo.Opt {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.Produce), 12)
	return kgo.MaxVersions(vs)
}

// rawProduce sends one batch and returns the partition's answer. kgo sends
// it with the client's acks (all), whatever the request says.
func rawProduce(t *testing.T, ctx context.Context, br *kgo.Broker, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	kresp, err := br.Request(ctx, produceReq(-1, topic, partition, records))
	if err != nil {
		t.Fatalf("produce to %s[%d]: %v", topic, partition, err)
	}
	resp := kresp.(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response shape: %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

func topicID(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) [16]byte {
	t.Helper()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("list %s: %v / %v", topic, err, td[topic].Err)
	}
	return td[topic].ID
}

// rawFetch fetches partition 0 of topic from offset; the topic is named
// and given by id, so the request is valid at whatever version kgo picks.
func rawFetch(t *testing.T, ctx context.Context, br *kgo.Broker, topic string, id [16]byte, offset int64, maxWait time.Duration, minBytes int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes = minBytes
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := br.Request(ctx, req)
	if err != nil {
		t.Fatalf("fetch %s@%d: %v", topic, offset, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response: error %d, topics %+v", resp.ErrorCode, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// fetchWritten is a kgo hook calling f each time a Fetch request has been
// written to a broker connection.
type fetchWritten func()

func (f fetchWritten) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		f()
	}
}

// batchRecords decodes every record of every batch in data.
func batchRecords(t *testing.T, data []byte) []record.Record {
	t.Helper()
	batches, err := record.Batches(data)
	if err != nil {
		t.Fatalf("batches: %v", err)
	}
	var out []record.Record
	for _, b := range batches {
		recs, err := record.Records(b)
		if err != nil {
			t.Fatalf("records: %v", err)
		}
		out = append(out, recs...)
	}
	return out
}

// checkValues fails unless recs are exactly values at offsets from..
func checkValues(t *testing.T, recs []record.Record, from int64, values ...string) {
	t.Helper()
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	var want []string
	for i, v := range values {
		want = append(want, fmt.Sprintf("%d:%s", from+int64(i), v))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != want.Code {
		t.Fatalf("%s: error code %d (%v), want %d (%s)", what, got, kerr.ErrorForCode(got), want.Code, want.Message)
	}
}

// --- connection-level robustness ---

// TestRobustBadFramesCloseOnlyTheirConnection: each kind of bad input makes
// the broker close that one connection, while a client connected before
// keeps working on its own connection and a new client works after.
func TestRobustBadFramesCloseOnlyTheirConnection(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	const topic = "robust-frames"
	franzCreate(t, ctx, newKadm(t, addr), topic, 1, nil)

	before := newKgo(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.DefaultProduceTopic(topic))
	if err := before.ProduceSync(ctx, &kgo.Record{Key: []byte("k0"), Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	bystander := rawDial(t, addr)
	apiVersionsRoundTrip(t, bystander, 1)

	rng := rand.New(rand.NewPCG(1, 2))
	randomFrame := make([]byte, 200)
	for i := range randomFrame {
		randomFrame[i] = byte(rng.Uint32())
	}
	randomFrame[0] |= 0x40 // api key >= 16384: random, but never a served one
	tlsHello := append([]byte{0x16, 0x03, 0x01, 0x00, 0xf1, 0x01, 0x00, 0x00, 0xed, 0x03, 0x03}, randomFrame[:32]...)

	hdr := func(key, version int16, cid int32) []byte {
		b := kbin.AppendInt16(nil, key)
		b = kbin.AppendInt16(b, version)
		b = kbin.AppendInt32(b, cid)
		return kbin.AppendNullableString(b, kmsg.StringPtr("x"))
	}
	produce99 := produceReq(1, topic, 0, newBatch(time.Now().UnixMilli(), nil, "v99"))
	produce99.Version = 9
	produce99Frame := rawFrame(produce99, 5)
	binary.BigEndian.PutUint16(produce99Frame[6:], 99) // version field after size and key

	cases := []struct {
		name      string
		data      []byte
		halfClose bool // stop sending: the frame will never be completed
	}{
		{"random bytes in a sized frame", sizedFrame(randomFrame), false},
		{"TLS ClientHello on a plaintext port", tlsHello, false},
		{"HTTP request", []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"), false},
		{"truncated frame", append([]byte{0, 0, 0, 100}, randomFrame[:10]...), true},
		{"2 GiB length prefix", []byte{0x7f, 0xff, 0xff, 0xff}, false},
		{"negative length prefix", []byte{0xff, 0xff, 0xff, 0x00, 1, 2, 3}, false},
		{"header cut short", sizedFrame([]byte{0, 3, 0, 12, 0, 0}), false},
		{"client id longer than the frame", sizedFrame(append(hdr(18, 3, 1)[:8], 0x01, 0xf4, 'a')), false},
		{"unknown API key 9999", sizedFrame(hdr(9999, 0, 3)), false},
		{"Produce v99", produce99Frame, false},
		{"Metadata v12 body cut short", sizedFrame(append(append(hdr(3, 12, 4), 0), 6)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := rawDial(t, addr)
			rawWrite(t, c, tc.data)
			if tc.halfClose {
				c.CloseWrite()
			}
			expectConnClosed(t, c)
		})
	}

	// The raw connection opened before is still served.
	apiVersionsRoundTrip(t, bystander, 2)
	// The franz-go client connected before produces and fetches.
	if err := before.ProduceSync(ctx, &kgo.Record{Key: []byte("k1"), Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after garbage: %v", err)
	}
	var got []string
	for len(got) < 2 {
		fs := before.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("fetched %v before timeout", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, r.Value)) })
	}
	if want := []string{"0:k0=before", "1:k1=after"}; !slices.Equal(got, want) {
		t.Fatalf("old client fetched %v, want %v", got, want)
	}
	// A client that connects now sees the same.
	recs := franzConsume(t, ctx, addr, topic, 2)
	if len(recs) != 2 || string(recs[1].Value) != "after" || recs[1].Offset != 1 {
		t.Fatalf("new client consumed %v", recs)
	}
}

// TestRobustUnservedAPIsAnswered: an API a Kafka 4.4 broker takes but
// Samsa does not serve is answered with UNSUPPORTED_VERSION in every error
// code, as Kafka answers an API it has not enabled, and the connection
// stays open; an API Kafka's broker listener does not take at all (Vote,
// of the controller listener) closes the connection, as in Kafka. Through
// franz-go's Client.Request with ApiVersions turned off (so the client
// sends what the broker does not advertise, as integration suites do),
// and a raw socket for the close.
func TestRobustUnservedAPIsAnswered(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	noAPIVersions := kversion.Stable()
	noAPIVersions.SetMaxKeyVersion(int16(kmsg.ApiVersions), -1)
	cl := newKgo(t, addr, kgo.MaxVersions(noAPIVersions), kgo.RetryTimeout(5*time.Second))
	request := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := cl.Request(rctx, req)
		if err != nil {
			t.Fatalf("%s v%d: %v, want an answer", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
		}
		return resp
	}

	// UnregisterController (dynamic quorums, KIP-853) is not served.
	ur := request(kmsg.NewPtrUnregisterControllerRequest()).(*kmsg.UnregisterControllerResponse)
	wantCode(t, "UnregisterController", ur.ErrorCode, kerr.UnsupportedVersion)
	// AlterReplicaLogDirs is served: a directory not in log.dirs is
	// LOG_DIR_NOT_FOUND for each partition named.
	ard := kmsg.NewPtrAlterReplicaLogDirsRequest()
	dir := kmsg.NewAlterReplicaLogDirsRequestDir()
	dir.Dir = "/elsewhere"
	dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	dt.Topic, dt.Partitions = "t", []int32{0, 1}
	dir.Topics = append(dir.Topics, dt)
	ard.Dirs = append(ard.Dirs, dir)
	// Sent to the broker itself: franz-go would route it by topic.
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ardResp, err := cl.Broker(1).Request(rctx, ard)
	cancel()
	if err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v, want an answer", err)
	}
	topics := ardResp.(*kmsg.AlterReplicaLogDirsResponse).Topics
	if len(topics) != 1 || topics[0].Topic != "t" || len(topics[0].Partitions) != 2 {
		t.Fatalf("AlterReplicaLogDirs: %+v", topics)
	}
	for _, p := range topics[0].Partitions {
		wantCode(t, "AlterReplicaLogDirs", p.ErrorCode, kerr.LogDirNotFound)
	}
	// The connection that carried them still serves.
	md := request(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 1 {
		t.Fatalf("Metadata after the refusals: %d brokers", len(md.Brokers))
	}

	// Vote is for controllers: Kafka's broker listener closes for it.
	c := rawDial(t, addr)
	rawWrite(t, c, rawFrame(kmsg.NewPtrVoteRequest(), 1))
	expectConnClosed(t, c)
}

// TestRobustApiVersionsUnsupportedVersion: ApiVersions at a version the
// broker does not know is answered, not dropped (KIP-511): v0 format,
// UNSUPPORTED_VERSION, and the full key table, on a connection that stays
// open for the client's retry at a lower version.
func TestRobustApiVersionsUnsupportedVersion(t *testing.T) {
	addr := startBroker(t)
	c := rawDial(t, addr)
	// A newer client's request: flexible header and a body we cannot parse.
	b := kbin.AppendInt16(nil, int16(kmsg.ApiVersions))
	b = kbin.AppendInt16(b, 99)
	b = kbin.AppendInt32(b, 4242)
	b = kbin.AppendNullableString(b, kmsg.StringPtr("future-client"))
	b = append(b, 0)                                                   // header tags
	b = append(b, 7, 'f', 'u', 't', 'u', 'r', 'e', 2, '9', 0, 1, 2, 3) // unknown body
	rawWrite(t, c, sizedFrame(b))

	cid, body := rawReadFrame(t, c)
	if cid != 4242 {
		t.Fatalf("correlation id %d, want 4242", cid)
	}
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.Version = 0
	if err := v0.ReadFrom(body); err != nil {
		t.Fatalf("decode as ApiVersions v0: %v", err)
	}
	wantCode(t, "ApiVersions v99", v0.ErrorCode, kerr.UnsupportedVersion)

	// The table equals what a supported version reports.
	v3 := apiVersionsRoundTrip(t, c, 4243)
	if len(v0.ApiKeys) != len(v3.ApiKeys) {
		t.Fatalf("v0 error answer lists %d keys, v3 lists %d", len(v0.ApiKeys), len(v3.ApiKeys))
	}
	keys := map[int16][2]int16{}
	for i, k := range v0.ApiKeys {
		if k3 := v3.ApiKeys[i]; k.ApiKey != k3.ApiKey || k.MinVersion != k3.MinVersion || k.MaxVersion != k3.MaxVersion {
			t.Fatalf("key %d: v0 answer %+v, v3 answer %+v", i, k, k3)
		}
		keys[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if r, ok := keys[int16(kmsg.ApiVersions)]; !ok || r[0] != 0 || r[1] < 3 {
		t.Fatalf("ApiVersions range %v", r)
	}
	if r, ok := keys[int16(kmsg.Produce)]; !ok || r[0] != 0 {
		t.Fatalf("Produce range %v, want from v0 (librdkafka)", r)
	}
}

// TestRobustPipelining: 20 mixed requests written back to back are
// answered in request order; acks=0 produce gets no answer at all.
func TestRobustPipelining(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	const topic = "robust-pipe"
	franzCreate(t, ctx, newKadm(t, addr), topic, 1, nil)
	c := rawDial(t, addr)

	// Correlation ids in a shuffled order, so only the broker's ordering
	// can make them come back as sent.
	rng := rand.New(rand.NewPCG(3, 4))
	cids := rng.Perm(1000)[:20]
	now := time.Now().UnixMilli()
	var out []byte
	for i, cid := range cids {
		switch i % 3 {
		case 0:
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			out = append(out, rawFrame(req, int32(cid))...)
		case 1:
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 3
			out = append(out, rawFrame(req, int32(cid))...)
		case 2:
			out = append(out, rawFrame(produceReq(1, topic, 0, newBatch(now, nil, fmt.Sprintf("p%d", i))), int32(cid))...)
		}
	}
	rawWrite(t, c, out)
	nextOffset := int64(0)
	for i, cid := range cids {
		var resp kmsg.Response
		switch i % 3 {
		case 0:
			resp = &kmsg.MetadataResponse{Version: 12}
		case 1:
			resp = &kmsg.ApiVersionsResponse{Version: 3}
		case 2:
			resp = &kmsg.ProduceResponse{Version: 9}
		}
		if got := rawDecode(t, c, resp); got != int32(cid) {
			t.Fatalf("response %d: correlation id %d, want %d", i, got, cid)
		}
		switch r := resp.(type) {
		case *kmsg.MetadataResponse:
			if len(r.Topics) != 1 || *r.Topics[0].Topic != topic || r.Topics[0].ErrorCode != 0 {
				t.Fatalf("response %d: metadata topics %+v", i, r.Topics)
			}
		case *kmsg.ApiVersionsResponse:
			if r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
				t.Fatalf("response %d: ApiVersions error %d", i, r.ErrorCode)
			}
		case *kmsg.ProduceResponse:
			p := r.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.BaseOffset != nextOffset {
				t.Fatalf("response %d: produce error %d base offset %d, want offset %d", i, p.ErrorCode, p.BaseOffset, nextOffset)
			}
			nextOffset++
		}
	}

	// acks=0: no response; the next frame read answers the next request.
	out = rawFrame(produceReq(0, topic, 0, newBatch(now, nil, "fire-and-forget")), 5000)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	out = append(out, rawFrame(md, 5001)...)
	out = append(out, rawFrame(produceReq(1, topic, 0, newBatch(now, nil, "acked")), 5002)...)
	rawWrite(t, c, out)
	if cid := rawDecode(t, c, &kmsg.MetadataResponse{Version: 12}); cid != 5001 {
		t.Fatalf("after an acks=0 produce read correlation id %d, want 5001", cid)
	}
	pr := &kmsg.ProduceResponse{Version: 9}
	if cid := rawDecode(t, c, pr); cid != 5002 {
		t.Fatalf("correlation id %d, want 5002", cid)
	}
	// The acks=0 record was stored: the acked one comes after it.
	if p := pr.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != nextOffset+1 {
		t.Fatalf("acked produce: error %d base offset %d, want %d", p.ErrorCode, p.BaseOffset, nextOffset+1)
	}
}

// TestRobustRequestMaxBytes: a frame above socket.request.max.bytes closes
// its connection; smaller requests on other connections are served.
func TestRobustRequestMaxBytes(t *testing.T) {
	ctx := testContext(t)
	s := servertest.Start(t, "socket.request.max.bytes=1024")
	addr := servertest.Addr(s)
	const topic = "robust-max"
	franzCreate(t, ctx, newKadm(t, addr), topic, 1, nil)

	small := rawDial(t, addr)
	apiVersionsRoundTrip(t, small, 1)

	big := rawDial(t, addr)
	frame := rawFrame(produceReq(1, topic, 0, newBatch(time.Now().UnixMilli(), nil, string(bytes.Repeat([]byte("x"), 1500)))), 2)
	if len(frame)-4 <= 1024 {
		t.Fatalf("test frame of %d bytes is not over the limit", len(frame)-4)
	}
	rawWrite(t, big, frame)
	expectConnClosed(t, big)

	// A produce under the limit works on the surviving connection.
	rawWrite(t, small, rawFrame(produceReq(1, topic, 0, newBatch(time.Now().UnixMilli(), nil, "fits")), 3))
	pr := &kmsg.ProduceResponse{Version: 9}
	if cid := rawDecode(t, small, pr); cid != 3 {
		t.Fatalf("correlation id %d", cid)
	}
	if p := pr.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce: error %d base offset %d; the oversized one must not be stored", p.ErrorCode, p.BaseOffset)
	}
}

// TestRobustEveryAdvertisedVersionAnswers: every key at every advertised
// version, sent with an empty body, gets a response of that version with
// its correlation id. A handler that answers at the wrong version, or
// cannot take a version it advertises, breaks clients that negotiate it.
func TestRobustEveryAdvertisedVersionAnswers(t *testing.T) {
	addr := startBroker(t)
	c := rawDial(t, addr)
	table := apiVersionsRoundTrip(t, c, 1)
	cid := int32(100)
	for _, k := range table.ApiKeys {
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			req := kmsg.RequestForKey(k.ApiKey)
			req.SetVersion(v)
			switch r := req.(type) {
			case *kmsg.ProduceRequest:
				r.Acks = 1 // acks=0 would get no answer
			case *kmsg.FetchRequest:
				r.MaxWaitMillis = 0
			case *kmsg.DescribeACLsRequest:
				// Kafka cannot parse a filter with UNKNOWN (0) codes and
				// closes the connection: ask for everything instead.
				r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
				r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			}
			cid++
			rawWrite(t, c, rawFrame(req, cid))
			resp := req.ResponseKind()
			resp.SetVersion(v)
			if got := rawDecode(t, c, resp); got != cid {
				t.Fatalf("%s v%d: correlation id %d, want %d", kmsg.NameForKey(k.ApiKey), v, got, cid)
			}
		}
	}
}

// --- bad produce and fetch input ---

// TestRobustProduceErrors: each malformed or disallowed produce gets
// Kafka's error code for it, and nothing is stored.
func TestRobustProduceErrors(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	const topic, small = "robust-produce", "robust-small"
	franzCreate(t, ctx, adm, topic, 1, nil)
	franzCreate(t, ctx, adm, small, 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("1000")})
	br := leaderBroker(t, ctx, newKgo(t, addr, produceByName()))
	now := time.Now().UnixMilli()

	t.Run("CRC of a flipped value byte", func(t *testing.T) {
		b := newBatch(now, nil, "hello")
		b[len(b)-2] ^= 0x01 // inside the last record's value: framing intact, CRC wrong
		wantCode(t, "corrupt value", rawProduce(t, ctx, br, topic, 0, b).ErrorCode, kerr.CorruptMessage)
	})
	t.Run("CRC field itself", func(t *testing.T) {
		b := newBatch(now, nil, "hello")
		b[17] ^= 0xff // the crc field: base offset 8, length 4, leader epoch 4, magic 1
		wantCode(t, "corrupt crc", rawProduce(t, ctx, br, topic, 0, b).ErrorCode, kerr.CorruptMessage)
	})
	t.Run("batch over max.message.bytes", func(t *testing.T) {
		big := newBatch(now, nil, string(bytes.Repeat([]byte("m"), 1100)))
		wantCode(t, "1.1 kB batch", rawProduce(t, ctx, br, small, 0, big).ErrorCode, kerr.MessageTooLarge)
		// Just under the limit is accepted: the limit is on the batch size.
		fits := newBatch(now, nil, string(bytes.Repeat([]byte("m"), 850)))
		if len(fits) > 1000 {
			t.Fatalf("test batch is %d bytes", len(fits))
		}
		if p := rawProduce(t, ctx, br, small, 0, fits); p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("%d-byte batch: error %d offset %d", len(fits), p.ErrorCode, p.BaseOffset)
		}
	})
	t.Run("two batches in one partition", func(t *testing.T) {
		two := append(newBatch(now, nil, "a"), newBatch(now, nil, "b")...)
		wantCode(t, "two batches", rawProduce(t, ctx, br, topic, 0, two).ErrorCode, kerr.InvalidRecord)
	})
	t.Run("unknown topic", func(t *testing.T) {
		p := rawProduce(t, ctx, br, "robust-no-such-topic", 0, newBatch(now, nil, "x"))
		wantCode(t, "unknown topic", p.ErrorCode, kerr.UnknownTopicOrPartition)
	})
	t.Run("unknown partition", func(t *testing.T) {
		wantCode(t, "partition 7", rawProduce(t, ctx, br, topic, 7, newBatch(now, nil, "x")).ErrorCode, kerr.UnknownTopicOrPartition)
	})
	t.Run("acks=2", func(t *testing.T) {
		// Over a raw connection: kgo would rewrite acks to its own.
		c := rawDial(t, addr)
		rawWrite(t, c, rawFrame(produceReq(2, topic, 0, newBatch(now, nil, "x")), 1))
		resp := &kmsg.ProduceResponse{Version: 9}
		rawDecode(t, c, resp)
		wantCode(t, "acks=2", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequiredAcks)
	})

	// None of the rejected batches was stored.
	id := topicID(t, ctx, adm, topic)
	p := rawFetch(t, ctx, br, topic, id, 0, 0, 0)
	if p.ErrorCode != 0 || p.HighWatermark != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("after rejected produces: error %d high watermark %d, %d bytes", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
	}
}

// TestRobustIdempotentProduce: sequence and epoch checks of the idempotent
// producer, as a client retrying or misbehaving would hit them.
func TestRobustIdempotentProduce(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	const topic = "robust-idem"
	franzCreate(t, ctx, adm, topic, 1, nil)
	cl := newKgo(t, addr, produceByName())
	br := leaderBroker(t, ctx, cl)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v / %d", err, init.ErrorCode)
	}
	pid := init.ProducerID
	now := time.Now().UnixMilli()
	batch := func(epoch int16, seq int32, values ...string) []byte {
		return newBatch(now, &record.ProducerInfo{ID: pid, Epoch: epoch, BaseSequence: seq}, values...)
	}

	if p := rawProduce(t, ctx, br, topic, 0, batch(0, 0, "a", "b", "c")); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("seq 0: error %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	// A gap: sequence 5 after 0-2.
	wantCode(t, "seq 5 after 2", rawProduce(t, ctx, br, topic, 0, batch(0, 5, "x")).ErrorCode, kerr.OutOfOrderSequenceNumber)
	// A retry of the first batch: success with its original offset.
	if p := rawProduce(t, ctx, br, topic, 0, batch(0, 0, "a", "b", "c")); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("duplicate of seq 0: error %d offset %d, want 0 and offset 0", p.ErrorCode, p.BaseOffset)
	}
	if p := rawProduce(t, ctx, br, topic, 0, batch(0, 3, "d", "e")); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("seq 3: error %d offset %d, want offset 3", p.ErrorCode, p.BaseOffset)
	}
	// A bumped epoch starts at sequence 0; the old epoch is fenced after.
	if p := rawProduce(t, ctx, br, topic, 0, batch(1, 0, "f")); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("epoch 1 seq 0: error %d offset %d, want offset 5", p.ErrorCode, p.BaseOffset)
	}
	wantCode(t, "epoch 0 after 1", rawProduce(t, ctx, br, topic, 0, batch(0, 5, "g")).ErrorCode, kerr.InvalidProducerEpoch)
	// A new epoch must start at sequence 0.
	wantCode(t, "epoch 2 seq 4", rawProduce(t, ctx, br, topic, 0, batch(2, 4, "h")).ErrorCode, kerr.OutOfOrderSequenceNumber)

	// The log holds each accepted record exactly once.
	p := rawFetch(t, ctx, br, topic, topicID(t, ctx, adm, topic), 0, 0, 0)
	if p.ErrorCode != 0 || p.HighWatermark != 6 {
		t.Fatalf("fetch: error %d high watermark %d, want 6", p.ErrorCode, p.HighWatermark)
	}
	checkValues(t, batchRecords(t, p.RecordBatches), 0, "a", "b", "c", "d", "e", "f")
}

// TestRobustFetch: out-of-range offsets and the long poll.
func TestRobustFetch(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	const topic, waitTopic, idleTopic = "robust-fetch", "robust-wait", "robust-idle"
	for _, tp := range []string{topic, waitTopic, idleTopic} {
		franzCreate(t, ctx, adm, tp, 1, nil)
	}
	cl := newKgo(t, addr, produceByName())
	br := leaderBroker(t, ctx, cl)
	now := time.Now().UnixMilli()
	if p := rawProduce(t, ctx, br, topic, 0, newBatch(now, nil, "a", "b", "c")); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	id := topicID(t, ctx, adm, topic)

	t.Run("offset beyond the end", func(t *testing.T) {
		p := rawFetch(t, ctx, br, topic, id, 4, 0, 0)
		// Only the code is checked: Kafka answers the offsets of a failed
		// partition read as -1, so clients cannot rely on them.
		wantCode(t, "fetch at 4 of 3", p.ErrorCode, kerr.OffsetOutOfRange)
		if len(p.RecordBatches) != 0 {
			t.Fatalf("%d bytes with OFFSET_OUT_OF_RANGE", len(p.RecordBatches))
		}
	})
	t.Run("offset at the end waits and returns nothing", func(t *testing.T) {
		p := rawFetch(t, ctx, br, topic, id, 3, 0, 0)
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 {
			t.Fatalf("fetch at the end: error %d, %d bytes, high watermark %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
		}
	})
	t.Run("empty record sets are not null", func(t *testing.T) {
		// librdkafka (Fetch v11) rejects a null record set with "invalid
		// MessageSetSize -1"; Kafka sends an empty one, for error
		// partitions too.
		c := rawDial(t, addr)
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, p := range []struct {
			partition int32
			offset    int64
		}{{0, 3}, {0, 99}, {9, 0}} { // at the end, out of range, unknown partition
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.partition, p.offset, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		rawWrite(t, c, rawFrame(req, 1))
		resp := &kmsg.FetchResponse{Version: 11}
		rawDecode(t, c, resp)
		ps := resp.Topics[0].Partitions
		wantCodes := []*kerr.Error{nil, kerr.OffsetOutOfRange, kerr.UnknownTopicOrPartition}
		for i, p := range ps {
			if want := wantCodes[i]; (want == nil && p.ErrorCode != 0) || (want != nil && p.ErrorCode != want.Code) {
				t.Errorf("partition answer %d: error %d, want %v", i, p.ErrorCode, want)
			}
			if p.RecordBatches == nil || len(p.RecordBatches) != 0 {
				t.Errorf("partition answer %d: record set null=%v, %d bytes; want empty, not null", i, p.RecordBatches == nil, len(p.RecordBatches))
			}
		}
	})
	t.Run("long poll wakes on produce", func(t *testing.T) {
		// The fetch waits up to maxWait; the produce, sent once the fetch
		// is on the wire, must end the wait. A broker that only re-reads
		// the log when the wait expires also returns the record, so the
		// check is that the answer came before maxWait.
		const maxWait = 30 * time.Second
		sent := make(chan struct{})
		var once sync.Once
		fetcher := newKgo(t, addr, kgo.WithHooks(fetchWritten(func() { once.Do(func() { close(sent) }) })))
		fbr := leaderBroker(t, ctx, fetcher)
		id := topicID(t, ctx, adm, waitTopic)
		other := newKgo(t, addr, kgo.DefaultProduceTopic(waitTopic))
		produced := make(chan error, 1)
		go func() {
			select {
			case <-sent:
			case <-ctx.Done():
			}
			produced <- other.ProduceSync(ctx, &kgo.Record{Value: []byte("wake")}).FirstErr()
		}()
		start := time.Now()
		p := rawFetch(t, ctx, fbr, waitTopic, id, 0, maxWait, 1)
		took := time.Since(start)
		if err := <-produced; err != nil {
			t.Fatalf("produce: %v", err)
		}
		if p.ErrorCode != 0 {
			t.Fatalf("fetch error %d", p.ErrorCode)
		}
		checkValues(t, batchRecords(t, p.RecordBatches), 0, "wake")
		if took >= maxWait {
			t.Fatalf("fetch answered after %v, its whole max wait of %v: the produce did not wake it", took, maxWait)
		}
	})
	t.Run("refused partitions do not end the wait", func(t *testing.T) {
		// Kafka's KafkaApis sets aside a partition of an unknown topic (or
		// one the topic does not have) before reading, so it does not
		// answer at once as a read error does (errorReadingData): the
		// fetch waits for the idle partition.
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 1000, 1, 1<<20, -1
		for _, tp := range []struct {
			id        [16]byte
			partition int32
		}{{topicID(t, ctx, adm, idleTopic), 0}, {topicID(t, ctx, adm, idleTopic), 9}, {[16]byte{0xde, 0xad}, 0}} {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = idleTopic, tp.id
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = tp.partition, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		start := time.Now()
		kresp, err := br.Request(ctx, req)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		resp := kresp.(*kmsg.FetchResponse)
		// Consecutive partitions of one topic share its entry, as in
		// Kafka's FetchResponse.
		if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("fetch: %d topics answered, want 2 (the idle topic's 2 partitions, the unknown id)", len(resp.Topics))
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
			t.Fatalf("idle partition: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
		}
		wantCode(t, "partition 9", resp.Topics[0].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, "unknown topic id", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicID)
		if took < 900*time.Millisecond {
			t.Fatalf("fetch with an idle partition and max_wait 1s returned after %v", took)
		}
	})
	t.Run("a session that does not exist", func(t *testing.T) {
		// Only epochs 0 and -1 are full fetches (FetchManager.newContext);
		// any other continues a session, and session 5 was never opened.
		for _, epoch := range []int32{1, -2} {
			req := kmsg.NewPtrFetchRequest()
			req.SessionID, req.SessionEpoch, req.MaxBytes = 5, epoch, 1<<20
			kresp, err := br.Request(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, fmt.Sprintf("fetch in session 5 at epoch %d", epoch), kresp.(*kmsg.FetchResponse).ErrorCode, kerr.FetchSessionIDNotFound)
		}
	})
	t.Run("long poll times out empty", func(t *testing.T) {
		start := time.Now()
		p := rawFetch(t, ctx, br, idleTopic, topicID(t, ctx, adm, idleTopic), 0, time.Second, 1)
		took := time.Since(start)
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
			t.Fatalf("idle fetch: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
		}
		if took < 900*time.Millisecond {
			t.Fatalf("idle fetch with max_wait 1s returned after %v", took)
		}
	})
}

// TestRobustListOffsetsMaxTimestamp: ListOffsets -3 (KIP-734) names the
// record with the largest timestamp, even when it is neither the last
// record nor in the last batch.
func TestRobustListOffsetsMaxTimestamp(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	const topic = "robust-maxts"
	franzCreate(t, ctx, newKadm(t, addr), topic, 1, nil)
	cl := newKgo(t, addr, produceByName())
	br := leaderBroker(t, ctx, cl)
	base := time.Now().Add(-time.Minute).UnixMilli()
	batch := func(tsOffsets ...int64) []byte {
		recs := make([]record.Record, len(tsOffsets))
		for i, d := range tsOffsets {
			recs[i] = record.Record{Timestamp: base + d, Value: []byte(fmt.Sprint(d))}
		}
		return record.Build(record.BuildOptions{PartitionLeaderEpoch: -1}, recs)
	}
	for _, b := range [][]byte{batch(0, 50, 20), batch(10, 30)} { // offsets 0-2, 3-4
		if p := rawProduce(t, ctx, br, topic, 0, b); p.ErrorCode != 0 {
			t.Fatalf("produce: %d", p.ErrorCode)
		}
	}
	for _, tc := range []struct {
		ts, wantOffset, wantTS int64
	}{
		{-3, 1, base + 50},        // max timestamp
		{-2, 0, -1},               // earliest
		{-1, 5, -1},               // latest
		{base + 25, 1, base + 50}, // first record at or after
		{base + 51, -1, -1},       // none
	} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, tc.ts, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := br.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := kresp.(*kmsg.ListOffsetsResponse)
		if resp.Version < 7 {
			t.Fatalf("ListOffsets negotiated v%d; -3 needs v7+", resp.Version)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.Offset != tc.wantOffset || (tc.wantTS != -1 && p.Timestamp != tc.wantTS) {
			t.Errorf("ListOffsets %d: error %d offset %d timestamp %d, want offset %d timestamp %d",
				tc.ts, p.ErrorCode, p.Offset, p.Timestamp, tc.wantOffset, tc.wantTS)
		}
	}
}
