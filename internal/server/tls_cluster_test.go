package server

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/devcluster"
	"github.com/samsa-io/samsa/internal/security/tlstest"
)

// freeAddrs reserves n loopback addresses for controller listeners.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	ports, err := devcluster.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	return addrs
}

// nodeSSLProps are the ssl.* keys of node id: its own certificate, the
// shared CA as trust store, client certificates required on every
// listener, the controller listener included.
func (p *testPKI) nodeSSLProps(t *testing.T, id int) []string {
	cert := p.ca.Server(t, pkix.Name{CommonName: "broker-" + strconv.Itoa(id), Organization: []string{"Samsa"}})
	return []string{
		"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + cert.WritePKCS12(t, p.dir, fmt.Sprintf("node%d.p12", id)),
		"ssl.keystore.password=" + tlstest.Password,
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + p.trustPEM,
		"ssl.client.auth=required",
		"listener.security.protocol.map=SSL:SSL,CONTROLLER:SSL",
	}
}

func loadCluster(t *testing.T, props ...string) *config.Config {
	t.Helper()
	cfg, warnings, err := config.Load("", append(props, "log.dirs="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	cfg.ClusterID = "MkU3OEVBNTcwNTJENDM2Qg"
	return cfg
}

// Three combined nodes whose inter-broker and controller listeners are
// SSL with client certificates required: the raft quorum, registration,
// replica fetching and transaction markers all run over mutual TLS. A
// topic replicated three times takes acks=all writes, keeps all three
// replicas in sync, and a transaction spanning leaders on every node
// commits.
func TestSSLInterBrokerCluster(t *testing.T) {
	p := newTestPKI(t)
	addrs := freeAddrs(t, 3)
	voters := fmt.Sprintf("controller.quorum.voters=1@%s,2@%s,3@%s", addrs[0], addrs[1], addrs[2])
	cfgs := make([]*config.Config, 3)
	for i := range cfgs {
		cfgs[i] = loadCluster(t, append(p.nodeSSLProps(t, i+1),
			"node.id="+strconv.Itoa(i+1), voters,
			"listeners=SSL://127.0.0.1:0,CONTROLLER://"+addrs[i],
			"inter.broker.listener.name=SSL",
			"offsets.topic.replication.factor=3", "transaction.state.log.replication.factor=3",
			"transaction.state.log.min.isr=2",
			"replica.fetch.backoff.ms=50", "replica.fetch.wait.max.ms=100")...)
	}
	nodes := make([]*Server, 3)
	errs := make(chan error, 3)
	for i := range nodes {
		go func() {
			s, err := Start(cfgs[i], quiet(), nil)
			nodes[i] = s
			errs <- err
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, s := range nodes {
			s.Close()
		}
	}()
	seeds := []string{nodes[0].Addr("SSL"), nodes[1].Addr("SSL"), nodes[2].Addr("SSL")}
	tlsCfg := p.clientTLS(p.client)
	cl := kgoTLS(t, seeds[0], tlsCfg, kgo.SeedBrokers(seeds...), kgo.RetryTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, "replicated"); err != nil || (r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists)) {
		t.Fatalf("create topic: %v / %v", err, r.Err)
	}
	var recs []*kgo.Record
	for i := range 60 {
		recs = append(recs, &kgo.Record{Topic: "replicated", Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("acks=all produce: %v", err)
	}
	// Every replica fetches over TLS: all three stay in sync, and every
	// leader's high watermark reaches its 20 records.
	for {
		md, err := adm.Metadata(ctx, "replicated")
		if err != nil {
			t.Fatal(err)
		}
		ends, err := adm.ListEndOffsets(ctx, "replicated")
		if err != nil {
			t.Fatal(err)
		}
		inSync := true
		for _, pd := range md.Topics["replicated"].Partitions {
			inSync = inSync && len(pd.ISR) == 3
			if o, ok := ends.Lookup("replicated", pd.Partition); !ok || o.Offset != 20 {
				inSync = false
			}
		}
		if inSync {
			break
		}

		if ctx.Err() != nil {
			t.Fatalf("replicas not in sync: %+v", md.Topics["replicated"].Partitions)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A transaction over the three partitions, whose leaders are spread
	// over the nodes: the coordinator writes remote markers over TLS.
	txn := kgoTLS(t, seeds[0], tlsCfg, kgo.SeedBrokers(seeds...), kgo.TransactionalID("tls-txn"), kgo.RetryTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
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
	cons := kgoTLS(t, seeds[0], tlsCfg, kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("replicated"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := 0
	committed := 0
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
}

// A controller-only node whose controller listener is SSL and a
// broker-only node that reaches it over mutual TLS: the broker fetches
// the metadata log, registers and forwards admin requests through it.
func TestSSLControllerListenerSplitNodes(t *testing.T) {
	p := newTestPKI(t)
	ctrlAddr := freeAddrs(t, 1)[0]
	voters := "controller.quorum.voters=1@" + ctrlAddr
	ctrl := start(t, loadCluster(t, append(p.nodeSSLProps(t, 1), "process.roles=controller", "node.id=1", voters,
		"listeners=CONTROLLER://"+ctrlAddr)...))
	defer ctrl.Close()
	brk := start(t, loadCluster(t, append(p.nodeSSLProps(t, 2), "process.roles=broker", "node.id=2", voters,
		"listeners=SSL://127.0.0.1:0", "inter.broker.listener.name=SSL")...))
	defer brk.Close()
	produceConsumeTLS(t, brk.Addr("SSL"), p.clientTLS(p.client), "split", 10)
	// A client certificate the controller does not trust gets nothing.
	if err := requestFails(t, ctrlAddr, p.clientTLS(p.stranger)); err == nil {
		t.Fatal("the controller listener served an untrusted client")
	}
}
