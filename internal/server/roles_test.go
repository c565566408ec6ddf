package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/config"
)

// splitNodes are a controller-only node 1 and a broker-only node 2 in this
// process, closed when the test ends.
type splitNodes struct {
	ctrl, brk *Server
	ccfg      *config.Config
}

func startSplitNodes(t *testing.T) *splitNodes {
	t.Helper()
	ctrlAddr := freeAddrs(t, 1)[0]
	voters := "controller.quorum.voters=1@" + ctrlAddr
	load := func(props ...string) *config.Config {
		cfg, _, err := config.Load("", append(props, "log.dirs="+t.TempDir(), voters))
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClusterID = "MkU3OEVBNTcwNTJENDM2Qg"
		return cfg
	}
	n := &splitNodes{ccfg: load("process.roles=controller", "node.id=1", "listeners=CONTROLLER://"+ctrlAddr)}
	n.ctrl = start(t, n.ccfg)
	t.Cleanup(func() { n.ctrl.Close() })
	n.brk = start(t, load("process.roles=broker", "node.id=2", "listeners=PLAINTEXT://127.0.0.1:0"))
	t.Cleanup(func() { n.brk.Close() })
	return n
}

// TestControllerOnlyAndBrokerOnlyNodes runs a controller-only node and a
// broker-only node in one process: the broker learns the metadata by
// fetching it, registers through the controller listener and serves
// clients; the controller serves no clients.
func TestControllerOnlyAndBrokerOnlyNodes(t *testing.T) {
	n := startSplitNodes(t)
	ctrl, brk := n.ctrl, n.brk
	if ctrl.Addr("PLAINTEXT") != "" || ctrl.broker != nil || ctrl.logs != nil {
		t.Fatal("controller-only node runs broker parts")
	}
	if brk.raft != nil || brk.ctrl != nil {
		t.Fatal("broker-only node runs quorum parts")
	}
	addr := brk.Addr("PLAINTEXT")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Clients cannot reach a controller-only node: the broker names
	// itself, and forwards (as Kafka does).
	if len(md.Brokers) != 1 || md.Brokers[0].NodeID != 2 || md.Controller != 2 {
		t.Fatalf("brokers %+v, controller %d; want only broker 2 as controller", md.Brokers, md.Controller)
	}
	if id := brk.observer.Known(); id != 1 {
		t.Fatalf("broker knows controller %d, want 1", id)
	}
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "roles"); err != nil || r.Err != nil {
		t.Fatalf("create topic via the broker-only node: %v / %v", err, r.Err)
	}
	produce(t, cl, "roles", 10, 0)
	got := consumeAll(t, addr, "roles", 10)
	if string(got[9].Value) != "v9" {
		t.Fatalf("consumed %q last", got[9].Value)
	}
	// The controller's image and the broker's agree.
	if err := brk.loader.WaitFor(ctx, ctrl.loader.Image().Offset); err != nil {
		t.Fatal(err)
	}
	if _, ok := brk.loader.Image().Topic("roles"); !ok {
		t.Fatal("broker image has no topic roles")
	}
}

func TestCheckSupportedRoles(t *testing.T) {
	for _, tc := range []struct {
		props []string
		ok    bool
	}{
		{[]string{"process.roles=controller", "node.id=1", "controller.quorum.voters=1@127.0.0.1:9093", "listeners=CONTROLLER://127.0.0.1:9093"}, true},
		{[]string{"process.roles=broker", "node.id=4", "controller.quorum.voters=1@127.0.0.1:9093", "listeners=PLAINTEXT://127.0.0.1:9092"}, true},
		{[]string{"process.roles=broker", "node.id=4", "controller.quorum.voters=", "controller.quorum.bootstrap.servers=127.0.0.1:9093", "listeners=PLAINTEXT://127.0.0.1:9092"}, true},
		{[]string{"process.roles=broker", "node.id=1", "controller.quorum.voters=1@127.0.0.1:9093", "listeners=PLAINTEXT://127.0.0.1:9092"}, false},
		// A controller of a dynamic quorum (KIP-853; dynamic_quorum_test.go).
		{[]string{"process.roles=controller", "node.id=1", "controller.quorum.voters=", "controller.quorum.bootstrap.servers=127.0.0.1:9093", "listeners=CONTROLLER://127.0.0.1:9093"}, true},
	} {
		cfg, _, err := config.Load("", append(tc.props, "log.dirs=/tmp/unused"))
		if err != nil {
			t.Fatalf("%v: %v", tc.props, err)
		}
		if err := checkSupported(cfg); (err == nil) != tc.ok {
			t.Errorf("%v: checkSupported = %v, want ok=%v", tc.props, err, tc.ok)
		}
	}
}

// Security settings Samsa cannot honour yet stop start-up, naming the key,
// rather than serve a listener with less protection than configured.
func TestCheckSupportedFailsClosed(t *testing.T) {
	combined := []string{"process.roles=broker,controller", "node.id=1", "controller.listener.names=CONTROLLER"}
	for _, tc := range []struct {
		props []string
		want  string // "" for accepted; else a substring of the error
	}{
		{[]string{"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.quorum.voters=1@127.0.0.1:9093"}, ""},
		// SSL is served; its key store is checked when the node starts
		// (tls_test.go).
		{[]string{"listeners=SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.quorum.voters=1@127.0.0.1:9093",
			"inter.broker.listener.name=SSL"}, ""},
		// A broker-only node dialing a SASL controller listener.
		{[]string{"process.roles=broker", "node.id=2", "listeners=PLAINTEXT://127.0.0.1:9092", "controller.quorum.voters=1@127.0.0.1:9093",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"}, "listener CONTROLLER"},
		{[]string{"listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
			"controller.quorum.voters=1@127.0.0.1:9093"}, "GSSAPI (sasl.enabled.mechanisms=GSSAPI)"},
		{[]string{"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.quorum.voters=1@127.0.0.1:9093",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL"}, "listener CONTROLLER"},
		{[]string{"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.quorum.voters=1@127.0.0.1:9093",
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"}, ""},
		{[]string{"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.quorum.voters=1@127.0.0.1:9093",
			"authorizer.class.name=kafka.security.authorizer.AclAuthorizer"}, "Kafka 4 removed"},
		{[]string{"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.quorum.voters=1@127.0.0.1:9093",
			"authorizer.class.name=com.example.MyAuthorizer"}, "authorizer.class.name=com.example.MyAuthorizer: Samsa cannot load custom authorizers"},
		// Kafka 4's single-node server.properties: bootstrap from itself.
		{[]string{"listeners=PLAINTEXT://:9092,CONTROLLER://:9093", "controller.quorum.voters=", "controller.quorum.bootstrap.servers=localhost:9093"}, ""},
		// Other controllers to bootstrap from: never a quorum of one
		// (the log decides at start: dynamic_quorum_test.go).
		{[]string{"listeners=PLAINTEXT://:9092,CONTROLLER://:9093", "controller.quorum.voters=", "controller.quorum.bootstrap.servers=localhost:9093,host2:9093"}, ""},
	} {
		cfg, _, err := config.Load("", append(append(slices.Clone(combined), tc.props...), "log.dirs=/tmp/unused"))
		if err != nil {
			t.Fatalf("%v: %v", tc.props, err)
		}
		err = checkSupported(cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.props, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: checkSupported = %v, want an error naming %q", tc.props, err, tc.want)
		}
	}
}
