package server

// FuzzRequests and FuzzRequestFields send every request the broker
// serves, at every version it advertises (the broker's own version
// table, so a new API is covered as soon as it has a row), to the real
// handlers of a real single-node server (logs, replica manager, group and
// transaction coordinators, controller), the way internal/network does:
// the frame is parsed by wire.ParseRequest and handed to the broker's
// Handle with a *network.Conn of a client listener served by the network
// layer (captured from its first request; no hook in the production
// code), so handlers see the same header and context values.
//
// An input is (API key, version, bytes); a key or version the broker does
// not serve is mapped onto the table, so the fuzzer spends its effort on
// the request. FuzzRequests' bytes are the request body, mutated as
// bytes; FuzzRequestFields' bytes are the choices of the randomizer
// (fuzz_random_test.go) that fills the kmsg request's fields, so each of
// its inputs decodes and the fuzzer mutates field values.
//
// Checked per input: no panic; Handle returns either an error (the
// network layer closes that connection only) or a response of the
// request's key and version that encodes and decodes again (nil only for
// Produce with acks=0); no handler runs much past its context's
// deadline. Every healthEvery inputs the server must still answer
// ApiVersions and Metadata (the fuzz topics are created again if an input
// deleted them), and the process's goroutines and RSS must stay under
// generous bounds.
//
// The seed corpora in testdata/fuzz are kmsg requests with random field
// values, some plausible (a topic that exists, partition 0 or -1, short
// timeouts), for every API and version; regenerate them after adding an
// API (TestFuzzRequestsCorpus fails until then) with
//
//	go test -run=TestFuzzRequestsCorpus ./internal/server -fuzz.rewrite
//
// `go test` runs the corpora and the crashers kept there as regressions
// (a few seconds). Fuzz longer with
//
//	go test -run='^$' -fuzz=FuzzRequestFields -fuzztime=10m -parallel=1 ./internal/server
//	go test -run='^$' -fuzz=FuzzRequests -fuzztime=10m -parallel=1 ./internal/server
//
// SAMSA_FUZZ_STATS=/some/file has each fuzz worker append its RSS, heap,
// goroutines, topics, groups and transactions there every statsEvery
// inputs, and every slow request; SAMSA_FUZZ_DEBUG=1 logs each input's
// outcome (with -v, for the corpus).
//
// What a long run keeps is what Kafka keeps too: topics an input created
// (each CreateTopics is bounded by controller.MaxRecordsPerUserOp, the
// count of topics is not, as in Kafka), classic groups with committed
// offsets, transactional ids and producer state until their expiration.

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/wire"
)

var rewriteCorpus = flag.Bool("fuzz.rewrite", false, "rewrite the seed corpus of FuzzRequests in testdata/fuzz")

const (
	// healthEvery is how often (in inputs) the server must still answer
	// a good request.
	healthEvery = 50
	// statsEvery is how often a worker writes its memory to
	// SAMSA_FUZZ_STATS.
	statsEvery = 500
	// handlerTimeout is each request's context; a handler that returns
	// later than handlerTimeout+hangSlack is reported as hanging.
	handlerTimeout = 2 * time.Second
	hangSlack      = 8 * time.Second
	// Generous bounds: a fuzz process above them leaks.
	maxGoroutines = 5000
	maxRSSBytes   = 3 << 30
)

// fuzzTopics are created before fuzzing so that requests find data.
var fuzzTopics = []string{"fuzz-topic", "fuzz-compact"}

// fuzzNode is the server under fuzz and a connection of its client
// listener to hand to the broker.
type fuzzNode struct {
	s      *Server
	ranges []wire.VersionRange
	conn   *network.Conn
	ctx    context.Context // the connection's, as network passes it
	n      int
	stats  *os.File
}

// captureConn passes requests to the broker and remembers the first
// connection and context it sees.
type captureConn struct {
	network.Handler
	got chan fuzzConn
}

type fuzzConn struct {
	c   *network.Conn
	ctx context.Context
}

func (h captureConn) Handle(ctx context.Context, c *network.Conn, req wire.Request) (kmsg.Response, error) {
	select {
	case h.got <- fuzzConn{c, ctx}:
	default:
	}
	return h.Handler.Handle(ctx, c, req)
}

func startFuzzNode(f *testing.F) *fuzzNode {
	cfg, _, err := config.Load("", []string{
		"log.dirs=" + f.TempDir(),
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		// A group's first join would wait three seconds for more members.
		"group.initial.rebalance.delay.ms=0",
	})
	if err != nil {
		f.Fatal(err)
	}
	s, err := Start(cfg, quiet(), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	seedData(f, s.Addr("PLAINTEXT"))

	// A connection of a client listener like PLAINTEXT's, served by the
	// network layer, whose *network.Conn and context the fuzz inputs use.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	got := make(chan fuzzConn, 1)
	srv := network.Serve(ln, network.Config{
		Listener:       "PLAINTEXT",
		MaxRequestSize: cfg.SocketRequestMaxBytes,
		Handler:        captureConn{s.broker, got},
		Versions:       s.broker.Versions(),
		Logger:         quiet(),
	})
	f.Cleanup(func() { srv.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
		f.Fatal(err)
	}
	c := <-got
	n := &fuzzNode{s: s, ranges: s.broker.Versions().All(), conn: c.c, ctx: c.ctx}
	if path := os.Getenv("SAMSA_FUZZ_STATS"); path != "" {
		n.stats, err = os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { n.stats.Close() })
	}
	return n
}

// seedData creates fuzzTopics with a few records, a committed group
// offset, so that fetches, offset fetches and the like find something.
func seedData(f *testing.F, addr string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("fuzz-topic"))
	if err != nil {
		f.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "fuzz-topic"); err != nil {
		f.Fatal(err)
	}
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, "fuzz-compact"); err != nil {
		f.Fatal(err)
	}
	for i := range 10 {
		r := &kgo.Record{Partition: int32(i % 3), Key: []byte{'k', byte('0' + i)}, Value: []byte("v")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			f.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "fuzz-topic", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "fuzz-group", offs); err != nil {
		f.Fatal(err)
	}
}

func FuzzRequests(f *testing.F) {
	n := startFuzzNode(f)
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		n.one(t, key, version, body)
	})
}

// FuzzRequestFields is FuzzRequests with structure: the input's choices
// drive the randomizer (fuzz_random_test.go) that fills a kmsg request of
// the key and version with field values, so every input is a request that
// decodes, and the fuzzer mutates field values rather than bytes.
func FuzzRequestFields(f *testing.F) {
	n := startFuzzNode(f)
	f.Fuzz(func(t *testing.T, key, version int16, choices []byte) {
		key, version = n.pick(key, version)
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		z := &randomizer{r: &byteChoices{b: choices}, topics: n.topics()}
		z.fill(req)
		n.one(t, key, version, req.AppendTo(nil))
	})
}

// topics are fuzzTopics with their ids on the fuzz server.
func (n *fuzzNode) topics() []fuzzTopic {
	var out []fuzzTopic
	img := n.s.loader.Image()
	for _, name := range fuzzTopics {
		if t, ok := img.Topic(name); ok {
			out = append(out, fuzzTopic{name, [16]byte(t.ID)})
		}
	}
	return out
}

// pick maps any key and version onto a served one: as given when served,
// else a row of the table by key and a version in its range.
func (n *fuzzNode) pick(key, version int16) (int16, int16) {
	if r, ok := n.s.broker.Versions().Range(key); ok && version >= r.Min && version <= r.Max {
		return key, version
	}
	r := n.ranges[int(uint16(key))%len(n.ranges)]
	return int16(r.Key), r.Min + int16(int(uint16(version))%int(r.Max-r.Min+1))
}

// one handles one input and checks what became of it.
func (n *fuzzNode) one(t *testing.T, key, version int16, body []byte) {
	key, version = n.pick(key, version)
	n.n++
	correlationID := int32(n.n)
	clientID := "fuzz"
	frame := kbin.AppendInt16(nil, key)
	frame = kbin.AppendInt16(frame, version)
	frame = kbin.AppendInt32(frame, correlationID)
	frame = kbin.AppendNullableString(frame, &clientID)
	probe := kmsg.RequestForKey(key)
	probe.SetVersion(version)
	if probe.IsFlexible() {
		frame = append(frame, 0) // no header tags
	}
	frame = append(frame, body...)
	name := fmt.Sprintf("%s v%d", kmsg.NameForKey(key), version)

	req, err := wire.ParseRequest(frame, n.s.broker.Versions())
	if err == nil {
		if req.Body == nil {
			t.Fatalf("%s: served by the table but parsed without a body", name)
		}
		n.handle(t, name, req)
	} else if os.Getenv("SAMSA_FUZZ_DEBUG") != "" {
		t.Logf("%s: %v", name, err)
	}
	if n.n%healthEvery == 0 {
		n.health(t)
	}
	if n.stats != nil && n.n%statsEvery == 0 {
		n.writeStats(t)
	}
}

func (n *fuzzNode) handle(t *testing.T, name string, req wire.Request) {
	ctx, cancel := context.WithTimeout(n.ctx, handlerTimeout)
	defer cancel()
	start := time.Now()
	resp, err := n.s.broker.Handle(ctx, n.conn, req)
	took := time.Since(start)
	if took > handlerTimeout+hangSlack {
		t.Fatalf("%s: the handler took %v with a context of %v", name, took, handlerTimeout)
	}
	if n.stats != nil && took > handlerTimeout/4 {
		fmt.Fprintf(n.stats, "slow: %s took %v: err %v\n", name, took.Round(time.Millisecond), err)
	}
	if err != nil {
		if os.Getenv("SAMSA_FUZZ_DEBUG") != "" {
			t.Logf("%s: handler error %v", name, err)
		}
		return // the network layer closes this connection only
	}
	if resp == nil {
		if p, ok := req.Body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			return
		}
		t.Fatalf("%s: nil response and no error", name)
	}
	if resp.Key() != req.Header.APIKey || resp.GetVersion() != req.Header.APIVersion {
		t.Fatalf("%s: response is %s v%d", name, kmsg.NameForKey(resp.Key()), resp.GetVersion())
	}
	if os.Getenv("SAMSA_FUZZ_DEBUG") != "" {
		t.Logf("%s: %.300v", name, strings.ReplaceAll(fmt.Sprintf("%+v", resp), "\n", " "))
	}
	frame := wire.AppendResponse(nil, req.Header.CorrelationID, resp)
	// size, correlation id, then the header's tags where flexible.
	b := frame[8:]
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		b = b[1:]
	}
	again := kmsg.ResponseForKey(resp.Key())
	again.SetVersion(resp.GetVersion())
	if err := again.ReadFrom(b); err != nil {
		t.Fatalf("%s: the response does not decode again: %v", name, err)
	}
}

// health checks that the server still answers ApiVersions and Metadata,
// and that the process is not leaking goroutines or memory.
func (n *fuzzNode) health(t *testing.T) {
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	resp := n.must(t, av).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(n.ranges) {
		t.Fatalf("after %d inputs: ApiVersions: error %d, %d keys", n.n, resp.ErrorCode, len(resp.ApiKeys))
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mresp := n.must(t, md).(*kmsg.MetadataResponse)
	if len(mresp.Brokers) != 1 || mresp.Brokers[0].NodeID != n.s.cfg.NodeID {
		t.Fatalf("after %d inputs: Metadata: brokers %+v", n.n, mresp.Brokers)
	}
	n.recreateTopics(t)
	if g := runtime.NumGoroutine(); g > maxGoroutines {
		t.Fatalf("after %d inputs: %d goroutines", n.n, g)
	}
	if rss := rssBytes(); rss > maxRSSBytes {
		t.Fatalf("after %d inputs: RSS %d MiB", n.n, rss>>20)
	}
}

// recreateTopics creates fuzzTopics again when an input deleted them
// (DeleteTopics seeds name them), so that later inputs find data.
func (n *fuzzNode) recreateTopics(t *testing.T) {
	img := n.s.loader.Image()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ct.TimeoutMillis = 5000
	for _, name := range fuzzTopics {
		if _, ok := img.Topic(name); !ok {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 3, 1
			ct.Topics = append(ct.Topics, rt)
		}
	}
	if len(ct.Topics) == 0 {
		return
	}
	for _, rt := range n.must(t, ct).(*kmsg.CreateTopicsResponse).Topics {
		if rt.ErrorCode != 0 && rt.ErrorCode != kerr.TopicAlreadyExists.Code {
			t.Fatalf("after %d inputs: cannot create %s again: %v", n.n, rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
}

// must handles a good request and returns its response.
func (n *fuzzNode) must(t *testing.T, body kmsg.Request) kmsg.Response {
	ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
	defer cancel()
	h := wire.RequestHeader{APIKey: body.Key(), APIVersion: body.GetVersion(), CorrelationID: -1}
	resp, err := n.s.broker.Handle(ctx, n.conn, wire.Request{Header: h, Body: body})
	if err != nil || resp == nil {
		t.Fatalf("after %d inputs: %s: %v", n.n, kmsg.NameForKey(body.Key()), err)
	}
	return resp
}

// writeStats writes the process's memory and goroutines, and the state
// clients can make the node keep: topics, groups, transactional ids.
func (n *fuzzNode) writeStats(t *testing.T) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	lg := kmsg.NewPtrListGroupsRequest()
	lg.SetVersion(4)
	groups := len(n.must(t, lg).(*kmsg.ListGroupsResponse).Groups)
	lt := kmsg.NewPtrListTransactionsRequest()
	txns := len(n.must(t, lt).(*kmsg.ListTransactionsResponse).TransactionStates)
	fmt.Fprintf(n.stats, "%s pid=%d inputs=%d rss_mib=%d heap_mib=%d goroutines=%d topics=%d groups=%d txns=%d\n",
		time.Now().Format(time.TimeOnly), os.Getpid(), n.n, rssBytes()>>20, ms.HeapAlloc>>20, runtime.NumGoroutine(),
		len(n.s.loader.Image().Topics()), groups, txns)
}

// rssBytes is this process's resident set size, 0 where /proc is not.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestFuzzRequestsCorpus writes FuzzRequests' seed corpus with
// -fuzz.rewrite: seedsPerVersion random requests for every served API and
// version, from a fixed seed so the files change only when the table or
// the randomizer does. Without the flag it checks that every served API
// and version has its seeds.
func TestFuzzRequestsCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzRequests")
	fieldsDir := filepath.Join("testdata", "fuzz", "FuzzRequestFields")
	const seedsPerVersion = 2
	ranges := brokerVersions()
	z := &randomizer{r: rand.New(rand.NewPCG(1, 2))}
	for _, name := range fuzzTopics {
		var id [16]byte
		for i := range id {
			id[i] = byte(z.r.IntN(256))
		}
		z.topics = append(z.topics, fuzzTopic{name, id})
	}
	if *rewriteCorpus {
		for _, d := range []string{dir, fieldsDir} {
			old, _ := filepath.Glob(filepath.Join(d, "seed-*"))
			for _, p := range old {
				os.Remove(p)
			}
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range ranges {
		for v := r.Min; v <= r.Max; v++ {
			for i := range seedsPerVersion {
				path := filepath.Join(dir, fmt.Sprintf("seed-%02d-%s-v%d-%d", r.Key, r.Key.Name(), v, i))
				req := kmsg.RequestForKey(int16(r.Key))
				req.SetVersion(v)
				z.fill(req)
				req.SetVersion(v)
				if !*rewriteCorpus {
					if _, err := os.Stat(path); err != nil {
						t.Errorf("no seed for %s v%d (%v): run with -fuzz.rewrite", r.Key.Name(), v, err)
					}
					continue
				}
				if err := os.WriteFile(path, corpusFile(int16(r.Key), v, req.AppendTo(nil)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// FuzzRequestFields: the randomizer's choices.
			path := filepath.Join(fieldsDir, fmt.Sprintf("seed-%02d-%s-v%d", r.Key, r.Key.Name(), v))
			if !*rewriteCorpus {
				if _, err := os.Stat(path); err != nil {
					t.Errorf("no seed for %s v%d (%v): run with -fuzz.rewrite", r.Key.Name(), v, err)
				}
				continue
			}
			choices := make([]byte, 96)
			for i := range choices {
				choices[i] = byte(z.r.IntN(256))
			}
			if err := os.WriteFile(path, corpusFile(int16(r.Key), v, choices), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// brokerVersions is the broker's version table, without a server.
func brokerVersions() []wire.VersionRange {
	return broker.New(broker.Config{}).Versions().All()
}

// corpusFile is a Go fuzz corpus file for FuzzRequests' arguments.
func corpusFile(key, version int16, body []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\nint16(%d)\nint16(%d)\n[]byte(%s)\n", key, version, strconv.Quote(string(body)))
}
