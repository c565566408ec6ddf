package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/security"
)

// creation builds a CreateAcls creation: ALLOW, host "*" unless changed.
func creation(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
	return c
}

func (h *harness) createACLs(t *testing.T, cs ...kmsg.CreateACLsRequestCreation) []kmsg.CreateACLsResponseResult {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version, req.Creations = 3, cs
	return h.c.CreateAcls(ctx(t), req).Results
}

func (h *harness) deleteACLs(t *testing.T, fs ...kmsg.DeleteACLsRequestFilter) []kmsg.DeleteACLsResponseResult {
	t.Helper()
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Version, req.Filters = 3, fs
	return h.c.DeleteAcls(ctx(t), req).Results
}

// imageACLs prints the image's ACLs in Kafka's order.
func (h *harness) imageACLs() string {
	acls := security.ImageACLs(h.loader.Image().ACLs())
	security.SortACLs(acls)
	return fmt.Sprint(acls)
}

func TestCreateAcls(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	topicRead := creation(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead)
	prefixed := creation(kmsg.ACLResourceTypeGroup, "app-", kmsg.ACLResourcePatternTypePrefixed, "User:alice", kmsg.ACLOperationRead)
	rs := h.createACLs(t, topicRead, prefixed, topicRead)
	for _, r := range rs {
		wantErr(t, r.ErrorCode, r.ErrorMessage, nil, "")
	}
	want := `[(TOPIC LITERAL "orders") ALLOW User:alice READ from * (GROUP PREFIXED "app-") ALLOW User:alice READ from *]`
	if got := h.imageACLs(); got != want {
		t.Fatalf("ACLs after create: %s, want %s", got, want)
	}
	// The same ACL again succeeds and writes nothing.
	before := h.loader.Image().Offset
	rs = h.createACLs(t, topicRead)
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	if h.loader.Image().Offset != before || len(h.loader.Image().ACLs()) != 2 {
		t.Fatalf("a duplicate ACL was written: offset %d -> %d, %d ACLs", before, h.loader.Image().Offset, len(h.loader.Image().ACLs()))
	}

	// Kafka's refusals, each for its creation alone.
	badCluster := creation(kmsg.ACLResourceTypeCluster, "other", kmsg.ACLResourcePatternTypeLiteral, "User:bob", kmsg.ACLOperationAlter)
	empty := creation(kmsg.ACLResourceTypeTopic, "", kmsg.ACLResourcePatternTypeLiteral, "User:bob", kmsg.ACLOperationRead)
	noColon := creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "bob", kmsg.ACLOperationRead)
	cidr := creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:bob", kmsg.ACLOperationRead)
	cidr.Host = "10.0.0.0/8"
	unknownType := creation(99, "t", kmsg.ACLResourcePatternTypeLiteral, "User:bob", kmsg.ACLOperationRead)
	good := creation(kmsg.ACLResourceTypeTransactionalId, "tx", kmsg.ACLResourcePatternTypeLiteral, "User:bob", kmsg.ACLOperationWrite)
	rs = h.createACLs(t, badCluster, empty, noColon, cidr, unknownType, good)
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, kerr.InvalidRequest, "The only valid name for the CLUSTER resource is kafka-cluster")
	wantErr(t, rs[1].ErrorCode, rs[1].ErrorMessage, kerr.InvalidRequest, "Invalid empty resource name")
	wantErr(t, rs[2].ErrorCode, rs[2].ErrorMessage, kerr.InvalidRequest, "Could not parse principal from `bob` (no colon is present separating the principal type from the principal name)")
	wantErr(t, rs[3].ErrorCode, rs[3].ErrorMessage, kerr.UnsupportedVersion, "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.")
	wantErr(t, rs[4].ErrorCode, rs[4].ErrorMessage, kerr.InvalidRequest, "Invalid resourceType UNKNOWN")
	wantErr(t, rs[5].ErrorCode, rs[5].ErrorMessage, nil, "")
	if n := len(h.loader.Image().ACLs()); n != 3 {
		t.Fatalf("%d ACLs after a mixed request, want 3", n)
	}
}

func TestDeleteAcls(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	var cs []kmsg.CreateACLsRequestCreation
	for _, name := range []string{"a", "b", "c"} {
		cs = append(cs, creation(kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead))
	}
	cs = append(cs, creation(kmsg.ACLResourceTypeTopic, "a", kmsg.ACLResourcePatternTypePrefixed, "User:bob", kmsg.ACLOperationWrite))
	for _, r := range h.createACLs(t, cs...) {
		wantErr(t, r.ErrorCode, r.ErrorMessage, nil, "")
	}
	filter := func(name *string, pt kmsg.ACLResourcePatternType, principal *string) kmsg.DeleteACLsRequestFilter {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal = kmsg.ACLResourceTypeTopic, name, pt, principal
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return f
	}
	names := func(r kmsg.DeleteACLsResponseResult) []string {
		var out []string
		for _, m := range r.MatchingACLs {
			out = append(out, fmt.Sprintf("%s:%s:%s", m.ResourcePatternType, m.ResourceName, m.Principal))
		}
		return out
	}
	alice := "User:alice"
	bad := filter(nil, kmsg.ACLResourcePatternTypeAny, nil)
	bad.Operation = 99
	rs := h.deleteACLs(t,
		// MATCH "a": the LITERAL "a" and the PREFIXED "a".
		filter(kmsg.StringPtr("a"), kmsg.ACLResourcePatternTypeMatch, nil),
		// Every ACL of alice: "a" again (listed, removed once), "b", "c".
		filter(nil, kmsg.ACLResourcePatternTypeAny, &alice),
		bad,
	)
	if got := names(rs[0]); !slices.Equal(got, []string{"LITERAL:a:User:alice", "PREFIXED:a:User:bob"}) {
		t.Fatalf("filter 0 matched %v", got)
	}
	if got := names(rs[1]); !slices.Equal(got, []string{"LITERAL:c:User:alice", "LITERAL:b:User:alice", "LITERAL:a:User:alice"}) {
		t.Fatalf("filter 1 matched %v", got)
	}
	wantErr(t, rs[2].ErrorCode, rs[2].ErrorMessage, kerr.InvalidRequest, "Unknown entryFilter.")
	if n := len(h.loader.Image().ACLs()); n != 0 {
		t.Fatalf("%d ACLs left: %s", n, h.imageACLs())
	}
	// Nothing left to match: success with no ACLs listed.
	rs = h.deleteACLs(t, filter(nil, kmsg.ACLResourcePatternTypeAny, nil))
	if rs[0].ErrorCode != 0 || len(rs[0].MatchingACLs) != 0 {
		t.Fatalf("empty delete: %+v", rs[0])
	}
}

// A restarted controller has the ACLs it wrote (they are replayed from the
// log like every record).
func TestAclsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir, 1)
	h.createACLs(t, creation(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, "User:admin", kmsg.ACLOperationAll))
	want := h.imageACLs()
	h.c.Close()
	h.node.Close()
	h = start(t, dir, 0)
	if got := h.imageACLs(); got != want || len(h.loader.Image().ACLs()) != 1 {
		t.Fatalf("after restart: %s, want %s", got, want)
	}
}
