package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestACLsOnEveryNode: ACLs are metadata, so one created through one
// broker is enforced by every broker once it has applied the log. The
// three nodes run StandardAuthorizer; clients are User:ANONYMOUS (PLAINTEXT)
// told apart by source address: from 127.0.0.1 (the nodes' own
// inter-node address too) everything is allowed, from 127.0.0.2 only what
// is granted. An ACL created through node 1 is described by nodes 2 and 3
// from their own authorizers, and node 3 lets the user read a topic it
// refused before; deleting it through node 2 takes the right away on
// every node.
func TestACLsOnEveryNode(t *testing.T) {
	c := startCluster(t, 3,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=true")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	from := func(host string) *kgo.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(host)}, Timeout: 5 * time.Second}
		return client(t, c, kgo.Dialer(d.DialContext), kgo.RetryTimeout(5*time.Second))
	}
	admCl, user := from("127.0.0.1"), from("127.0.0.2")
	adm := kadm.NewClient(admCl)

	// The admin's rights, then a topic.
	rs, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:ANONYMOUS").AllowHosts("127.0.0.1").
		Clusters().Topics("*").Groups("*").TransactionalIDs("*").Operations(kadm.OpAll))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("admin ACL: %v %s", r.Err, r.ErrMessage)
		}
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "shared"); err != nil {
		t.Fatal(err)
	}
	waitFullISR(t, adm, "shared", 30*time.Second)

	// describeOn lists the ACLs node id's authorizer has for the user.
	describeOn := func(id int32) []string {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Host = kmsg.StringPtr("127.0.0.2")
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, admCl.Broker(int(id)))
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("DescribeAcls on node %d: %v %v", id, err, resp)
		}
		var out []string
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				out = append(out, fmt.Sprintf("%s:%s %s %s", r.ResourceType, r.ResourceName, a.PermissionType, a.Operation))
			}
		}
		return out
	}
	// readCode is the user's Metadata answer for the topic from node id.
	readCode := func(id int32) int16 {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("shared")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, user.Broker(int(id)))
		if err != nil {
			t.Fatalf("metadata from node %d: %v", id, err)
		}
		return resp.Topics[0].ErrorCode
	}
	for id := int32(1); id <= 3; id++ {
		if code := readCode(id); code != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("node %d shows the topic to the user before any grant: code %d", id, code)
		}
	}

	create := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "shared", kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:ANONYMOUS", "127.0.0.2", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	create.Creations = append(create.Creations, cr)
	if resp, err := create.RequestWith(ctx, admCl.Broker(1)); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateAcls through node 1: %v %+v", err, resp)
	}
	want := []string{"TOPIC:shared ALLOW READ"}
	for id := int32(1); id <= 3; id++ {
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to apply the ACL", id), func() (bool, string) {
			got := describeOn(id)
			return slices.Equal(got, want) && readCode(id) == 0, fmt.Sprintf("ACLs %v, metadata code %d", got, readCode(id))
		})
	}
	// The user reads the topic through any node (the leader serves it).
	prod := client(t, c, kgo.DefaultProduceTopic("shared"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	cons := client(t, c, kgo.Dialer(d.DialContext), kgo.ConsumeTopics("shared"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cons.PollFetches(ctx)
	if errs := fs.Errors(); len(errs) > 0 || fs.NumRecords() != 1 {
		t.Fatalf("user's consume: %d records, errors %v", fs.NumRecords(), errs)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
	f.Host, f.Operation, f.PermissionType = kmsg.StringPtr("127.0.0.2"), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	if resp, err := del.RequestWith(ctx, admCl.Broker(2)); err != nil || resp.Results[0].ErrorCode != 0 || len(resp.Results[0].MatchingACLs) != 1 {
		t.Fatalf("DeleteAcls through node 2: %v %+v", err, resp)
	}
	for id := int32(1); id <= 3; id++ {
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to remove the ACL", id), func() (bool, string) {
			got := describeOn(id)
			return len(got) == 0 && readCode(id) == kerr.TopicAuthorizationFailed.Code, fmt.Sprintf("ACLs %v, metadata code %d", got, readCode(id))
		})
	}
}
