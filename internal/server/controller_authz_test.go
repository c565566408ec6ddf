package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/security"
)

// With an authorizer, the controller listener serves the nodes only:
// its users are the nodes' (super users here) and alice, whom the
// listener's JAAS config also lists. The broker-only node registers,
// fetches the metadata log and forwards CreateTopics as the controller
// user; alice logs in too, but every request she sends there is refused
// with CLUSTER_AUTHORIZATION_FAILED.
func TestControllerListenerAuthorizesNodes(t *testing.T) {
	ctrlAddr := freeAddrs(t, 1)[0]
	common := []string{"controller.quorum.voters=1@" + ctrlAddr,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.controller.protocol=PLAIN",
		`listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="controller" password="controller-secret" user_controller="controller-secret" user_alice="alice-secret";`,
		"authorizer.class.name=" + StandardAuthorizer, "super.users=User:controller;User:ANONYMOUS",
	}
	ctrl := start(t, loadCluster(t, append(slices.Clone(common), "process.roles=controller", "node.id=1", "listeners=CONTROLLER://"+ctrlAddr)...))
	defer ctrl.Close()
	brk := start(t, loadCluster(t, append(slices.Clone(common), "process.roles=broker", "node.id=2", "listeners=PLAINTEXT://127.0.0.1:0")...))
	defer brk.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brk.Addr("PLAINTEXT")), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "allowed"); err != nil || r.Err != nil {
		t.Fatalf("create topic (forwarded by the broker as User:controller): %v / %v", err, r.Err)
	}

	// controllerClient talks to the controller listener directly (its
	// seed broker: the listener serves no Metadata to route by).
	controllerClient := func(user, pass string) *kgo.Broker {
		c, err := kgo.NewClient(kgo.SeedBrokers(ctrlAddr), kgo.RetryTimeout(time.Second),
			kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.SeedBrokers()[0]
	}
	alice := controllerClient("alice", "alice-secret")
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch = 2, -1
	hbResp, err := hb.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(hbResp.ErrorCode); err != kerr.ClusterAuthorizationFailed {
		t.Fatalf("alice's BrokerHeartbeat: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "by-alice", 1, 1
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 5000
	createResp, err := create.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if len(createResp.Topics) != 1 || kerr.ErrorForCode(createResp.Topics[0].ErrorCode) != kerr.ClusterAuthorizationFailed {
		t.Fatalf("alice's CreateTopics on the controller listener: %+v, want CLUSTER_AUTHORIZATION_FAILED", createResp.Topics)
	}
	// The node's own user is served: its heartbeat for an unknown
	// epoch is answered by the controller, not refused.
	hbResp, err = hb.RequestWith(ctx, controllerClient("controller", "controller-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(hbResp.ErrorCode); err == kerr.ClusterAuthorizationFailed {
		t.Fatalf("the controller user's BrokerHeartbeat was refused: %v", err)
	}
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("by-alice") {
		t.Fatal("alice created a topic through the controller listener")
	}

}

// On a controller listener with an authorizer, a raft connection reaches
// the transport only if its principal may act as a node: before the ACLs
// are loaded only super users, after that whoever has CLUSTER_ACTION on
// the cluster.
func TestRaftConnectionsNeedClusterAction(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s" ` +
		`user_controller="controller-secret" user_alice="alice-secret";`
	load := func(user, pass string) *config.Config {
		cfg, _, err := config.Load("", []string{"log.dirs=/tmp/unused", "node.id=1", "controller.listener.names=CONTROLLER",
			"controller.quorum.voters=1@127.0.0.1:9093,2@127.0.0.1:9095",
			"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
			"sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.controller.protocol=PLAIN",
			"listener.name.controller.plain.sasl.jaas.config=" + fmt.Sprintf(jaas, user, pass)})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	sc, _, err := saslListener(load("controller", "controller-secret"), "CONTROLLER", nil)
	if err != nil {
		t.Fatal(err)
	}
	authz, err := security.NewAuthorizer(security.Config{SuperUsers: []string{"User:controller"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	split := newSplitListener(ln, quiet(), nil, "CONTROLLER", sc, authz)
	defer split.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := split.raft.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// reaches dials as user and reports whether the connection got to
	// the transport.
	reaches := func(user, pass string) bool {
		t.Helper()
		d, err := newNodeDialers(load(user, pass), &nodeTLS{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := d.controller.raw()(ctx, "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("%s's raft dial: %v (the login itself is valid)", user, err)
		}
		defer c.Close()
		c.Write([]byte(raftMagic + "hello"))
		select {
		case got := <-accepted:
			got.Close()
			return true
		case <-time.After(time.Second):
		}
		// Closed with our hello unread, the socket may be reset rather
		// than ended: either way nothing is read and it is closed.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := io.ReadAll(c); len(n) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("%s's refused raft connection: read %q, %v; want it closed", user, n, err)
		}
		return false
	}

	if !reaches("controller", "controller-secret") || reaches("alice", "alice-secret") {
		t.Fatal("before the ACLs load, only the super user's raft connection may reach the transport")
	}
	// Loaded, with no ACLs: still only the super user.
	loader := metadata.NewLoader("cluster", quiet())
	if err := loader.Register(security.ACLPublisher{A: authz}); err != nil {
		t.Fatal(err)
	}
	if reaches("alice", "alice-secret") {
		t.Fatal("alice's raft connection reached the transport without CLUSTER_ACTION")
	}
	authz.SetACLs(security.NewACLSet([]security.ACL{{
		ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: security.ClusterName, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationClusterAction, Permission: kmsg.ACLPermissionTypeAllow,
	}}))
	if !reaches("alice", "alice-secret") {
		t.Fatal("alice's raft connection was refused though she has CLUSTER_ACTION on the cluster")
	}
}
