package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// ACL tests against a node running Kafka's StandardAuthorizer. Most use
// a PLAINTEXT listener, where every client is User:ANONYMOUS, and tell
// clients apart by source address, which ACL hosts match: the admin
// connects from 127.0.0.1 (as the node's own inter-node clients do) and
// is allowed everything there; the user connects from 127.0.0.2 and gets
// only what each test grants to ANONYMOUS from that host.
// TestACLsSASLUsers uses SASL PLAIN users instead.

const (
	anonymous = "User:ANONYMOUS"
	adminHost = "127.0.0.1"
	userHost  = "127.0.0.2"
)

// authzProps start a node with the authorizer. allow.everyone lets the
// admin create the first ACLs; once every resource type has an ACL (the
// admin's "*" ones), it no longer applies to anything.
var authzProps = []string{
	"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"allow.everyone.if.no.acl.found=true",
}

// clientFrom connects to addr from the loopback address host.
func clientFrom(t *testing.T, addr, host string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(host)}, Timeout: 5 * time.Second}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.Dialer(d.DialContext),
		kgo.RetryTimeout(3 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createACLs creates b's ACLs and fails the test on any error.
func createACLs(ctx context.Context, t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	rs, err := adm.CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("create ACL %s %s %s: %v %s", r.Type, r.Name, r.Operation, r.Err, r.ErrMessage)
		}
	}
}

// grantAdmin gives ANONYMOUS from adminHost every operation on every
// resource; from then on a client from userHost may do nothing not
// granted to it.
func grantAdmin(ctx context.Context, t *testing.T, adm *kadm.Client) {
	t.Helper()
	createACLs(ctx, t, adm, kadm.NewACLs().Allow(anonymous).AllowHosts(adminHost).
		Clusters().Topics("*").Groups("*").TransactionalIDs("*").Operations(kadm.OpAll))
}

// everyACL is a filter that matches every ACL.
func everyACL() *kadm.ACLBuilder {
	return kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
}

// userGrant is an ACL builder for ANONYMOUS from userHost.
func userGrant() *kadm.ACLBuilder { return kadm.NewACLs().Allow(anonymous).AllowHosts(userHost) }

// startAuthz starts a node with the authorizer, the admin's ACLs in
// place, and returns it with an admin client and a user client.
func startAuthz(t *testing.T, dir string, extra ...string) (srv *server.Server, adm *kadm.Client, user *kgo.Client) {
	t.Helper()
	srv = servertest.StartIn(t, dir, append(slices.Clone(authzProps), extra...)...)
	addr := servertest.Addr(srv)
	adm = kadm.NewClient(clientFrom(t, addr, adminHost))
	grantAdmin(testContext(t), t, adm)
	return srv, adm, clientFrom(t, addr, userHost)
}

// fetchCode fetches partition 0 of topic (by its id, which the admin
// looks up: franz-go sends Fetch v13+) from node 1 and returns the
// partition's error code.
func fetchCode(ctx context.Context, t *testing.T, adm *kadm.Client, cl *kgo.Client, topic string) int16 {
	t.Helper()
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("topic id of %s: %v %v", topic, err, tds[topic].Err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, tds[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// metadataTopics returns the topics an all-topics Metadata request shows,
// and the code a Metadata request naming topic gets for it.
func metadataTopics(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) ([]string, int16) {
	t.Helper()
	all := kmsg.NewPtrMetadataRequest()
	resp, err := all.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mt := range resp.Topics {
		names = append(names, *mt.Topic)
	}
	named := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	named.Topics = append(named.Topics, rt)
	resp, err = named.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return names, resp.Topics[0].ErrorCode
}

// produce writes values to partition 0 of topic as the admin.
func produceAs(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, values ...string) {
	t.Helper()
	var rs []*kgo.Record
	for _, v := range values {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// consume reads n values of partition 0 of topic from the start.
func consume(ctx context.Context, t *testing.T, addr, host, topic string, n int) []string {
	t.Helper()
	cl := clientFrom(t, addr, host, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: %d of %d records: %v (%v)", topic, len(got), n, err, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// describeACLs lists every ACL in Kafka's order as "TYPE:PATTERN:name
// PERMISSION principal@host OPERATION".
func describeACLs(ctx context.Context, t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) []string {
	t.Helper()
	rs, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("describe ACLs: %v %s", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			out = append(out, fmt.Sprintf("%s:%s:%s %s %s@%s %s", d.Type, d.Pattern, d.Name, d.Permission, d.Principal, d.Host, d.Operation))
		}
	}
	slices.Sort(out)
	return out
}

// Without an authorizer (Kafka's default) the ACL APIs answer
// SECURITY_DISABLED and everything is allowed.
func TestACLsSecurityDisabled(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	adm := kadm.NewClient(clientFrom(t, servertest.Addr(srv), userHost))
	rs, err := adm.CreateACLs(ctx, userGrant().Topics("t").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rs[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("CreateAcls without an authorizer: %v, want SECURITY_DISABLED", rs[0].Err)
	}
	ds, err := adm.DescribeACLs(ctx, everyACL())
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(ds[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeAcls without an authorizer: %v, want SECURITY_DISABLED", ds[0].Err)
	}
}

// ACLs created with kadm are described back with every filter kind and
// deleted; the user's rights follow them at once: without READ (and so
// DESCRIBE) a topic is invisible in Metadata and a fetch answers
// TOPIC_AUTHORIZATION_FAILED; READ lets it consume; a DENY wins over the
// ALLOW; a PREFIXED ALLOW covers the names it starts; and the ACLs survive
// a restart of the node.
func TestACLsTopicAccess(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	srv, adm, user := startAuthz(t, dir)
	addr := servertest.Addr(srv)
	admCl := clientFrom(t, addr, adminHost)
	for _, topic := range []string{"orders", "pre-a", "pre-b", "other"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		produceAs(ctx, t, admCl, topic, topic+"-1", topic+"-2")
	}

	// The user sees nothing and reads nothing.
	names, code := metadataTopics(ctx, t, user, "orders")
	if len(names) != 0 || code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("user's metadata before any grant: topics %v, named orders code %d", names, code)
	}
	if code := fetchCode(ctx, t, adm, user, "orders"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("user's fetch before any grant: code %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	// Even a topic that does not exist is TOPIC_AUTHORIZATION_FAILED: its
	// existence is not told.
	if _, code := metadataTopics(ctx, t, user, "no-such-topic"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("user's metadata for a missing topic: code %d", code)
	}

	// READ on orders (which implies DESCRIBE) and on the prefix "pre-".
	createACLs(ctx, t, adm, userGrant().Topics("orders").Operations(kadm.OpRead))
	createACLs(ctx, t, adm, userGrant().Topics("pre-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead))
	names, _ = metadataTopics(ctx, t, user, "orders")
	if want := []string{"orders", "pre-a", "pre-b"}; !slices.Equal(names, want) {
		t.Fatalf("user's topics with READ: %v, want %v", names, want)
	}
	if got := consume(ctx, t, addr, userHost, "orders", 2); !slices.Equal(got, []string{"orders-1", "orders-2"}) {
		t.Fatalf("user consumed %v", got)
	}
	if got := consume(ctx, t, addr, userHost, "pre-b", 2); !slices.Equal(got, []string{"pre-b-1", "pre-b-2"}) {
		t.Fatalf("user consumed %v from a prefixed grant", got)
	}
	if code := fetchCode(ctx, t, adm, user, "other"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch of a topic outside the prefix: code %d", code)
	}
	// READ is not WRITE: an idempotent producer gets no producer id (it
	// needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic), a
	// plain one is refused the topic.
	err := user.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("user's idempotent produce with READ only: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	plain := clientFrom(t, addr, userHost, kgo.DisableIdempotentWrite())
	err = plain.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("user's produce with READ only: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Produce v13 names topics by id: an id the cluster does not know is
	// UNKNOWN_TOPIC_ID whatever the ACLs, as Kafka answers.
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = 1, 5000
	prt := kmsg.NewProduceRequestTopic()
	prt.TopicID = [16]byte{1, 2, 3}
	prp := kmsg.NewProduceRequestTopicPartition()
	prp.Records = record.Build(record.BuildOptions{PartitionLeaderEpoch: -1}, []record.Record{{Value: []byte("x")}})
	prt.Partitions = append(prt.Partitions, prp)
	pr.Topics = append(pr.Topics, prt)
	if resp, err := pr.RequestWith(ctx, plain.Broker(1)); err != nil || resp.Version != 13 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("user's produce v13 to an unknown topic id: %v %+v, want UNKNOWN_TOPIC_ID", err, resp)
	}

	// DENY wins over the ALLOW.
	createACLs(ctx, t, adm, kadm.NewACLs().Deny(anonymous).DenyHosts(userHost).Topics("pre-a").Operations(kadm.OpRead))
	if code := fetchCode(ctx, t, adm, user, "pre-a"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch of a denied topic under an allowed prefix: code %d", code)
	}
	if code := fetchCode(ctx, t, adm, user, "pre-b"); code != 0 {
		t.Fatalf("fetch of pre-b beside the DENY: code %d", code)
	}

	// Describe: everything, by resource, by principal and host, MATCH.
	all := describeACLs(ctx, t, adm, everyACL())
	want := []string{
		"CLUSTER:LITERAL:kafka-cluster ALLOW User:ANONYMOUS@127.0.0.1 ALL",
		"GROUP:LITERAL:* ALLOW User:ANONYMOUS@127.0.0.1 ALL",
		"TOPIC:LITERAL:* ALLOW User:ANONYMOUS@127.0.0.1 ALL",
		"TOPIC:LITERAL:orders ALLOW User:ANONYMOUS@127.0.0.2 READ",
		"TOPIC:LITERAL:pre-a DENY User:ANONYMOUS@127.0.0.2 READ",
		"TOPIC:PREFIXED:pre- ALLOW User:ANONYMOUS@127.0.0.2 READ",
		"TRANSACTIONAL_ID:LITERAL:* ALLOW User:ANONYMOUS@127.0.0.1 ALL",
	}
	if !slices.Equal(all, want) {
		t.Fatalf("all ACLs:\n%s\nwant\n%s", strings.Join(all, "\n"), strings.Join(want, "\n"))
	}
	match := describeACLs(ctx, t, adm, kadm.NewACLs().Topics("pre-a").ResourcePatternType(kadm.ACLPatternMatch).
		Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny))
	if want := []string{want[2], want[4], want[5]}; !slices.Equal(match, want) {
		t.Fatalf("ACLs that apply to topic pre-a (MATCH): %v, want %v", match, want)
	}
	byHost := describeACLs(ctx, t, adm, kadm.NewACLs().AnyResource().Allow(anonymous).AllowHosts(userHost).
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if want := []string{want[3], want[5]}; !slices.Equal(byHost, want) {
		t.Fatalf("the user's ALLOW ACLs: %v, want %v", byHost, want)
	}
	// The user may not list or change ACLs.
	ds, err := kadm.NewClient(user).DescribeACLs(ctx, everyACL())
	if err != nil || !errors.Is(ds[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("user's DescribeAcls: %v %v, want CLUSTER_AUTHORIZATION_FAILED", err, ds)
	}
	rs, err := kadm.NewClient(user).CreateACLs(ctx, userGrant().Topics("other").Operations(kadm.OpRead))
	if err != nil || !errors.Is(rs[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("user's CreateAcls: %v %v, want CLUSTER_AUTHORIZATION_FAILED", err, rs)
	}

	// The ACLs are metadata: a restart keeps them.
	admCl.Close()
	srv.Close()
	srv = servertest.StartIn(t, dir, authzProps...)
	addr = servertest.Addr(srv)
	adm = kadm.NewClient(clientFrom(t, addr, adminHost))
	user = clientFrom(t, addr, userHost)
	if got := describeACLs(ctx, t, adm, everyACL()); !slices.Equal(got, want) {
		t.Fatalf("ACLs after a restart:\n%s", strings.Join(got, "\n"))
	}
	if code := fetchCode(ctx, t, adm, user, "pre-a"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("denied fetch after a restart: code %d", code)
	}

	// Delete: the user's ACLs go, their rights with them.
	dels, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Allow(anonymous).AllowHosts(userHost).
		Deny(anonymous).DenyHosts(userHost).Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, d := range dels {
		if d.Err != nil {
			t.Fatalf("delete: %v %s", d.Err, d.ErrMessage)
		}
		deleted += len(d.Deleted)
	}
	if deleted != 3 {
		t.Fatalf("deleted %d ACLs, want the user's 3", deleted)
	}
	if code := fetchCode(ctx, t, adm, user, "orders"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch after the grant was deleted: code %d", code)
	}
	if got := describeACLs(ctx, t, adm, everyACL()); len(got) != 4 {
		t.Fatalf("ACLs left: %v", got)
	}
}

// groupRequest sends req (a group API) to the group's coordinator.
func groupRequest[R kmsg.Response](ctx context.Context, t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// Group authorization: without READ on a group the user can neither
// find its coordinator nor join, commit or fetch offsets
// (GROUP_AUTHORIZATION_FAILED); with it a consumer group consumes and
// commits; commits to a topic without READ are refused per topic;
// ListGroups shows only the groups the user may describe; DescribeGroups
// reports the user's operations on the group; deleting needs DELETE.
func TestACLsGroups(t *testing.T) {
	ctx := testContext(t)
	srv, adm, user := startAuthz(t, t.TempDir())
	addr := servertest.Addr(srv)
	for _, topic := range []string{"gt", "secret"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	produceAs(ctx, t, clientFrom(t, addr, adminHost), "gt", "a", "b", "c")
	createACLs(ctx, t, adm, userGrant().Topics("gt").Operations(kadm.OpRead))
	// A group of the admin's, which the user must not see.
	if _, err := adm.CommitOffsets(ctx, "admin-group", kadm.OffsetsFromRecords(kgo.Record{Topic: "gt", Partition: 0, Offset: 0})); err != nil {
		t.Fatal(err)
	}

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g1"}
	if r := groupRequest[*kmsg.FindCoordinatorResponse](ctx, t, user, fc); r.Coordinators[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("FindCoordinator without DESCRIBE on the group: %+v", r.Coordinators[0])
	}
	// OffsetCommit v10 names topics by id; v9 names them.
	v9 := kversion.Stable()
	v9.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	byName := clientFrom(t, addr, userHost, kgo.MaxVersions(v9))
	ids := map[string][16]byte{"unknown": {1, 2, 3}}
	details, err := adm.ListTopics(ctx, "gt", "secret")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range details {
		ids[d.Topic] = d.ID
	}
	commitWith := func(cl *kgo.Client, topics ...string) *kmsg.OffsetCommitResponse {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "g1", -1
		for _, topic := range topics {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = topic, ids[topic]
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		// Straight to node 1, the only coordinator there is.
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	commit := func(topics ...string) *kmsg.OffsetCommitResponse { return commitWith(byName, topics...) }
	if r := commit("gt"); r.Topics[0].Partitions[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("OffsetCommit without READ on the group: code %d", r.Topics[0].Partitions[0].ErrorCode)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g1", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	if r, err := join.RequestWith(ctx, user.Broker(1)); err != nil || r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("JoinGroup without READ on the group: %v %+v", err, r)
	}

	createACLs(ctx, t, adm, userGrant().Groups("g1").Operations(kadm.OpRead))
	cons := clientFrom(t, addr, userHost, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("gt"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	var got []string
	for len(got) < 3 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group consumer: %v", fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit with READ on group and topic: %v", err)
	}
	cons.Close()
	uadm := kadm.NewClient(user)
	offs, err := uadm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("gt", 0); !ok || o.At != 3 {
		t.Fatalf("user's committed offset: %+v %v", o, ok)
	}
	// A commit naming a topic without READ: refused for that topic only.
	r := commit("gt", "secret")
	if c0, c1 := r.Topics[0].Partitions[0].ErrorCode, r.Topics[1].Partitions[0].ErrorCode; c0 != 0 || c1 != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("commit to gt and secret: codes %d %d, want 0 and TOPIC_AUTHORIZATION_FAILED", c0, c1)
	}
	// By id (v10) too; an id the cluster does not know is UNKNOWN_TOPIC_ID
	// whatever the ACLs, as its name is not known to authorize.
	r = commitWith(user, "gt", "secret", "unknown")
	if r.Version != 10 || len(r.Topics) != 3 || r.Topics[1].TopicID != ids["secret"] {
		t.Fatalf("commit by id: v%d %+v", r.Version, r.Topics)
	}
	if c0, c1, c2 := r.Topics[0].Partitions[0].ErrorCode, r.Topics[1].Partitions[0].ErrorCode, r.Topics[2].Partitions[0].ErrorCode; c0 != 0 || c1 != kerr.TopicAuthorizationFailed.Code || c2 != kerr.UnknownTopicID.Code {
		t.Fatalf("commit by id to gt, secret and an unknown id: codes %d %d %d, want 0, TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_ID", c0, c1, c2)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	og := kmsg.NewOffsetFetchRequestGroup()
	og.Group = "g1"
	for _, topic := range []string{"gt", "secret", "unknown"} {
		og.Topics = append(og.Topics, kmsg.OffsetFetchRequestGroupTopic{TopicID: ids[topic], Partitions: []int32{0}})
	}
	of.Groups = append(of.Groups, og)
	ofr, err := of.RequestWith(ctx, user.Broker(1))
	if err != nil || ofr.Version != 10 || len(ofr.Groups) != 1 || len(ofr.Groups[0].Topics) != 3 {
		t.Fatalf("fetch by id: %v %+v", err, ofr)
	}
	for i, want := range []*kerr.Error{nil, kerr.TopicAuthorizationFailed, kerr.UnknownTopicID} {
		rt := ofr.Groups[0].Topics[i]
		code := int16(0)
		if want != nil {
			code = want.Code
		}
		if rt.TopicID != og.Topics[i].TopicID || rt.Partitions[0].ErrorCode != code || (want == nil) != (rt.Partitions[0].Offset == 1) {
			t.Errorf("fetch by id, topic %d: id %x, code %d, offset %d; want code %d", i, rt.TopicID, rt.Partitions[0].ErrorCode, rt.Partitions[0].Offset, code)
		}
	}

	listed, err := uadm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gs := listed.Groups(); !slices.Equal(gs, []string{"g1"}) {
		t.Fatalf("user lists groups %v, want only g1", gs)
	}
	if listed, err = adm.ListGroups(ctx); err != nil || len(listed.Groups()) != 2 {
		t.Fatalf("admin lists groups %v %v, want both", listed.Groups(), err)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g1", "admin-group"}, true
	dr, err := dg.RequestWith(ctx, user.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	wantOps := int32(1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDescribe)
	if g := dr.Groups[0]; g.ErrorCode != 0 || g.AuthorizedOperations != wantOps {
		t.Fatalf("describe g1: code %d operations %b, want READ and DESCRIBE (%b)", g.ErrorCode, g.AuthorizedOperations, wantOps)
	}
	if g := dr.Groups[1]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe admin-group: code %d", g.ErrorCode)
	}
	dels, err := uadm.DeleteGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dels["g1"].Err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("user deletes g1 without DELETE: %v", dels["g1"].Err)
	}
}

// Transactional id authorization: without WRITE on its transactional id
// a producer gets no producer id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
// and cannot find its coordinator; with it, and WRITE on the topic, it
// commits a transaction the admin then reads. An idempotent producer
// needs only WRITE on some topic.
func TestACLsTransactions(t *testing.T) {
	ctx := testContext(t)
	srv, adm, user := startAuthz(t, t.TempDir())
	addr := servertest.Addr(srv)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tt"); err != nil {
		t.Fatal(err)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"tx-1"}
	if r := groupRequest[*kmsg.FindCoordinatorResponse](ctx, t, user, fc); r.Coordinators[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("FindCoordinator without DESCRIBE on the transactional id: %+v", r.Coordinators[0])
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("tx-1"), 10000
	if r, err := ip.RequestWith(ctx, user.Broker(1)); err != nil || r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("InitProducerId without WRITE on the transactional id: %v %+v", err, r)
	}

	// WRITE on the topic is enough for an idempotent producer.
	createACLs(ctx, t, adm, userGrant().Topics("tt").Operations(kadm.OpWrite))
	if err := user.ProduceSync(ctx, &kgo.Record{Topic: "tt", Value: []byte("idempotent")}).FirstErr(); err != nil {
		t.Fatalf("idempotent produce with WRITE on the topic: %v", err)
	}

	createACLs(ctx, t, adm, userGrant().TransactionalIDs("tx-1").Operations(kadm.OpWrite))
	txn := clientFrom(t, addr, userHost, kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("tt"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("in-txn")}).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	got := consume(ctx, t, addr, adminHost, "tt", 2)
	if !slices.Equal(got, []string{"idempotent", "in-txn"}) {
		t.Fatalf("admin reads %v", got)
	}
	// Another transactional id stays refused: franz-go asks for its
	// producer id when the transaction begins and reports the refusal as
	// a fatal error of its own that names the code.
	other := clientFrom(t, addr, userHost, kgo.TransactionalID("tx-2"), kgo.DefaultProduceTopic("tt"))
	err := other.BeginTransaction()
	if err == nil {
		err = other.ProduceSync(ctx, &kgo.Record{Value: []byte("no")}).FirstErr()
	}
	if err == nil || !strings.Contains(err.Error(), kerr.TransactionalIDAuthorizationFailed.Message) {
		t.Fatalf("transactional id tx-2: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
}

// ACLs for SASL users: on a SASL_PLAINTEXT listener (PLAIN users admin,
// alice and bob; admin a super user) each client is User:<name>. Alice
// reads a topic only once granted READ; a grant to User:* lets bob read
// too, until a DENY for User:bob, which wins over it while alice keeps
// reading; the admin lists the ACLs of one principal.
func TestACLsSASLUsers(t *testing.T) {
	ctx := testContext(t)
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
	srv := servertest.Start(t, append(slices.Clone(authzProps[:1]),
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+jaas,
		"super.users=User:admin")...)
	addr := srv.Addr("SASL_PLAINTEXT")
	as := func(user string, opts ...kgo.Opt) *kgo.Client {
		return newKgo(t, addr, append([]kgo.Opt{kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()),
			kgo.RetryTimeout(3 * time.Second)}, opts...)...)
	}
	admCl := as("admin")
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "s"); err != nil {
		t.Fatal(err)
	}
	produceAs(ctx, t, admCl, "s", "one", "two")
	alice, bob := as("alice"), as("bob")
	readCode := func(cl *kgo.Client) int16 { return fetchCode(ctx, t, adm, cl, "s") }
	if code := readCode(alice); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice before any grant: code %d", code)
	}

	createACLs(ctx, t, adm, kadm.NewACLs().Allow("User:alice").Topics("s").Operations(kadm.OpRead))
	if code := readCode(alice); code != 0 {
		t.Fatalf("alice with READ: code %d", code)
	}
	if code := readCode(bob); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob beside alice's grant: code %d", code)
	}
	createACLs(ctx, t, adm, kadm.NewACLs().Allow("User:*").Topics("s").Operations(kadm.OpRead))
	if code := readCode(bob); code != 0 {
		t.Fatalf("bob with READ for User:*: code %d", code)
	}
	createACLs(ctx, t, adm, kadm.NewACLs().Deny("User:bob").Topics("s").Operations(kadm.OpRead))
	if code := readCode(bob); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob denied: code %d", code)
	}
	cl := as("alice", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"s": {0: kgo.NewOffset().AtStart()}}))
	var vs []string
	for len(vs) < 2 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { vs = append(vs, string(r.Value)) })
	}
	if !slices.Equal(vs, []string{"one", "two"}) {
		t.Fatalf("alice consumed %v beside bob's DENY", vs)
	}
	aliceACLs := describeACLs(ctx, t, adm, kadm.NewACLs().AnyResource().Allow("User:alice").AllowHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if want := []string{"TOPIC:LITERAL:s ALLOW User:alice@* READ"}; !slices.Equal(aliceACLs, want) {
		t.Fatalf("alice's ACLs: %v, want %v", aliceACLs, want)
	}
}
