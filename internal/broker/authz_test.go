package broker_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/servertest"
)

// authzProps run StandardAuthorizer with no ACLs and no super users: a
// client may do nothing at all.
var authzProps = []string{"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"}

// notAuthorized are the codes of a refusal. The delegation token APIs
// refuse this test's PLAINTEXT client before any ACL is asked, as Kafka's
// do.
var notAuthorized = []int16{
	kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code,
	kerr.ClusterAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code,
	kerr.DelegationTokenRequestNotAllowed.Code,
}

// openAPIs answer anyone, as in Kafka: they filter what they show
// instead (ListGroups, ListTransactions) or need no right (ApiVersions,
// DescribeCluster).
var openAPIs = []kmsg.Key{kmsg.ApiVersions, kmsg.DescribeCluster, kmsg.ListGroups, kmsg.ListTransactions,
	kmsg.SASLHandshake, kmsg.SASLAuthenticate}

// Every API the broker serves refuses a client the ACLs give nothing: a
// request naming a topic, a group, a transactional id or the cluster
// comes back with an authorization error somewhere in it. A new API that
// forgets to authorize fails here.
func TestEveryAPIAuthorizes(t *testing.T) {
	// Share groups on, so that the share APIs get past UNSUPPORTED_VERSION.
	srv := servertest.Start(t, authzProps...)
	// Fetch and Produce by name (v12): an unknown topic id is
	// UNKNOWN_TOPIC_ID first.
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.Fetch), 12)
	vs.SetMaxKeyVersion(int16(kmsg.Produce), 12)
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := tctx(t)
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range versions.ApiKeys {
		key := kmsg.Key(k.ApiKey)
		if slices.Contains(openAPIs, key) {
			continue
		}
		req := kmsg.RequestForKey(k.ApiKey)
		req.SetVersion(k.MaxVersion)
		fill(reflect.ValueOf(req).Elem(), 0)
		resp, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			t.Errorf("%s v%d: %v", key.Name(), k.MaxVersion, err)
			continue
		}
		if codes := errorCodes(reflect.ValueOf(resp).Elem(), nil); !slices.ContainsFunc(codes, func(c int16) bool { return slices.Contains(notAuthorized, c) }) {
			t.Errorf("%s v%d answered an unauthorized client with codes %v", key.Name(), req.GetVersion(), codes)
		}
	}
}

// fill gives a request what an authorizer is asked about: each list of
// items one item, names "t" (topics), "g" (groups), "x" (transactional
// ids and other names), partition 0, and concrete ACL and config codes.
func fill(v reflect.Value, depth int) {
	if depth > 4 {
		return
	}
	t := v.Type()
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), t.Field(i).Name
		switch {
		case !f.CanSet():
		case f.Kind() == reflect.String:
			f.SetString(nameFor(name))
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
			s := nameFor(name)
			f.Set(reflect.ValueOf(&s))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf([]string{nameFor(strings.TrimSuffix(name, "s"))}))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Int32:
			f.Set(reflect.ValueOf([]int32{0}))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct && name != "UnknownTags":
			e := reflect.New(f.Type().Elem()).Elem()
			if d, ok := e.Addr().Interface().(interface{ Default() }); ok {
				d.Default()
			}
			fill(e, depth+1)
			f.Set(reflect.Append(f.Slice(0, 0), e))
		case f.Kind() == reflect.Int8 && f.Type() == reflect.TypeOf(kmsg.ACLResourceType(0)):
			f.SetInt(int64(kmsg.ACLResourceTypeTopic))
		case f.Kind() == reflect.Int8 && f.Type() == reflect.TypeOf(kmsg.ACLResourcePatternType(0)):
			f.SetInt(int64(kmsg.ACLResourcePatternTypeLiteral))
		case f.Kind() == reflect.Int8 && f.Type() == reflect.TypeOf(kmsg.ACLOperation(0)):
			f.SetInt(int64(kmsg.ACLOperationRead))
		case f.Kind() == reflect.Int8 && f.Type() == reflect.TypeOf(kmsg.ACLPermissionType(0)):
			f.SetInt(int64(kmsg.ACLPermissionTypeAllow))
		case f.Kind() == reflect.Int8 && f.Type() == reflect.TypeOf(kmsg.ConfigResourceType(0)):
			f.SetInt(int64(kmsg.ConfigResourceTypeTopic))
		case name == "Acks":
			f.SetInt(1)
		case name == "ReplicaID":
			f.SetInt(-1)
		}
	}
}

func nameFor(field string) string {
	switch {
	case strings.Contains(field, "Topic"):
		return "t"
	case strings.Contains(field, "Group"):
		return "g"
	case field == "CoordinatorKey":
		return "g"
	}
	return "x"
}

// errorCodes collects every ErrorCode field of a response.
func errorCodes(v reflect.Value, out []int16) []int16 {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Name == "ErrorCode" {
				out = append(out, int16(v.Field(i).Int()))
				continue
			}
			out = errorCodes(v.Field(i), out)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			out = errorCodes(v.Index(i), out)
		}
	}
	return out
}

// Before its first metadata image a node's authorizer refuses everyone
// but super users; a running node answers its clients only after that,
// so what a test can see is the effect of super.users and
// allow.everyone.if.no.acl.found on a node with no ACLs.
func TestSuperUsersAndAllowEveryone(t *testing.T) {
	ctx := tctx(t)
	for _, tc := range []struct {
		props []string
		code  int16
	}{
		{authzProps, kerr.TopicAuthorizationFailed.Code},
		{append(slices.Clone(authzProps), "super.users=User:admin;User:ANONYMOUS"), 0},
		{append(slices.Clone(authzProps), "allow.everyone.if.no.acl.found=true"), 0},
	} {
		srv := servertest.Start(t, append(tc.props, "auto.create.topics.enable=false")...)
		cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("missing")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := tc.code
		if want == 0 {
			want = kerr.UnknownTopicOrPartition.Code // allowed: the topic's absence is told
		}
		if got := resp.Topics[0].ErrorCode; got != want {
			t.Errorf("%v: metadata code %d, want %d", tc.props, got, want)
		}
		srv.Close()
	}
}
