package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// throttleHook counts the throttles brokers report to a franz-go client.
type throttleHook struct{ n, maxMs atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	if ms := d.Milliseconds(); ms > h.maxMs.Load() {
		h.maxMs.Store(ms)
	}
}

// TestClientQuotas: quotas set with AlterClientQuotas (franz-go's kadm)
// are described back, survive a restart, and throttle: a producer whose
// client id has a 256 KiB/s producer_byte_rate is told to back off
// (throttle_time_ms) and takes at least as long as its quota allows,
// while another client id is never throttled; a consumer under
// consumer_byte_rate is throttled the same way.
func TestClientQuotas(t *testing.T) {
	dir := t.TempDir()
	// Two samples of one second: the rate reacts within about two
	// seconds, so the test can be short.
	props := []string{"quota.window.num=2", "quota.window.size.seconds=1"}
	srv := servertest.StartIn(t, dir, props...)
	addr := servertest.Addr(srv)
	ctx := testContext(t)
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	const rate = 256 << 10
	slow, consumer := "slow-producer", "slow-consumer"
	resp, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slow}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &consumer}}, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: rate}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user"}}, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 200}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp {
		if r.Err != nil {
			t.Fatalf("alter %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	describe := func(comps ...kadm.DescribeClientQuotaComponent) string {
		t.Helper()
		qs, err := adm.DescribeClientQuotas(ctx, false, comps)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(qs)
	}
	want := "[{{client-id=slow-consumer} [consumer_byte_rate=262144.000000]} {{client-id=slow-producer} [producer_byte_rate=262144.000000]}]"
	if got := describe(kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 2}); got != want {
		t.Fatalf("client-id quotas: %s, want %s", got, want)
	}
	if got := describe(kadm.DescribeClientQuotaComponent{Type: "user", MatchType: 1}); got != "[{{user=<default>} [request_percentage=200.000000]}]" {
		t.Fatalf("default user quotas: %s", got)
	}

	topic := "quota-topic"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce := func(clientID string) (time.Duration, *throttleHook) {
		h := &throttleHook{}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.DefaultProduceTopic(topic),
			kgo.WithHooks(h), kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		start := time.Now()
		rng := rand.New(rand.NewPCG(1, 2))
		for range 96 { // 1.5 MiB, incompressible: the quota counts bytes on the wire
			cl.Produce(ctx, &kgo.Record{Value: randBytes(rng, 16<<10)}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce as %s: %v", clientID, err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return time.Since(start), h
	}
	took, h := produce(slow)
	// 1.5 MiB at 256 KiB/s, less what the two-second window lets through
	// at once: at least about 4 s. (A lower bound: a slower machine only
	// makes it longer.)
	if h.n.Load() == 0 || took < 3*time.Second {
		t.Errorf("1.5 MiB under a 256 KiB/s quota: %d throttles reported, took %v; want throttled, at least 3 s", h.n.Load(), took)
	}
	if _, h := produce("fast-producer"); h.n.Load() != 0 {
		t.Errorf("a client id without a quota was throttled %d times (max %d ms)", h.n.Load(), h.maxMs.Load())
	}

	ch := &throttleHook{}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(consumer), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(ch), kgo.FetchMaxBytes(256<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	start, got := time.Now(), 0
	for got < 96 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if took := time.Since(start); ch.n.Load() == 0 || took < 3*time.Second {
		t.Errorf("1.5 MiB fetched under a 256 KiB/s quota: %d throttles reported, took %v; want throttled, at least 3 s", ch.n.Load(), took)
	}

	// The quotas are metadata: a restart keeps them.
	admCl.Close()
	srv.Close()
	srv = servertest.StartIn(t, dir, append(props, "listeners=PLAINTEXT://"+addr+",CONTROLLER://127.0.0.1:0")...)
	admCl2, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl2.Close()
	adm = kadm.NewClient(admCl2)
	if got := describe(kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 2}); got != want {
		t.Fatalf("client-id quotas after a restart: %s, want %s", got, want)
	}
}

// setQuotas sets quotas with kadm's AlterClientQuotas and fails the test
// on any refusal.
func setQuotas(t *testing.T, ctx context.Context, adm *kadm.Client, entries ...kadm.AlterClientQuotaEntry) {
	t.Helper()
	resp, err := adm.AlterClientQuotas(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp {
		if r.Err != nil {
			t.Fatalf("alter %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
}

// startQuotaServer starts a node measuring quotas over two 1 s windows
// and returns its address and an admin client.
func startQuotaServer(t *testing.T) (string, *kadm.Client) {
	t.Helper()
	addr := servertest.Addr(servertest.Start(t, "quota.window.num=2", "quota.window.size.seconds=1"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return addr, kadm.NewClient(cl)
}

// clientQuota is one AlterClientQuotas entry setting key for a client id.
func clientQuota(clientID, key string, value float64) kadm.AlterClientQuotaEntry {
	return kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &clientID}},
		Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: value}}}
}

// TestAcksZeroThrottled: a producer with acks=0 gets no response to carry
// a throttle, but the broker still mutes its connection (Kafka does), so
// its records reach the log at about its producer_byte_rate rather than
// as fast as it writes them; the quota set live applies at once.
func TestAcksZeroThrottled(t *testing.T) {
	addr, adm := startQuotaServer(t)
	ctx := testContext(t)
	const rate = 256 << 10
	setQuotas(t, ctx, adm, clientQuota("fire-and-forget", "producer_byte_rate", rate))
	topic := "acks0-topic"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// landed waits until n records are in the log and returns how long.
	landed := func(start time.Time, n int64) time.Duration {
		for {
			ends, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			if o, _ := ends.Lookup(topic, 0); o.Offset >= n {
				return time.Since(start)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	produce := func(clientID string, records int) time.Duration {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := ends.Lookup(topic, 0)
		rng := rand.New(rand.NewPCG(3, 4))
		start := time.Now()
		for range records {
			cl.Produce(ctx, &kgo.Record{Value: randBytes(rng, 16<<10)}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return landed(start, before.Offset+int64(records))
	}
	// 1.25 MiB: the two-second window lets about 512 KiB through at once,
	// the rest takes about 3 s at 256 KiB/s. A lower bound, so a slow
	// machine only makes it longer.
	if took := produce("fire-and-forget", 80); took < 2*time.Second {
		t.Errorf("1.25 MiB with acks=0 under a 256 KiB/s quota landed in %v, want at least 2 s", took)
	}
	if took := produce("unlimited", 80); took > 2*time.Second {
		t.Errorf("1.25 MiB with acks=0 without a quota took %v to land", took)
	}
}

// TestRequestQuota: request_percentage (set live) throttles every API
// with a throttle_time_ms, here Metadata: a client spinning on requests
// under a 1% quota (10 ms of broker time per second) is told to back off
// — each throttle at most the one-second window, as Kafka bounds it —
// and gets far fewer requests served than the same loop under another
// client id, which is never throttled.
func TestRequestQuota(t *testing.T) {
	addr, adm := startQuotaServer(t)
	ctx := testContext(t)
	setQuotas(t, ctx, adm, clientQuota("busy", "request_percentage", 1))
	spin := func(clientID string) (int, *throttleHook) {
		h := &throttleHook{}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.WithHooks(h))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		n := 0
		for start := time.Now(); time.Since(start) < 2*time.Second; n++ {
			req := kmsg.NewPtrMetadataRequest()
			if _, err := req.RequestWith(ctx, cl); err != nil {
				t.Fatal(err)
			}
		}
		return n, h
	}
	// The unthrottled loop runs before and after the throttled one, and
	// the better run counts: a stall of a loaded machine during one of
	// them must not pass for the quota.
	free, fh := spin("free")
	busy, bh := spin("busy")
	free2, fh2 := spin("free")
	free = max(free, free2)
	fh.n.Add(fh2.n.Load())
	t.Logf("Metadata requests in 2 s: %d under a 1%% quota (%d throttles, max %d ms), %d without", busy, bh.n.Load(), bh.maxMs.Load(), free)
	if bh.n.Load() == 0 || bh.maxMs.Load() > 1000 {
		t.Errorf("under a 1%% request quota: %d throttles, max %d ms; want some, each at most the 1 s window", bh.n.Load(), bh.maxMs.Load())
	}
	if fh.n.Load() != 0 {
		t.Errorf("a client id without a quota was throttled %d times", fh.n.Load())
	}
	if busy*3 > free {
		t.Errorf("%d requests served under a 1%% request quota vs %d without: want under a third", busy, free)
	}
}

// TestControllerMutationQuota: controller_mutation_rate (KIP-599), set
// live with kadm, limits the partitions a client id creates, deletes or
// adds. With 2 partitions/s (a bucket of 4 tokens over two 1 s windows):
// franz-go's CreateTopics v7 gets THROTTLING_QUOTA_EXCEEDED for the topics
// past an overdrawn bucket, with throttle_time_ms; retried as the throttle
// says, a client creates partitions at about 2/s; sarama at Kafka 2.4
// (CreateTopics v5, which has no such error) has every topic created and
// is only throttled.
func TestControllerMutationQuota(t *testing.T) {
	addr, adm := startQuotaServer(t)
	ctx := testContext(t)
	setQuotas(t, ctx, adm,
		clientQuota("mutator", "controller_mutation_rate", 2),
		clientQuota("sarama", "controller_mutation_rate", 2))

	h := &throttleHook{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("mutator"), kgo.WithHooks(h))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm = kadm.NewClient(cl)
	// 3 + 3 partitions: the second topic overdraws the bucket to -2, the
	// third is refused; the client should wait 2 tokens / 2 per s = 1 s.
	resp, err := adm.CreateTopics(ctx, 3, 1, nil, "mut-a", "mut-b", "mut-c")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mut-a", "mut-b"} {
		if r := resp[name]; r.Err != nil {
			t.Errorf("%s within the bucket: %v", name, r.Err)
		}
	}
	if r := resp["mut-c"]; !errors.Is(r.Err, kerr.ThrottlingQuotaExceeded) {
		t.Fatalf("mut-c past an overdrawn bucket: %v, want THROTTLING_QUOTA_EXCEEDED", r.Err)
	}
	// The bucket refills while the request is handled, so on a loaded
	// machine the throttle can come out well under the full second.
	if h.n.Load() == 0 || h.maxMs.Load() < 250 || h.maxMs.Load() > 1000 {
		t.Fatalf("throttles reported: %d, max %d ms; want about 1000 ms", h.n.Load(), h.maxMs.Load())
	}

	// Create one-partition topics for 3 s, waiting out each refusal:
	// about 2 per second get through.
	created := 0
	start := time.Now()
	for i := 0; time.Since(start) < 3*time.Second; i++ {
		resp, err := adm.CreateTopics(ctx, 1, 1, nil, fmt.Sprintf("mut-loop-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp {
			switch {
			case r.Err == nil:
				created++
			case errors.Is(r.Err, kerr.ThrottlingQuotaExceeded):
			default:
				t.Fatal(r.Err)
			}
		}
	}
	rate := float64(created) / time.Since(start).Seconds()
	t.Logf("created %d one-partition topics in %v under 2 partitions/s: %.2f/s", created, time.Since(start), rate)
	if rate < 1.3 || rate > 3 {
		t.Errorf("created %.2f partitions/s under a 2/s controller_mutation_rate", rate)
	}

	// sarama at 2.4.0 speaks CreateTopics v5: permissive.
	scfg := sarama.NewConfig()
	scfg.ClientID, scfg.Version = "sarama", sarama.V2_4_0_0
	sc, err := sarama.NewClient([]string{addr}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	ctrl, err := sc.Controller()
	if err != nil {
		t.Fatal(err)
	}
	req := &sarama.CreateTopicsRequest{Version: 5, Timeout: 10 * time.Second, TopicDetails: map[string]*sarama.TopicDetail{
		"sarama-a": {NumPartitions: 5, ReplicationFactor: 1},
		"sarama-b": {NumPartitions: 5, ReplicationFactor: 1},
	}}
	sresp, err := ctrl.CreateTopics(req)
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range sresp.TopicErrors {
		if e.Err != sarama.ErrNoError {
			t.Errorf("sarama CreateTopics v5 %s: %v, want created (permissive)", name, e.Err)
		}
	}
	// 10 partitions from 4 tokens: -6, 3 s at 2/s.
	if sresp.ThrottleTime < 2500*time.Millisecond || sresp.ThrottleTime > 3*time.Second {
		t.Errorf("sarama CreateTopics v5 overdrawing by 6: throttle %v, want about 3 s", sresp.ThrottleTime)
	}
}

// apiVersionsFrom connects to addr from the loopback address from and
// reports whether the connection is served: an ApiVersions answer within
// wait. A connection the broker holds and closes (over its address's
// rate) or closes at once (over its count) is not.
func apiVersionsFrom(t *testing.T, addr, from string, wait time.Duration) (served bool, conn net.Conn) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-e2e", "1"
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("conn-test")).AppendRequest(nil, req, 1)
	if _, err := c.Write(frame); err != nil {
		return false, c
	}
	c.SetReadDeadline(time.Now().Add(wait))
	var size [4]byte
	_, err = io.ReadFull(c, size[:])
	return err == nil, c
}

// TestConnectionQuotas: connection limits, set live — an ip entity's
// connection_creation_rate with kadm's AlterClientQuotas (KIP-612), the
// broker's max.connections.per.ip and max.connection.creation.rate with
// IncrementalAlterConfigs — apply to new connections from real sockets:
// an address over its rate has its extra connections held and closed and
// gets about its rate through while another address is not limited; an
// address at its count has the next one closed at once; the broker-wide
// rate delays connections instead of refusing them.
func TestConnectionQuotas(t *testing.T) {
	addr, adm := startQuotaServer(t)
	ctx := testContext(t)
	limited := "127.0.0.2"
	setQuotas(t, ctx, adm, kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: &limited}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 5}}})

	// connect opens connections from one address for d, one at a time,
	// and returns how many were served and how many were not.
	connect := func(from string, d time.Duration) (served, refused int) {
		for start := time.Now(); time.Since(start) < d; {
			ok, c := apiVersionsFrom(t, addr, from, 2*time.Second)
			c.Close()
			if ok {
				served++
			} else {
				refused++
			}
		}
		return served, refused
	}
	start := time.Now()
	served, refused := connect(limited, 2*time.Second)
	took := time.Since(start)
	// Kafka's rate over two 1 s samples: about 5 in the first second,
	// then 5/s on average.
	rate := float64(served) / took.Seconds()
	t.Logf("from %s under 5 connections/s: %d served, %d held and closed in %v (%.1f/s)", limited, served, refused, took, rate)
	if refused == 0 || rate < 3 || rate > 7 {
		t.Errorf("%s under connection_creation_rate=5: %d served in %v (%.1f/s), %d refused; want about 5/s, some refused",
			limited, served, took, rate, refused)
	}
	if served, refused := connect("127.0.0.3", 500*time.Millisecond); refused != 0 || served < 10 {
		t.Errorf("127.0.0.3 without an ip quota: %d served, %d refused", served, refused)
	}

	alter := func(key, value string) {
		t.Helper()
		resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: key, Value: &value}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp {
			if r.Err != nil {
				t.Fatalf("set %s=%s: %v %s", key, value, r.Err, r.ErrMessage)
			}
		}
	}
	// max.connections.per.ip=2, except for the test's own address.
	alter("max.connections.per.ip.overrides", "127.0.0.1:1000")
	alter("max.connections.per.ip", "2")
	var open []net.Conn
	for range 2 {
		ok, c := apiVersionsFrom(t, addr, "127.0.0.4", 5*time.Second)
		open = append(open, c)
		if !ok {
			t.Fatal("a connection within max.connections.per.ip=2 was not served")
		}
	}
	ok, c := apiVersionsFrom(t, addr, "127.0.0.4", 5*time.Second)
	c.Close()
	if ok {
		t.Fatal("a third connection from 127.0.0.4 under max.connections.per.ip=2 was served")
	}
	for _, c := range open {
		c.Close()
	}
	alter("max.connections.per.ip", "2147483647")

	// The broker-wide rate delays: 20 connections at 10/s (over two 1 s
	// samples) take about 2 s, and every one is served.
	alter("max.connection.creation.rate", "10")
	start = time.Now()
	for i := range 20 {
		ok, c := apiVersionsFrom(t, addr, "127.0.0.5", 5*time.Second)
		c.Close()
		if !ok {
			t.Fatalf("connection %d under max.connection.creation.rate=10 not served", i)
		}
	}
	took = time.Since(start)
	t.Logf("20 connections under max.connection.creation.rate=10 took %v", took)
	if took < time.Second {
		t.Errorf("20 connections under max.connection.creation.rate=10 took %v, want about 2 s", took)
	}
}
