package server

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/kclient"
)

// dynamicConfig is node id of a dynamic quorum whose bootstrap servers
// are ctrl; roles is process.roles.
func dynamicConfig(t *testing.T, id int, roles string, ctrl []string, client string) *config.Config {
	t.Helper()
	listeners := "CONTROLLER://" + ctrl[id-1]
	if client != "" {
		listeners = "PLAINTEXT://" + client + "," + listeners
	}
	cfg, _, err := config.Load("", []string{
		fmt.Sprintf("node.id=%d", id), "process.roles=" + roles, "listeners=" + listeners,
		"controller.quorum.voters=", "controller.quorum.bootstrap.servers=" + strings.Join(ctrl, ","),
		"log.dirs=" + t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClusterID = "MkU3OEVBNTcwNTJENDM2Qg"
	return cfg
}

// The split brain of issue 14: several nodes configured with only
// controller.quorum.bootstrap.servers (naming each other), no static
// voters and no initial voter set. Kafka's format refuses to guess; so
// does Samsa: controllers join and wait, never lead, so no node of the
// cluster id has a leader; a combined node refuses to start. Formatted
// with --initial-controllers, the same nodes form exactly one quorum.
func TestBootstrapServersNeverSplitBrain(t *testing.T) {
	ctrl := freeAddrs(t, 3)
	var nodes []*Server
	for id := 1; id <= 3; id++ {
		s := start(t, dynamicConfig(t, id, "controller", ctrl, ""))
		t.Cleanup(func() { s.Close() })
		nodes = append(nodes, s)
	}
	// Many election timeouts (10 ticks of 100ms): nobody campaigns.
	for range 30 {
		for _, s := range nodes {
			if l := s.raft.Leader(); l != 0 {
				t.Fatalf("node %d sees leader %d: controllers without an initial voter set formed a quorum", s.cfg.NodeID, l)
			}
			if vs, _, err := s.raft.Voters(context.Background()); err != nil || len(vs) != 0 {
				t.Fatalf("node %d has voters %v (%v), want none", s.cfg.NodeID, vs, err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}

	combined := freeAddrs(t, 3)
	_, err := Start(dynamicConfig(t, 1, "broker,controller", combined[:2], combined[2]), quiet(), nil)
	if err == nil {
		t.Fatal("a combined node whose bootstrap servers name another started alone")
	}
	if !strings.Contains(err.Error(), "controller.quorum.bootstrap.servers") {
		t.Fatalf("error %q does not name controller.quorum.bootstrap.servers", err)
	}
}

// Three controllers formatted with --initial-controllers (each its own
// directory id) elect exactly one leader, whom all three agree on.
func TestInitialControllersFormOneQuorum(t *testing.T) {
	ctrl := freeAddrs(t, 3)
	var ic []config.InitialController
	for i, a := range ctrl {
		host, port, _ := net.SplitHostPort(a)
		p, _ := net.LookupPort("tcp", port)
		ic = append(ic, config.InitialController{ID: int32(i + 1), Host: host, Port: p, DirectoryID: [16]byte{byte(i + 1), 7}})
	}
	type started struct {
		s   *Server
		err error
	}
	done := make(chan started, 3)
	for id := 1; id <= 3; id++ {
		cfg := dynamicConfig(t, id, "controller", ctrl, "")
		cfg.Quorum.InitialControllers = ic
		go func() {
			s, err := Start(cfg, quiet(), nil)
			done <- started{s, err}
		}()
	}
	var nodes []*Server
	for range 3 {
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		t.Cleanup(func() { r.s.Close() })
		nodes = append(nodes, r.s)
	}
	leader := nodes[0].raft.Leader()
	for _, s := range nodes {
		if s.raft.Leader() != leader || leader == 0 {
			t.Fatalf("node %d sees leader %d, node %d sees %d", s.cfg.NodeID, s.raft.Leader(), nodes[0].cfg.NodeID, leader)
		}
		if s.metadataDirID != ic[s.cfg.NodeID-1].DirectoryID {
			t.Fatalf("node %d's metadata directory id %x, want the --initial-controllers one", s.cfg.NodeID, s.metadataDirID)
		}
	}
}

// UpdateRaftVoter on the leader's controller listener replaces a voter's
// endpoints, which DescribeQuorum v2 then lists; an unknown voter is
// VOTER_NOT_FOUND and endpoints without the controller listener
// INVALID_REQUEST.
func TestUpdateRaftVoter(t *testing.T) {
	ctrl := freeAddrs(t, 1)
	cfg := dynamicConfig(t, 1, "controller", ctrl, "")
	cfg.Quorum.Standalone = true
	s := start(t, cfg)
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := kclient.Dial(ctx, ctrl[0], "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	host, port, _ := net.SplitHostPort(ctrl[0])
	p, _ := strconv.Atoi(port)
	update := func(id int32, names ...string) int16 {
		t.Helper()
		req := kmsg.NewPtrUpdateRaftVoterRequest()
		req.VoterID, req.VoterDirectoryID = id, s.metadataDirID
		req.KRaftVersionFeature.MinSupportedVersion, req.KRaftVersionFeature.MaxSupportedVersion = 0, 1
		for i, n := range names {
			l := kmsg.NewUpdateRaftVoterRequestListener()
			l.Name, l.Host, l.Port = n, host, uint16(p+i)
			req.Listeners = append(req.Listeners, l)
		}
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.UpdateRaftVoterResponse)
		if r.CurrentLeader.LeaderID != 1 || r.CurrentLeader.Port != int32(p) {
			t.Fatalf("CurrentLeader %+v, want node 1 on port %d", r.CurrentLeader, p)
		}
		return r.ErrorCode
	}
	if code := update(1, "CONTROLLER", "EXTRA"); code != 0 {
		t.Fatalf("UpdateRaftVoter: %v", kerr.ErrorForCode(code))
	}
	if code := update(9, "CONTROLLER"); code != kerr.VoterNotFound.Code {
		t.Fatalf("UpdateRaftVoter of node 9: %v, want VOTER_NOT_FOUND", kerr.ErrorForCode(code))
	}
	if code := update(1, "EXTRA"); code != kerr.InvalidRequest.Code {
		t.Fatalf("UpdateRaftVoter without the controller listener: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	// The update above recorded an EXTRA listener node 1 does not have:
	// the node itself sends UpdateRaftVoter (here, leading, makes the
	// change) until the voter set holds its own listener only.
	want := []string{fmt.Sprintf("1:CONTROLLER:%d", p)}
	var got []string
	for {
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, n := range resp.(*kmsg.DescribeQuorumResponse).Nodes {
			for _, l := range n.Listeners {
				got = append(got, fmt.Sprintf("%d:%s:%d", n.NodeID, l.Name, l.Port))
			}
		}
		if slices.Equal(got, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("DescribeQuorum nodes %v, want %v", got, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A broker-only node fetches the metadata log from the leader: the
// leader's DescribeQuorum lists it as an observer, with the offset it
// fetched, as Kafka lists its brokers.
func TestBrokerOnlyNodeIsAnObserver(t *testing.T) {
	n := startSplitNodes(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.brk.Addr("PLAINTEXT")), kgo.RetryTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	r, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Topics[0].Partitions[0]
	if len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != 1 {
		t.Fatalf("voters %+v, want node 1", p.CurrentVoters)
	}
	if len(p.Observers) != 1 || p.Observers[0].ReplicaID != 2 || p.Observers[0].LogEndOffset <= 0 || p.Observers[0].LastFetchTimestamp <= 0 {
		t.Fatalf("observers %+v, want broker 2 with its fetch offset and time", p.Observers)
	}
}

// Kafka 4's multi-node configuration: a broker-only node with
// controller.quorum.bootstrap.servers and no voters finds the quorum
// through them, registers, serves clients and is the leader's observer.
func TestBrokerOnlyNodeFindsDynamicQuorum(t *testing.T) {
	ctrl := freeAddrs(t, 1)
	ccfg := dynamicConfig(t, 1, "controller", ctrl, "")
	ccfg.Quorum.Standalone = true
	c := start(t, ccfg)
	t.Cleanup(func() { c.Close() })
	bcfg, _, err := config.Load("", []string{"node.id=2", "process.roles=broker", "listeners=PLAINTEXT://127.0.0.1:0",
		"controller.quorum.voters=", "controller.quorum.bootstrap.servers=" + ctrl[0], "log.dirs=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	bcfg.ClusterID = ccfg.ClusterID
	b := start(t, bcfg)
	t.Cleanup(func() { b.Close() })
	addr := b.Addr("PLAINTEXT")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "dyn"); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, "dyn", 5, 0)
	if got := consumeAll(t, addr, "dyn", 5); string(got[4].Value) != "v4" {
		t.Fatalf("consumed %q last", got[4].Value)
	}
	if obs := c.raft.Observers(); len(obs) != 1 || obs[0].ID != 2 {
		t.Fatalf("leader's observers %+v, want broker 2", obs)
	}
}

// A static quorum refuses voter changes until kafka-features upgrades
// kraft.version to 1 (as Kafka 4.4 allows); then a controller that joined
// through controller.quorum.bootstrap.servers is added, and the static
// voter's endpoint is recorded in the quorum. Downgrading is refused.
func TestKRaftVersionUpgradeOfAStaticQuorum(t *testing.T) {
	addrs := freeAddrs(t, 2)
	cfg1, _, err := config.Load("", []string{"node.id=1", "process.roles=controller", "listeners=CONTROLLER://" + addrs[0],
		"controller.quorum.voters=1@" + addrs[0], "log.dirs=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg1.ClusterID = "MkU3OEVBNTcwNTJENDM2Qg"
	s1 := start(t, cfg1)
	t.Cleanup(func() { s1.Close() })
	cfg2 := dynamicConfig(t, 2, "controller", []string{addrs[0], addrs[1]}, "")
	cfg2.ControllerQuorumBootstrapServers = addrs[:1]
	cfg2.Quorum.NoInitialControllers = true
	s2 := start(t, cfg2)
	t.Cleanup(func() { s2.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := kclient.Dial(ctx, addrs[0], "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	host, port, _ := net.SplitHostPort(addrs[1])
	p, _ := strconv.Atoi(port)
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID, add.VoterDirectoryID, add.TimeoutMillis = 2, s2.metadataDirID, 20000
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(p)
	add.Listeners = append(add.Listeners, l)
	addVoter := func() int16 {
		t.Helper()
		r, err := conn.Request(ctx, add)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.AddRaftVoterResponse).ErrorCode
	}
	if code := addVoter(); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("AddRaftVoter on a static quorum: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(code))
	}
	updateKRaft := func(level int16, upgrade int8) *kmsg.UpdateFeaturesResponse {
		t.Helper()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = 1
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = "kraft.version", level, upgrade
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		r, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.UpdateFeaturesResponse)
	}
	if r := updateKRaft(1, 1); r.ErrorCode != 0 {
		t.Fatalf("upgrade kraft.version to 1: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	if code := addVoter(); code != 0 {
		t.Fatalf("AddRaftVoter after the upgrade: %v", kerr.ErrorForCode(code))
	}
	vs, _, err := s1.raft.Voters(ctx)
	if err != nil || len(vs) != 2 || len(vs[0].Endpoints) != 1 || vs[0].Endpoints[0].Addr() != addrs[0] || vs[1].DirectoryID != s2.metadataDirID {
		t.Fatalf("voters %+v (%v): want node 1 at %s and node 2 with its directory id", vs, err, addrs[0])
	}
	if r := updateKRaft(0, 2); r.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("downgrade kraft.version: %v, want INVALID_UPDATE_VERSION", kerr.ErrorForCode(r.ErrorCode))
	}
}

// DescribeCluster on the controller listener (what an admin client with
// bootstrap.controllers sends) lists the voters and the active one;
// brokers are not described there.
func TestDescribeClusterOnControllerListener(t *testing.T) {
	ctrl := freeAddrs(t, 1)
	cfg := dynamicConfig(t, 1, "controller", ctrl, "")
	cfg.Quorum.Standalone = true
	s := start(t, cfg)
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := kclient.Dial(ctx, ctrl[0], "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	describe := func(endpointType int8) *kmsg.DescribeClusterResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = 1, endpointType
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.DescribeClusterResponse)
	}
	r := describe(2)
	host, port, _ := net.SplitHostPort(ctrl[0])
	if r.ErrorCode != 0 || r.ControllerID != 1 || r.ClusterID != cfg.ClusterID || len(r.Brokers) != 1 ||
		r.Brokers[0].NodeID != 1 || r.Brokers[0].Host != host || strconv.Itoa(int(r.Brokers[0].Port)) != port {
		t.Fatalf("DescribeCluster(controllers) = %+v, want controller 1 at %s", r, ctrl[0])
	}
	if r := describe(1); r.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Fatalf("DescribeCluster(brokers) on the controller listener: %v, want UNSUPPORTED_ENDPOINT_TYPE", kerr.ErrorForCode(r.ErrorCode))
	}
}
