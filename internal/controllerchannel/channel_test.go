package controllerchannel_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/controllerchannel"
	"github.com/samsa-io/samsa/internal/devcluster"
	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// A broker that is not the active controller forwards admin requests; the
// client must get its answer in the version it asked in, whichever that
// is, and the request must mean the same thing at the controller (a
// DeleteTopics v1 names its topics in a field v6 does not encode).
func TestForwardedRequestsKeepTheirVersion(t *testing.T) {
	n := startSplitNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := kclient.Dial(ctx, n.brk.Addr("PLAINTEXT"), "forward-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := conn.RequestAsIs(ctx, req)
		if err != nil {
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
		}
		if resp.GetVersion() != req.GetVersion() {
			t.Fatalf("%s v%d answered in v%d", kmsg.NameForKey(req.Key()), req.GetVersion(), resp.GetVersion())
		}
		return resp
	}
	wantOK := func(what string, code int16, msg *string) {
		t.Helper()
		if code != 0 {
			t.Fatalf("%s: %v (%v)", what, kerr.ErrorForCode(code), msg)
		}
	}

	var topics []string
	for v := int16(2); v <= 7; v++ {
		name := fmt.Sprintf("fwd-create-v%d", v)
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, ct)
		resp := send(req).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != name {
			t.Fatalf("CreateTopics v%d: topics %+v", v, resp.Topics)
		}
		wantOK(fmt.Sprintf("CreateTopics v%d", v), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
		topics = append(topics, name)
	}
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		cp := kmsg.NewCreatePartitionsRequestTopic()
		cp.Topic, cp.Count = topics[0], int32(v)+2
		req.Topics = append(req.Topics, cp)
		resp := send(req).(*kmsg.CreatePartitionsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != topics[0] {
			t.Fatalf("CreatePartitions v%d: topics %+v", v, resp.Topics)
		}
		wantOK(fmt.Sprintf("CreatePartitions v%d", v), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
	// The broker learns the result from the metadata log.
	waitTopics(ctx, t, conn, func(parts map[string]int) bool { return parts[topics[0]] == 5 },
		topics[0]+" has 5 partitions after growing to 5")
	for i, v := 0, int16(1); v <= 6; i, v = i+1, v+1 {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		if v < 6 {
			req.TopicNames = []string{topics[i]}
		} else {
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = &topics[i]
			req.Topics = append(req.Topics, dt)
		}
		resp := send(req).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != topics[i] {
			t.Fatalf("DeleteTopics v%d: topics %+v", v, resp.Topics)
		}
		wantOK(fmt.Sprintf("DeleteTopics v%d", v), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
	waitTopics(ctx, t, conn, func(parts map[string]int) bool { return len(parts) == 0 }, "no topics left after deleting all")
}

// A forwarded request is bounded by its own timeout: with no controller
// reachable the client hears REQUEST_TIMED_OUT once it passes, and the
// request is never sent afterwards, so a controller that comes back does
// not apply it.
func TestForwardedRequestStopsAtItsTimeout(t *testing.T) {
	n := startSplitNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := kclient.Dial(ctx, n.brk.Addr("PLAINTEXT"), "forward-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n.stopController()

	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 1000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "late", 1, 1
	req.Topics = append(req.Topics, ct)
	// The answer must come; how fast is not this test's business, but a
	// forward without a deadline never answers and ends the test here.
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	resp, err := conn.RequestAsIs(rctx, req)
	if err != nil {
		t.Fatalf("CreateTopics with no controller: %v", err)
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("CreateTopics with no controller: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}

	// The controller returns; a request sent now is served, the timed-out
	// one never is.
	n.startController(t)
	req2 := kmsg.NewPtrCreateTopicsRequest()
	req2.Version, req2.TimeoutMillis = 7, 15000
	ct.Topic = "after"
	req2.Topics = append(req2.Topics, ct)
	for {
		resp, err := conn.RequestAsIs(ctx, req2)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
		if code == 0 {
			break
		}
		if code != kerr.RequestTimedOut.Code && code != kerr.NotController.Code {
			t.Fatalf("CreateTopics after the controller returned: %v", kerr.ErrorForCode(code))
		}
	}
	parts := waitTopics(ctx, t, conn, func(parts map[string]int) bool { return parts["after"] > 0 }, "topic after created")
	if _, ok := parts["late"]; ok {
		t.Fatal("the timed-out CreateTopics was applied after the controller returned")
	}
}

// splitNodes are a controller-only node 1 and a broker-only node 2 in this
// process, closed when the test ends: the broker forwards to the
// controller over the controller listener.
type splitNodes struct {
	ctrl, brk *server.Server
	ccfg      *config.Config
}

func startSplitNodes(t *testing.T) *splitNodes {
	t.Helper()
	ctrlAddr := freeAddr(t)
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
	n.startController(t)
	t.Cleanup(func() {
		if n.ctrl != nil {
			n.ctrl.Close()
		}
	})
	n.brk = start(t, load("process.roles=broker", "node.id=2", "listeners=PLAINTEXT://127.0.0.1:0"))
	t.Cleanup(func() { n.brk.Close() })
	return n
}

func start(t *testing.T, cfg *config.Config) *server.Server {
	t.Helper()
	s, err := server.Start(cfg, servertest.Logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stopController closes the controller; startController brings it back on
// its data directory and address.
func (n *splitNodes) stopController() {
	n.ctrl.Close()
	n.ctrl = nil
}

func (n *splitNodes) startController(t *testing.T) { n.ctrl = start(t, n.ccfg) }

// waitTopics asks the broker for its topics (name → partitions) until
// they satisfy ok, and returns them.
func waitTopics(ctx context.Context, t *testing.T, conn *kclient.Conn, ok func(map[string]int) bool, what string) map[string]int {
	t.Helper()
	for {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatalf("waiting until %s: %v", what, err)
		}
		parts := map[string]int{}
		for _, mt := range resp.(*kmsg.MetadataResponse).Topics {
			if mt.ErrorCode == 0 && mt.Topic != nil {
				parts[*mt.Topic] = len(mt.Partitions)
			}
		}
		if ok(parts) {
			return parts
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting until %s: topics %v", what, parts)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// noLeader is a LeaderSource that never knows the active controller.
type noLeader struct{}

func (noLeader) Leader() int32   { return 0 }
func (noLeader) NotLeader(int32) {}

// A request sent in the background while no controller leads is still
// being retried when the channel closes: Close ends it (its done hears
// REQUEST_TIMED_OUT) instead of waiting out its timeout, and a request
// sent after Close is answered so at once, never sent.
func TestForwardInBackgroundEndsAtClose(t *testing.T) {
	ch := controllerchannel.New(controllerchannel.Config{NodeID: 1, Leaders: noLeader{}})
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 60000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "bg", 1, 1
	req.Topics = append(req.Topics, ct)

	answers := make(chan kmsg.Response, 2)
	ch.ForwardInBackground(context.Background(), req, func(r kmsg.Response) { answers <- r })
	closed := make(chan struct{})
	go func() {
		ch.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the background request's timeout")
	}
	ch.ForwardInBackground(context.Background(), req, func(r kmsg.Response) { answers <- r })
	for i := range 2 {
		select {
		case r := <-answers:
			if code := r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.RequestTimedOut.Code {
				t.Fatalf("answer %d: %v, want REQUEST_TIMED_OUT", i, kerr.ErrorForCode(code))
			}
		default:
			t.Fatalf("answer %d missing after Close", i)
		}
	}
}

// A broker that is not the controller forwards CreateTopics in an
// Envelope naming the client (KIP-590), so the controller counts it
// against that client's controller_mutation_rate (KIP-599): its second
// request, once the first overdrew the bucket, is refused with
// THROTTLING_QUOTA_EXCEEDED and throttle_time_ms, while another client
// id is not limited.
func TestForwardedRequestCountsAgainstTheClientsQuota(t *testing.T) {
	n := startSplitNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(clientID string) *kclient.Conn {
		conn, err := kclient.Dial(ctx, n.brk.Addr("PLAINTEXT"), clientID)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	admin := dial("quota-admin")
	q := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = "client-id", kmsg.StringPtr("mutator")
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "controller_mutation_rate", 1 // a bucket of 11 tokens
	e.Entity, e.Ops = append(e.Entity, ent), append(e.Ops, op)
	q.Entries = append(q.Entries, e)
	if resp, err := admin.Request(ctx, q); err != nil || resp.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas: %v %+v", err, resp)
	}
	create := func(conn *kclient.Conn, name string) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 10000
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 12, 1
		req.Topics = append(req.Topics, ct)
		resp, err := conn.RequestAsIs(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.CreateTopicsResponse)
	}
	// 12 partitions overdraw the 11 tokens; the next request waits 1 s.
	mutator := dial("mutator")
	if r := create(mutator, "quota-first"); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("first CreateTopics: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	r := create(mutator, "quota-second")
	if r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis < 500 || r.ThrottleMillis > 1000 {
		t.Fatalf("second CreateTopics of 12 partitions at 1/s: %v, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED, about 1 s",
			kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	if r := create(dial("other"), "quota-other"); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("another client id: %v, throttle %d ms", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
}

// leaderOne is a LeaderSource that names node 1 and counts how often
// it is told node 1 refused or could not be reached.
type leaderOne struct{ notLeader atomic.Int32 }

func (l *leaderOne) Leader() int32      { return 1 }
func (l *leaderOne) NotLeader(id int32) { l.notLeader.Add(1) }

// A controller connection whose SASL session ends
// (connections.max.reauth.ms) is replaced under the request: the request
// goes out on a new connection at once, and the controller is not
// reported unreachable (on a broker-only node that would make it look
// for another leader).
func TestRequestsOutliveTheSASLSession(t *testing.T) {
	addr := freeAddr(t)
	cfg, _, err := config.Load("", []string{"log.dirs=" + t.TempDir(), "process.roles=controller", "node.id=1",
		"listeners=CONTROLLER://" + addr, "controller.quorum.voters=1@" + addr,
		"listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT", "sasl.enabled.mechanisms=PLAIN",
		`listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_node="node-secret";`,
		"connections.max.reauth.ms=2000"})
	if err != nil {
		t.Fatal(err)
	}
	defer start(t, cfg).Close()
	leaders := &leaderOne{}
	ch := controllerchannel.New(controllerchannel.Config{NodeID: 2, Leaders: leaders, Voters: map[int32]string{1: addr},
		Dialer: kclient.Dialer{SASL: func() sasl.Mechanism { return plain.Auth{User: "node", Pass: "node-secret"}.AsMechanism() }},
		Logger: servertest.Logger()})
	defer ch.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// forward asks the controller to validate a topic it cannot place
	// (it has no brokers): INVALID_REPLICATION_FACTOR is its own answer.
	forward := func(when string) {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis, req.ValidateOnly = 7, 5000, true
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "t", 1, 1
		req.Topics = append(req.Topics, ct)
		resp := ch.Forward(ctx, req).(*kmsg.CreateTopicsResponse)
		if code := resp.Topics[0].ErrorCode; code != kerr.InvalidReplicationFactor.Code {
			t.Fatalf("%s: %v, want the controller's %v", when, kerr.ErrorForCode(code), kerr.InvalidReplicationFactor)
		}
	}
	forward("within the session")
	time.Sleep(1100 * time.Millisecond) // the connection retires 1 s into its 2 s session
	forward("after the session ended")
	if n := leaders.notLeader.Load(); n > 0 {
		t.Errorf("the controller was reported unreachable %d times", n)
	}
}

// freeAddr is a loopback address for a node to bind, outside the range
// outgoing connections take their ports from (devcluster.FreePorts).
func freeAddr(t *testing.T) string {
	t.Helper()
	ports, err := devcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}
