package security

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

// The publisher keeps the authorizer's ACLs those of the image: the
// full image it registers with, then each batch's additions and
// removals; the authorizer is loaded from the first image on.
func TestACLPublisher(t *testing.T) {
	l := metadata.NewLoader("c", nil)
	apply := func(index uint64, recs ...metadata.Record) {
		t.Helper()
		data, err := metadata.EncodeBatch(recs)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Apply(index, data); err != nil {
			t.Fatal(err)
		}
	}
	acl := func(name, principal string, perm kmsg.ACLPermissionType) metadata.ACL {
		return ACL{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: principal, Host: "*", Operation: kmsg.ACLOperationRead, Permission: perm}.Metadata()
	}
	id := func(n byte) metadata.Uuid { return metadata.Uuid{0: 1, 15: n} }
	apply(2, &metadata.AccessControlEntryRecord{ID: id(1), ACL: acl("t", "User:alice", kmsg.ACLPermissionTypeAllow)})

	a, err := NewAuthorizer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Loaded() {
		t.Fatal("loaded before any image")
	}
	if err := l.Register(ACLPublisher{A: a}); err != nil {
		t.Fatal(err)
	}
	read := func(user string) bool {
		return a.Authorize(Request{Principal: User(user), Op: kmsg.ACLOperationRead, ResourceType: kmsg.ACLResourceTypeTopic, Name: "t"})
	}
	if !a.Loaded() || !read("alice") || read("bob") {
		t.Fatalf("after the first image: loaded %v, alice %v, bob %v", a.Loaded(), read("alice"), read("bob"))
	}
	// One batch: bob allowed, then denied; alice's ACL removed.
	apply(3,
		&metadata.AccessControlEntryRecord{ID: id(2), ACL: acl("t", "User:bob", kmsg.ACLPermissionTypeAllow)},
		&metadata.AccessControlEntryRecord{ID: id(3), ACL: acl("t", "User:bob", kmsg.ACLPermissionTypeDeny)},
		&metadata.RemoveAccessControlEntryRecord{ID: id(1)})
	if read("alice") || read("bob") || a.ACLs().Len() != 2 {
		t.Fatalf("after the delta: alice %v, bob %v, %s", read("alice"), read("bob"), fmt.Sprint(a.ACLs().All()))
	}
	apply(4, &metadata.RemoveAccessControlEntryRecord{ID: id(3)})
	if !read("bob") || a.ACLs().Len() != 1 {
		t.Fatalf("after removing the DENY: bob %v, %v", read("bob"), a.ACLs().All())
	}
}
