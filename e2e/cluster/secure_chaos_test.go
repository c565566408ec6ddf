package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/e2e/clustertest"
	"github.com/samsa-io/samsa/internal/devcluster"
)

// The secured cluster's users (SCRAM-SHA-512, created with the metadata
// log) besides the nodes' own: admin administers by ACLs, alice produces
// and consumes, mallory has a password and no ACL.
var secureUsers = map[string]string{"admin": "admin-secret", "alice": "alice-secret", "mallory": "mallory-secret"}

// chaosGroup is the group of the secured kill loop's consumer.
const chaosGroup = "chaos-readers"

// TestAcknowledgedRecordsSurviveKillsSecured runs the kill loop
// (killLoop.run) on three combined nodes where every listener is
// SASL_SSL (clustertest.SASLSSL): clients and the inter-broker listener
// log in with SCRAM-SHA-512, the nodes to the controller listener with
// PLAIN and their certificates. StandardAuthorizer denies what no ACL
// allows and the only super user is the nodes' own principal, so a
// replica fetch is served only if the follower logged in as the nodes'
// user after every kill. The producer and the consumer (in a group) are
// alice, who has exactly the ACLs a Kafka user needs for that, granted
// through CreateAcls by admin, who holds ACLs, not super-user rights.
//
// Every node before the chaos, and each killed node as soon as it serves
// again, must authenticate alice and allow her (its SCRAM credentials
// and ACLs are loaded before it serves), and refuse, with Kafka's
// errors, a client without TLS or SASL, a wrong password, and mallory,
// who logs in but has no ACL. While each victim is down, admin creates,
// restricts and deletes users (guests); the victim must know all of it
// as soon as it serves again. No node may ever have its login to another
// refused.
func TestAcknowledgedRecordsSurviveKillsSecured(t *testing.T) {
	rng := chaosRand(t)
	sec := clustertest.NewSASLSSL(t, secureUsers)
	cfg := devcluster.Config{Nodes: 3, Properties: []string{
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=false",
		"super.users=" + sec.NodePrincipal(),
		// Sessions of 3 s: every connection, the clients' (franz-go
		// re-authenticates in place) and the nodes' (they dial anew),
		// renews its login many times during the chaos.
		"connections.max.reauth.ms=3000",
	}}
	sec.Configure(&cfg)
	c := startClusterWith(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	login := func(user string) []kgo.Opt { return sec.Login(user, secureUsers[user]) }

	// The nodes' user makes admin an administrator; admin grants alice
	// what an idempotent producer and a group consumer of the existing
	// topic need (kafka-acls.sh --producer --idempotent and --consumer
	// --group, less the CREATE on the topic that --producer adds).
	root := client(t, c, sec.Login(sec.NodeUser, sec.NodePassword)...)
	n := createACLs(ctx, t, root, kadm.NewACLs().Allow("User:admin").
		Clusters().Topics("*").Groups("*").Operations(kadm.OpAll))
	waitACLs(ctx, t, c, root, "User:admin", n)
	admCl := client(t, c, login("admin")...)
	adm := kadm.NewClient(admCl)
	n = createACLs(ctx, t, admCl, kadm.NewACLs().Allow("User:alice").
		Topics(chaosTopic).Operations(kadm.OpWrite, kadm.OpDescribe, kadm.OpRead))
	n += createACLs(ctx, t, admCl, kadm.NewACLs().Allow("User:alice").
		Groups(chaosGroup).Operations(kadm.OpRead))
	n += createACLs(ctx, t, admCl, kadm.NewACLs().Allow("User:alice").
		Clusters().Operations(kadm.OpIdempotentWrite))
	waitACLs(ctx, t, c, admCl, "User:alice", n)

	g := &guests{sec: sec, adm: adm}
	killLoop{
		rounds:       chaosRounds(t, 6),
		admin:        adm,
		clientOpts:   login("alice"),
		consumerOpts: []kgo.Opt{kgo.ConsumerGroup(chaosGroup)},
		nodeCheck: func(ctx context.Context, node int32) error {
			return errors.Join(checkSecurity(ctx, t, sec, c.Node(node)), g.check(ctx, c.Node(node)))
		},
		whileDown: g.rotate,
	}.run(t, rng, c)
	// The group's offsets, replicated by the nodes' user like the topic,
	// are in sync again too.
	waitFullISR(t, adm, "__consumer_offsets", 30*time.Second)
	checkNodeLogins(t, c)
}

// checkNodeLogins fails the test if a node ever had its login refused by
// another (the dialing node logs the credentials it used: "this node
// logs in to listener ...") or could not verify another's certificate:
// kills make connections fail, never authentication.
func checkNodeLogins(t *testing.T, c *devcluster.Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		b, err := os.ReadFile(n.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "this node logs in to listener") || strings.Contains(line, "x509:") {
				t.Errorf("node %d: %s", n.ID, line)
			}
		}
	}
}

// createACLs creates the ACLs of b through cl and returns how many.
func createACLs(ctx context.Context, t *testing.T, cl *kgo.Client, b *kadm.ACLBuilder) int {
	t.Helper()
	rs, err := kadm.NewClient(cl).CreateACLs(ctx, b)
	if err != nil {
		t.Fatalf("CreateAcls: %v", err)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("CreateAcls %s %s %s on %s %s: %v %s", r.Principal, r.Permission, r.Operation, r.Type, r.Name, r.Err, r.ErrMessage)
		}
	}
	return len(rs)
}

// waitACLs waits until every node describes n ACLs of principal: until
// each node's authorizer has them.
func waitACLs(ctx context.Context, t *testing.T, c *devcluster.Cluster, cl *kgo.Client, principal string, n int) {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Principal = kmsg.StringPtr(principal)
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	for _, node := range c.Nodes {
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to apply %d ACLs of %s", node.ID, n, principal), func() (bool, string) {
			resp, err := req.RequestWith(ctx, cl.Broker(int(node.ID)))
			if err != nil {
				return false, err.Error()
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return false, err.Error()
			}
			got := 0
			for _, r := range resp.Resources {
				got += len(r.ACLs)
			}
			return got == n, fmt.Sprintf("%d ACLs", got)
		})
	}
}

// checkSecurity checks on node n alone that alice logs in and may
// describe the kill loop's topic, and that every other client is refused
// as Kafka refuses it: no TLS or no SASL closes the connection, a wrong
// password is SASL_AUTHENTICATION_FAILED, and mallory, who logs in but
// has no ACL, gets the authorization error of each request.
func checkSecurity(ctx context.Context, t *testing.T, sec *clustertest.SASLSSL, n *devcluster.Node) error {
	var clients []*kgo.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	// on is a connection to n alone with opts.
	on := func(opts ...kgo.Opt) *kgo.Broker {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.ClientAddr)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		return cl.SeedBrokers()[0]
	}

	// alice first: her credentials and ACLs must be there as soon as the
	// node serves.
	resp, err := chaosMetadata().RequestWith(ctx, on(sec.Login("alice", secureUsers["alice"])...))
	if err != nil {
		return fmt.Errorf("alice's Metadata: %w", err)
	}
	alice := resp.Topics[0]
	if err := kerr.ErrorForCode(alice.ErrorCode); err != nil || len(alice.Partitions) == 0 {
		return fmt.Errorf("alice's Metadata of %s: %v, %d partitions", chaosTopic, err, len(alice.Partitions))
	}

	// Not logged in: the connection is closed without an answer.
	for _, c := range []struct {
		who  string
		opts []kgo.Opt
	}{{"a client without TLS", nil}, {"a client without SASL", []kgo.Opt{kgo.DialTLSConfig(sec.TLS())}}} {
		if resp, err := chaosMetadata().RequestWith(ctx, on(c.opts...)); err == nil || errors.As(err, new(*kerr.Error)) {
			return fmt.Errorf("%s: Metadata answered %+v, %v; want the connection closed", c.who, resp, err)
		}
	}
	if _, err := chaosMetadata().RequestWith(ctx, on(sec.Login("alice", "wrong-secret")...)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		return fmt.Errorf("a wrong password: %v, want %v", err, kerr.SaslAuthenticationFailed)
	}
	return checkNoACL(ctx, on(sec.Login("mallory", secureUsers["mallory"])...), alice.TopicID)
}

// chaosMetadata asks for the kill loop's topic.
func chaosMetadata() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(chaosTopic)
	req.Topics = append(req.Topics, rt)
	return req
}

// checkNoACL checks that every request of the kill loop's clients, sent
// to b by a user without ACLs, is refused with Kafka's error; topicID is
// the topic's id, which that user cannot learn.
func checkNoACL(ctx context.Context, b *kgo.Broker, topicID [16]byte) error {
	var refusals []error
	// refused checks one request's answer: err, else the code it carries.
	refused := func(what string, want *kerr.Error, err error, code func() int16) {
		if err == nil {
			if got := code(); got != want.Code {
				err = fmt.Errorf("answered code %d (%v)", got, kerr.ErrorForCode(got))
			}
		}
		if err != nil {
			refusals = append(refusals, fmt.Errorf("%s without ACLs: %w; want %s", what, err, want.Message))
		}
	}

	r, err := chaosMetadata().RequestWith(ctx, b)
	refused("Metadata", kerr.TopicAuthorizationFailed, err, func() int16 { return r.Topics[0].ErrorCode })

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = chaosTopic, topicID
	pt.Partitions = append(pt.Partitions, kmsg.NewProduceRequestTopicPartition())
	produce.Topics = append(produce.Topics, pt)
	pr, err := produce.RequestWith(ctx, b)
	refused("Produce", kerr.TopicAuthorizationFailed, err, func() int16 { return pr.Topics[0].Partitions[0].ErrorCode })

	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MaxBytes = -1, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = chaosTopic, topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr, err := fetch.RequestWith(ctx, b)
	refused("Fetch", kerr.TopicAuthorizationFailed, err, func() int16 {
		if fr.ErrorCode != 0 {
			return fr.ErrorCode
		}
		return fr.Topics[0].Partitions[0].ErrorCode
	})

	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey, find.CoordinatorKeys = chaosGroup, []string{chaosGroup}
	fc, err := find.RequestWith(ctx, b)
	refused("FindCoordinator", kerr.GroupAuthorizationFailed, err, func() int16 {
		if len(fc.Coordinators) > 0 {
			return fc.Coordinators[0].ErrorCode
		}
		return fc.ErrorCode
	})

	initPID := kmsg.NewPtrInitProducerIDRequest()
	initPID.TransactionTimeoutMillis = -1
	ir, err := initPID.RequestWith(ctx, b)
	refused("InitProducerId", kerr.ClusterAuthorizationFailed, err, func() int16 { return ir.ErrorCode })

	grant := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, chaosTopic, kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:mallory", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
	grant.Creations = append(grant.Creations, cr)
	gr, err := grant.RequestWith(ctx, b)
	refused("CreateAcls", kerr.ClusterAuthorizationFailed, err, func() int16 { return gr.Results[0].ErrorCode })

	return errors.Join(refusals...)
}

// guests are users that change while a node is down: round r creates
// guest-r with DESCRIBE on the kill loop's topic, takes that ACL away
// from guest-(r-1) and deletes guest-(r-2)'s credential. The killed node
// missed all three; check requires it to know them when it serves.
type guests struct {
	sec   *clustertest.SASLSSL
	adm   *kadm.Client
	round int // the last round whose changes are committed
}

func guest(r int) (user, password string) {
	return fmt.Sprintf("guest-%d", r), fmt.Sprintf("guest-%d-secret", r)
}

// rotate makes round r's changes through the nodes that are up.
func (g *guests) rotate(ctx context.Context, r int) error {
	user, pass := guest(r)
	err := retry(ctx, "create "+user, func() error {
		rs, err := g.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: pass}})
		if err != nil {
			return err
		}
		return rs.Error()
	})
	if err == nil {
		err = retry(ctx, "grant "+user, func() error {
			rs, err := g.adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+user).Topics(chaosTopic).Operations(kadm.OpDescribe))
			return errors.Join(err, firstACLErr(rs))
		})
	}
	if prev, _ := guest(r - 1); err == nil && r > 1 {
		err = retry(ctx, "revoke "+prev, func() error {
			rs, err := g.adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:"+prev).Topics(chaosTopic).Operations(kadm.OpAny).AllowHosts())
			if err != nil {
				return err
			}
			for _, r := range rs {
				err = errors.Join(err, r.Err)
			}
			return err
		})
	}
	if old, _ := guest(r - 2); err == nil && r > 2 {
		err = retry(ctx, "delete "+old, func() error {
			rs, err := g.adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: old, Mechanism: kadm.ScramSha512}}, nil)
			if err != nil {
				return err
			}
			// A retry after a commit whose answer was lost finds
			// nothing to delete.
			if err := rs.Error(); err != nil && !errors.Is(err, kerr.ResourceNotFound) {
				return err
			}
			return nil
		})
	}
	if err == nil {
		g.round = r
	}
	return err
}

// check asks node n for the kill loop's topic as the newest guests.
func (g *guests) check(ctx context.Context, n *devcluster.Node) error {
	r := g.round
	var errs []error
	for _, c := range []struct {
		round int
		want  error // nil: allowed
	}{{r, nil}, {r - 1, kerr.TopicAuthorizationFailed}, {r - 2, kerr.SaslAuthenticationFailed}} {
		if c.round < 1 {
			continue
		}
		user, pass := guest(c.round)
		if err := describeAs(ctx, g.sec, n, user, pass); !errors.Is(err, c.want) {
			errs = append(errs, fmt.Errorf("%s (round %d of %d) describing %s: %v, want %v", user, c.round, r, chaosTopic, err, c.want))
		}
	}
	return errors.Join(errs...)
}

// describeAs asks node n alone for the kill loop's topic as user and
// returns the login's or the topic's error.
func describeAs(ctx context.Context, sec *clustertest.SASLSSL, n *devcluster.Node, user, pass string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.ClientAddr)}, sec.Login(user, pass)...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := chaosMetadata().RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
}

// retry runs f until it succeeds, for at most 30 s, while it fails with
// a retriable Kafka error (a controller is being elected) or a
// connection error (a request went to the node that is down).
func retry(ctx context.Context, what string, f func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return nil
		}
		transient := kerr.IsRetriable(err) || !errors.As(err, new(*kerr.Error))
		if !transient || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func firstACLErr(rs kadm.CreateACLsResults) error {
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
	}
	return nil
}
