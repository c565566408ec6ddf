package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/config"
)

// saslNodeProps are the keys of a node whose inter-broker listener,
// SASL_PLAINTEXT, is also the clients' listener: PLAIN's users (alice
// for the test's clients, broker for the nodes) and SCRAM-SHA-512 from
// the metadata log; the node logs in to the others with mech as broker
// with password pass.
func saslNodeProps(mech, pass string) []string {
	return []string{
		"listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=" + mech,
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="broker" password="` + pass + `" user_broker="broker-secret" user_alice="alice-secret";`,
		`listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required ` +
			`username="broker" password="` + pass + `";`,
	}
}

// syncBuffer collects a node's log.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// saslCluster is three combined nodes started in-process.
type saslCluster struct {
	t     *testing.T
	cfgs  []*config.Config
	nodes []*Server
	logs  []*syncBuffer
	lis   string // the clients' listener
	// clientOpts are added to every client (TLS for SASL_SSL).
	clientOpts []kgo.Opt
}

// startSASLCluster starts three combined nodes; nodeProps gives node i's
// keys (ids from 1). The returned cluster closes its nodes at the end of
// the test.
func startSASLCluster(t *testing.T, lis string, nodeProps func(i int) []string, clientOpts ...kgo.Opt) *saslCluster {
	t.Helper()
	c := configureSASLCluster(t, lis, nodeProps, clientOpts...)
	for i, err := range c.startAll(context.Background()) {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	return c
}

// configureSASLCluster loads the configurations of three combined nodes
// and starts none.
func configureSASLCluster(t *testing.T, lis string, nodeProps func(i int) []string, clientOpts ...kgo.Opt) *saslCluster {
	t.Helper()
	addrs := freeAddrs(t, 3)
	voters := fmt.Sprintf("controller.quorum.voters=1@%s,2@%s,3@%s", addrs[0], addrs[1], addrs[2])
	c := &saslCluster{t: t, lis: lis, clientOpts: clientOpts, cfgs: make([]*config.Config, 3), nodes: make([]*Server, 3), logs: make([]*syncBuffer, 3)}
	for i := range c.cfgs {
		c.cfgs[i] = loadCluster(t, append(nodeProps(i),
			"node.id="+strconv.Itoa(i+1), voters,
			"listeners="+lis+"://127.0.0.1:0,CONTROLLER://"+addrs[i],
			"offsets.topic.replication.factor=3", "transaction.state.log.replication.factor=3",
			"transaction.state.log.min.isr=2", "replica.lag.time.max.ms=3000",
			"replica.fetch.backoff.ms=50", "replica.fetch.wait.max.ms=100")...)
		c.cfgs[i].AddScram = []string{"SCRAM-SHA-512=[name=broker,password=broker-secret]"}
		c.logs[i] = &syncBuffer{}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, l := range c.logs {
				t.Logf("log of node %d:\n%s", i+1, l)
			}
		}
	})
	t.Cleanup(func() {
		for _, s := range c.nodes {
			if s != nil {
				s.Close()
			}
		}
	})
	return c
}

// startAll starts the nodes not running, together (a voter waits for a
// quorum), and returns each one's error.
func (c *saslCluster) startAll(ctx context.Context) []error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i := range c.nodes {
		if c.nodes[i] != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.startContext(ctx, i)
		}()
	}
	wg.Wait()
	return errs
}

func (c *saslCluster) start(i int) error { return c.startContext(context.Background(), i) }

func (c *saslCluster) startContext(ctx context.Context, i int) error {
	logger := slog.New(slog.NewTextHandler(c.logs[i], nil))
	s, err := StartContext(ctx, c.cfgs[i], logger, nil)
	if err == nil {
		c.nodes[i] = s
	}
	return err
}

func (c *saslCluster) seeds() []string {
	var out []string
	for _, s := range c.nodes {
		if s != nil {
			out = append(out, s.Addr(c.lis))
		}
	}
	return out
}

// client is a franz-go client logged in as alice, with opts.
func (c *saslCluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		kgo.RetryTimeout(20 * time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner())}, append(slices.Clone(c.clientOpts), opts...)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// waitInSync waits until every partition of topic has all three replicas
// in sync and its high watermark at least at want: a transaction
// coordinator that moves while it completes a commit writes the markers
// again, as Kafka's may, which adds a control batch.
func (c *saslCluster) waitInSync(ctx context.Context, adm *kadm.Client, topic string, want int64) {
	c.t.Helper()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			ends, err2 := adm.ListEndOffsets(ctx, topic)
			inSync := err2 == nil
			for _, pd := range md.Topics[topic].Partitions {
				inSync = inSync && len(pd.ISR) == 3
				if o, ok := ends.Lookup(topic, pd.Partition); !ok || o.Offset < want {
					inSync = false
				}
			}
			if inSync {
				return
			}
		}
		if ctx.Err() != nil {
			c.t.Fatalf("replicas of %s not in sync at %d: %v %+v", topic, want, err, md.Topics[topic].Partitions)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// produceRound writes n records to each of topic's 3 partitions.
func (c *saslCluster) produceRound(ctx context.Context, cl *kgo.Client, topic string, n int) {
	c.t.Helper()
	var recs []*kgo.Record
	for i := range 3 * n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		c.t.Fatalf("acks=all produce: %v", err)
	}
}

// checkReplicationAndTxn is what a cluster whose nodes authenticate to
// each other must do: a topic replicated three times keeps all replicas
// in sync, a transaction over partitions led by every node commits (its
// markers cross the inter-broker listener), and a node that restarts
// catches up again.
func (c *saslCluster) checkReplicationAndTxn() {
	t := c.t
	cl := c.client()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, "replicated"); err != nil || (r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists)) {
		t.Fatalf("create topic: %v / %v", err, r.Err)
	}
	c.produceRound(ctx, cl, "replicated", 20)
	c.waitInSync(ctx, adm, "replicated", 20)

	txn := c.client(kgo.TransactionalID("sasl-txn"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "replicated", Partition: int32(i), Value: []byte("txn")}).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cons := c.client(kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got, committed := 0, 0
	for got < 63 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 63 records", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		for _, r := range fs.Records() {
			got++
			if string(r.Value) == "txn" {
				committed++
			}
		}
	}
	if committed != 3 {
		t.Fatalf("read %d committed transactional records, want 3", committed)
	}

	// Node 3 stops; the others take writes; it restarts, logs in again
	// and catches up: all three replicas are back in sync.
	c.nodes[2].Close()
	c.nodes[2] = nil
	c.produceRound(ctx, cl, "replicated", 10)
	if err := c.start(2); err != nil {
		t.Fatalf("restart node 3: %v", err)
	}
	c.produceRound(ctx, cl, "replicated", 10)
	// 20 + the transaction's record and its marker + 10 + 10.
	c.waitInSync(ctx, adm, "replicated", 42)
}

// Three nodes whose inter-broker listener is SASL_PLAINTEXT: replica
// fetchers and transaction markers log in with PLAIN (its users from the
// JAAS config) and with SCRAM-SHA-512 (the broker's credential given at
// bootstrap, as kafka-storage format --add-scram gives it).
func TestSASLInterBrokerCluster(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			c := startSASLCluster(t, "SASL_PLAINTEXT", func(int) []string { return saslNodeProps(mech, "broker-secret") })
			c.checkReplicationAndTxn()
		})
	}
}

// A node whose inter-broker password is wrong cannot replicate: its log
// says which credentials were refused and where they come from, it never
// joins the ISR of a partition it follows, and the other nodes keep
// taking acks=all writes.
func TestSASLInterBrokerWrongPassword(t *testing.T) {
	c := startSASLCluster(t, "SASL_PLAINTEXT", func(i int) []string {
		if i == 2 {
			return saslNodeProps("SCRAM-SHA-512", "wrong")
		}
		return saslNodeProps("SCRAM-SHA-512", "broker-secret")
	})
	cl := c.client()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, "replicated"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v / %v", err, r.Err)
	}
	c.produceRound(ctx, cl, "replicated", 5) // once node 3 left the ISRs it follows in
	for {
		md, err := adm.Metadata(ctx, "replicated")
		if err != nil {
			t.Fatal(err)
		}
		out := true
		for _, pd := range md.Topics["replicated"].Partitions {
			if pd.Leader != 3 && slices.Contains(pd.ISR, 3) {
				out = false
			}
		}
		if out {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("node 3 still in sync: %+v", md.Topics["replicated"].Partitions)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.produceRound(ctx, cl, "replicated", 5)
	log := c.logs[2].String()
	for _, want := range []string{"SASL authentication failed", `as \"broker\" with SCRAM-SHA-512`, "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"} {
		if !strings.Contains(log, want) {
			t.Fatalf("node 3's log does not say %q:\n%s", want, log)
		}
	}
}

// saslSSLNodeProps are the keys of node id whose inter-broker and
// controller listeners are SASL_SSL (client certificates required too):
// SCRAM-SHA-512 between brokers, PLAIN to the controllers (SCRAM cannot
// serve there), and controllerPass the password it logs in to the
// controllers with.
func saslSSLNodeProps(t *testing.T, p *testPKI, id int, controllerPass string) []string {
	props := slices.DeleteFunc(p.nodeSSLProps(t, id), func(kv string) bool { return strings.HasPrefix(kv, "listener.security.protocol.map=") })
	return append(props,
		"listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL",
		"inter.broker.listener.name=SASL_SSL",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		"sasl.mechanism.controller.protocol=PLAIN",
		`listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
		`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
		`listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required `+
			`username="controller" password="`+controllerPass+`" user_controller="controller-secret";`,
		// Replica fetches and markers are allowed only to the nodes' own
		// SASL user: this checks that they authenticate as it.
		"authorizer.class.name="+StandardAuthorizer, "super.users=User:broker;User:controller;User:alice",
	)
}

// Three nodes whose inter-broker and controller listeners are SASL_SSL:
// the raft transport, registration, heartbeats and forwarding log in to
// the controller listener with PLAIN, replica fetchers and transaction
// markers to the inter-broker listener with SCRAM-SHA-512, all inside
// mutual TLS. With an authorizer whose only super users are the nodes'
// SCRAM user and the test's client, replication works only if the nodes
// are who they logged in as.
func TestSASLSSLCluster(t *testing.T) {
	p := newTestPKI(t)
	c := startSASLCluster(t, "SASL_SSL", func(i int) []string { return saslSSLNodeProps(t, p, i+1, "controller-secret") },
		kgo.DialTLSConfig(p.clientTLS(p.client)))
	c.checkReplicationAndTxn()
}

// A node whose controller password is wrong cannot reach the quorum:
// its raft connections and its registration are refused, it does not
// finish starting and its log names the credentials; the other two
// form the quorum and serve.
func TestSASLControllerWrongPassword(t *testing.T) {
	p := newTestPKI(t)
	c := configureSASLCluster(t, "SASL_SSL", func(i int) []string {
		pass := "controller-secret"
		if i == 2 {
			pass = "wrong"
		}
		return saslSSLNodeProps(t, p, i+1, pass)
	}, kgo.DialTLSConfig(p.clientTLS(p.client)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := c.startAll(ctx)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("nodes 1 and 2: %v, %v", errs[0], errs[1])
	}
	if errs[2] == nil {
		t.Fatal("node 3 started with a wrong controller password")
	}
	log := c.logs[2].String()
	for _, want := range []string{"SASL authentication failed", `as \"controller\" with PLAIN`, "listener.name.controller.plain.sasl.jaas.config"} {
		if !strings.Contains(log, want) {
			t.Fatalf("node 3's log does not say %q:\n%s", want, log)
		}
	}
	cl := c.client()
	adm := kadm.NewClient(cl)
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if r, err := adm.CreateTopic(wctx, 3, 2, nil, "two"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v / %v", err, r.Err)
	}
	c.produceRound(wctx, cl, "two", 5)
}

// A controller-only node and a broker-only node whose controller listener
// is SASL_PLAINTEXT: the broker fetches the metadata log, registers and
// forwards admin requests as the controller listener's PLAIN user.
func TestSASLControllerListenerSplitNodes(t *testing.T) {
	ctrlAddr := freeAddrs(t, 1)[0]
	voters := "controller.quorum.voters=1@" + ctrlAddr
	common := []string{voters,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.controller.protocol=PLAIN",
		`listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="controller" password="controller-secret" user_controller="controller-secret";`,
	}
	ctrl := start(t, loadCluster(t, append(slices.Clone(common), "process.roles=controller", "node.id=1", "listeners=CONTROLLER://"+ctrlAddr)...))
	defer ctrl.Close()
	brk := start(t, loadCluster(t, append(slices.Clone(common), "process.roles=broker", "node.id=2", "listeners=PLAINTEXT://127.0.0.1:0")...))
	defer brk.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brk.Addr("PLAINTEXT")), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "split"); err != nil || r.Err != nil {
		t.Fatalf("create topic (forwarded to the controller): %v / %v", err, r.Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "split", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// A broker-only node's connections to the controller outlive their SASL
// sessions (connections.max.reauth.ms on the controller listener): when
// one ends, the metadata fetch goes out on a new connection to the same
// controller, which the node never stops knowing as the leader.
func TestSASLControllerSessionEndsQuietly(t *testing.T) {
	ctrlAddr := freeAddrs(t, 1)[0]
	common := []string{"controller.quorum.voters=1@" + ctrlAddr,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.controller.protocol=PLAIN",
		`listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="controller" password="controller-secret" user_controller="controller-secret";`,
		"listener.name.controller.connections.max.reauth.ms=2000",
	}
	ctrl := start(t, loadCluster(t, append(slices.Clone(common), "process.roles=controller", "node.id=1", "listeners=CONTROLLER://"+ctrlAddr)...))
	defer ctrl.Close()
	brk := start(t, loadCluster(t, append(slices.Clone(common), "process.roles=broker", "node.id=2", "listeners=PLAINTEXT://127.0.0.1:0")...))
	defer brk.Close()
	// Two sessions end within 3.5 s (each connection retires 1 s into it).
	for end := time.Now().Add(3500 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if id := brk.observer.Known(); id != 1 {
			t.Fatalf("the broker lost the controller (known leader %d) when a SASL session ended", id)
		}
	}
}
