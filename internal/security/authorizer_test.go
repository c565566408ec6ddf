package security

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	opAll             = kmsg.ACLOperationAll
	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite
)

var localhost = netip.MustParseAddr("127.0.0.1")

func acl(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) ACL {
	return ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

// newAuthorizer is StandardAuthorizerTest.createAndInitializeStandardAuthorizer:
// super.users=User:superman, allow.everyone.if.no.acl.found unset (false).
func newAuthorizer(t testing.TB, acls ...ACL) *Authorizer {
	t.Helper()
	a, err := NewAuthorizer(Config{SuperUsers: []string{"User:superman"}})
	if err != nil {
		t.Fatal(err)
	}
	a.SetACLs(NewACLSet(acls))
	return a
}

type check struct {
	user string
	host string // "" is 127.0.0.1
	op   kmsg.ACLOperation
	rt   kmsg.ACLResourceType
	name string
	want bool
}

func runChecks(t *testing.T, a *Authorizer, checks []check) {
	t.Helper()
	for _, c := range checks {
		host := localhost
		if c.host != "" {
			host = netip.MustParseAddr(c.host)
		}
		r := Request{Principal: User(c.user), Host: host, Op: c.op, ResourceType: c.rt, Name: c.name}
		if got := a.Authorize(r); got != c.want {
			t.Errorf("%s from %s: %s %s %q = %v, want %v", c.user, host, opName(c.op), c.rt, c.name, got, c.want)
		}
	}
}

// StandardAuthorizerTest.testAllowEveryoneIfNoAclFoundConfigEnabled and
// ...Disabled: the default applies only to a resource no ACL applies to,
// even when the ACLs that apply are another principal's.
func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	acls := NewACLSet([]ACL{acl(topic, "topic1", literal, "User:Alice", "*", opRead, allow)})
	for _, allowEveryone := range []bool{true, false} {
		a, err := NewAuthorizer(Config{SuperUsers: []string{"User:alice", "User:chris"}, AllowEveryoneIfNoACLFound: allowEveryone})
		if err != nil {
			t.Fatal(err)
		}
		a.SetACLs(acls)
		runChecks(t, a, []check{
			{"Bob", "", opRead, topic, "topic1", false},
			{"Bob", "", opRead, topic, "topic2", allowEveryone},
		})
	}
}

// StandardAuthorizerData.findRule: a DENY for someone else still makes
// the resource one "with ACLs", so the default no longer applies.
func TestOtherPrincipalsDenyCountsAsACLFound(t *testing.T) {
	a, _ := NewAuthorizer(Config{AllowEveryoneIfNoACLFound: true})
	a.SetACLs(NewACLSet([]ACL{
		acl(topic, "t", literal, "User:mallory", "10.9.9.9", opCreate, deny),
		acl(group, "g", prefixed, "User:mallory", "*", opRead, allow),
	}))
	runChecks(t, a, []check{
		{"alice", "", opRead, topic, "t", false},   // an ACL applies, none matches alice
		{"alice", "", opRead, topic, "u", true},    // nothing applies: the default
		{"alice", "", opRead, group, "gx", false},  // the PREFIXED ACL applies to gx
		{"alice", "", opRead, group, "x", true},    // nothing applies to x
		{"mallory", "", opRead, group, "g1", true}, // matches mallory's ALLOW
	})
}

// StandardAuthorizerTest.testFindResultImplication, through Authorize.
func TestImpliedOperations(t *testing.T) {
	fooACL := func(op kmsg.ACLOperation, perm kmsg.ACLPermissionType) *Authorizer {
		return newAuthorizer(t, acl(topic, "foo_", prefixed, "User:bob", "*", op, perm))
	}
	for _, op := range []kmsg.ACLOperation{opDescribe, opRead, opWrite, opDelete, opAlter} {
		runChecks(t, fooACL(op, allow), []check{{"bob", "", opDescribe, topic, "foo_bar", true}})
	}
	runChecks(t, fooACL(opCreate, allow), []check{{"bob", "", opDescribe, topic, "foo_bar", false}})
	for _, op := range []kmsg.ACLOperation{opRead, opWrite, opDelete, opAlter} {
		// A DENY implies nothing, and the ACL found means no default.
		runChecks(t, fooACL(op, deny), []check{{"bob", "", opDescribe, topic, "foo_bar", false}})
	}
	for _, op := range []kmsg.ACLOperation{opDescribeConfigs, opAlterConfigs} {
		runChecks(t, fooACL(op, allow), []check{{"bob", "", opDescribeConfigs, topic, "foo_bar", true}})
	}
	// READ does not imply DESCRIBE_CONFIGS, ALTER_CONFIGS not DESCRIBE.
	runChecks(t, fooACL(opRead, allow), []check{{"bob", "", opDescribeConfigs, topic, "foo_bar", false}})
	runChecks(t, fooACL(opAlterConfigs, allow), []check{{"bob", "", opDescribe, topic, "foo_bar", false}})
}

// StandardAuthorizerTest.testFindResultPrincipalMatching and
// testSimpleAuthorizations.
func TestPrincipalMatching(t *testing.T) {
	a := newAuthorizer(t,
		acl(topic, "foo_", prefixed, "User:bob", "*", opRead, allow),
		acl(topic, "foo_", prefixed, "User:bob", "*", opWrite, allow),
		acl(group, "bar", literal, "User:*", "*", opDescribeConfigs, allow),
		acl(group, "bar", literal, "User:*", "*", opAlterConfigs, allow),
		acl(group, "baz", literal, "User:*", "*", opRead, deny),
	)
	runChecks(t, a, []check{
		{"bob", "", opRead, topic, "foo_bar", true},
		{"alice", "", opRead, topic, "foo_bar", false},
		{"bob", "", opRead, topic, "foo_", true},
		{"fred", "", opAlterConfigs, group, "bar", true},
		{"alice", "", opRead, group, "baz", false},
	})
	// User:* matches principals of any type; Group:* only Group:*.
	b := newAuthorizer(t,
		acl(topic, "t", literal, "User:*", "*", opRead, allow),
		acl(topic, "u", literal, "Group:*", "*", opRead, allow))
	for _, c := range []struct {
		p    Principal
		name string
		want bool
	}{
		{Principal{"Group", "ops"}, "t", true},
		{Principal{"Group", "ops"}, "u", false},
		{Principal{"Group", "*"}, "u", true},
	} {
		if got := b.Authorize(Request{Principal: c.p, Host: localhost, Op: opRead, ResourceType: topic, Name: c.name}); got != c.want {
			t.Errorf("%s reads %s = %v, want %v", c.p, c.name, got, c.want)
		}
	}
}

// StandardAuthorizerTest.testDenyPrecedenceWithOperationAll.
func TestDenyPrecedenceWithOperationAll(t *testing.T) {
	a := newAuthorizer(t,
		acl(topic, "foo", literal, "User:alice", "*", opAll, deny),
		acl(topic, "foo", prefixed, "User:alice", "*", opRead, allow),
		acl(topic, "foo", literal, "User:*", "*", opAll, deny),
		acl(topic, "foo", prefixed, "User:*", "*", opDescribe, allow),
	)
	runChecks(t, a, []check{
		{"alice", "", opWrite, topic, "foo", false},
		{"alice", "", opRead, topic, "foo", false},
		{"alice", "", opDescribe, topic, "foo", false},
		{"alice", "", opRead, topic, "foobar", true},
		{"bob", "", opDescribe, topic, "foo", false},
		{"bob", "", opRead, topic, "foo", false},
		{"bob", "", opWrite, topic, "foo", false},
		{"bob", "", opDescribe, topic, "foobaz", true},
		{"bob", "", opRead, topic, "foobaz", false},
	})
}

// StandardAuthorizerTest.testTopicAclWithOperationAll.
func TestTopicACLWithOperationAll(t *testing.T) {
	a := newAuthorizer(t,
		acl(topic, "foo", literal, "User:*", "*", opAll, allow),
		acl(topic, "bar", prefixed, "User:alice", "*", opAll, allow),
		acl(topic, "baz", literal, "User:bob", "*", opAll, allow),
	)
	runChecks(t, a, []check{
		{"alice", "", opWrite, topic, "foo", true},
		{"alice", "", opDescribeConfigs, topic, "bar", true},
		{"alice", "", opDescribe, topic, "baz", false},
		{"bob", "", opWrite, topic, "foo", true},
		{"bob", "", opRead, topic, "bar", false},
		{"bob", "", opDescribe, topic, "baz", true},
		{"malory", "", opDescribe, topic, "foo", true},
		{"malory", "", opWrite, topic, "bar", false},
		{"malory", "", opRead, topic, "baz", false},
	})
}

// StandardAuthorizerTest.testHostAddressAclValidation (127.0.0.1 standing
// for InetAddress.getLocalHost()).
func TestHostMatching(t *testing.T) {
	a := newAuthorizer(t,
		acl(topic, "foo", literal, "User:alice", "192.168.1.1", opRead, deny),
		acl(topic, "foo", literal, "User:alice", "*", opRead, allow),
		acl(topic, "bar", literal, "User:bob", "192.168.1.2", opRead, allow),
		acl(topic, "bar", literal, "User:*", "127.0.0.1", opDescribe, allow),
	)
	var checks []check
	for _, c := range []struct {
		user, host string
		want       [3]bool // READ foo, READ bar, DESCRIBE bar
	}{
		{"alice", "127.0.0.1", [3]bool{true, false, true}},
		{"alice", "192.168.1.1", [3]bool{false, false, false}},
		{"alice", "192.168.1.2", [3]bool{true, false, false}},
		{"bob", "127.0.0.1", [3]bool{false, false, true}},
		{"bob", "192.168.1.1", [3]bool{false, false, false}},
		{"bob", "192.168.1.2", [3]bool{false, true, true}},
	} {
		checks = append(checks,
			check{c.user, c.host, opRead, topic, "foo", c.want[0]},
			check{c.user, c.host, opRead, topic, "bar", c.want[1]},
			check{c.user, c.host, opDescribe, topic, "bar", c.want[2]})
	}
	runChecks(t, a, checks)

	// An IPv6 client is written as Java writes it: "::1" never matches.
	b := newAuthorizer(t,
		acl(topic, "short", literal, "User:alice", "::1", opRead, allow),
		acl(topic, "long", literal, "User:alice", "0:0:0:0:0:0:0:1", opRead, allow),
		acl(topic, "cidr", literal, "User:alice", "::1/128", opRead, allow))
	runChecks(t, b, []check{
		{"alice", "::1", opRead, topic, "short", false},
		{"alice", "::1", opRead, topic, "long", true},
		{"alice", "::1", opRead, topic, "cidr", true},
	})
}

// StandardAuthorizerTest.testAuthorizationWithManyAcls and testPrefixAcls.
func TestPrefixes(t *testing.T) {
	a := newAuthorizer(t,
		acl(topic, "green2", literal, "User:*", "*", opRead, allow),
		acl(topic, "green", prefixed, "User:bob", "*", opRead, allow),
		acl(topic, "betamax4", literal, "User:bob", "*", opRead, allow),
		acl(topic, "betamax", literal, "User:bob", "*", opRead, allow),
		acl(topic, "beta", prefixed, "User:*", "*", opRead, allow),
		acl(topic, "alpha", prefixed, "User:*", "*", opRead, allow),
		acl(topic, "alp", prefixed, "User:bob", "*", opRead, deny),
		acl(group, "*", literal, "User:bob", "*", opWrite, allow),
		acl(group, "wheel", literal, "User:*", "*", opWrite, deny),
	)
	runChecks(t, a, []check{
		{"bob", "", opRead, topic, "green1", true},
		{"bob", "", opWrite, group, "wheel", false},
		{"bob", "", opRead, topic, "alpha", false},
		{"bob", "", opWrite, group, "arbitrary", true},
		{"bob", "", opRead, topic, "ala", false},
	})
	b := newAuthorizer(t,
		acl(topic, "fooa", prefixed, "User:alice", "*", opAll, allow),
		acl(topic, "foobar", literal, "User:bob", "*", opAll, allow),
		acl(topic, "f", prefixed, "User:bob", "*", opAll, allow),
	)
	runChecks(t, b, []check{
		{"bob", "", opWrite, topic, "foobarr", true},
		{"bob", "", opRead, topic, "goobar", false},
		{"bob", "", opRead, topic, "fooa", true},
		{"alice", "", opDescribe, topic, "fooa", true},
		{"alice", "", opWrite, topic, "bar", false},
		{"alice", "", opRead, topic, "baz", false},
	})
}

// Super users pass DENY ACLs (StandardAuthorizerData.authorize checks them
// first); super.users parsing as testGetConfiguredSuperUsers.
func TestSuperUsers(t *testing.T) {
	for in, want := range map[string][]string{
		"":                            nil,
		" ":                           nil,
		"User:bob;User:alice ":        {"User:bob", "User:alice"},
		";  User:bob  ;  User:alice ": {"User:bob", "User:alice"},
	} {
		got, err := ParseSuperUsers(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseSuperUsers(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseSuperUsers("bob;:alice"); err == nil {
		t.Error(`ParseSuperUsers("bob;:alice") accepted a principal without a type`)
	}
	a := newAuthorizer(t, acl(topic, "*", literal, "User:*", "*", opAll, deny))
	runChecks(t, a, []check{
		{"superman", "", opWrite, topic, "t", true},
		{"alice", "", opWrite, topic, "t", false},
	})
	for in, want := range map[string]bool{"true": true, " TRUE ": true, "True": true, "false": false, "yes": false, "": false} {
		if got := ParseAllowEveryone(in); got != want {
			t.Errorf("ParseAllowEveryone(%q) = %v", in, got)
		}
	}
}

// Quirks of Kafka 4.4.0 that the differential test found; Samsa keeps them.
func TestKafkaQuirks(t *testing.T) {
	// LITERAL "*" does not apply to a name that starts with '*'.
	a, _ := NewAuthorizer(Config{AllowEveryoneIfNoACLFound: true})
	a.SetACLs(NewACLSet([]ACL{acl(group, "*", literal, "User:*", "*", opAll, deny)}))
	runChecks(t, a, []check{
		{"alice", "", opRead, group, "g", false},
		{"alice", "", opRead, group, "*", false},
		{"alice", "", opRead, group, "*g", true}, // no ACL applies: the default
	})
	// A client named User:* is refused (Kafka throws) unless super user.
	b, _ := NewAuthorizer(Config{AllowEveryoneIfNoACLFound: true})
	star := User("*")
	if b.Authorize(Request{Principal: star, Host: localhost, Op: opRead, ResourceType: topic, Name: "t"}) ||
		b.AuthorizeByResourceType(star, localhost, opRead, topic) {
		t.Error("User:* was allowed")
	}
	c, _ := NewAuthorizer(Config{SuperUsers: []string{"User:*"}})
	if !c.Authorize(Request{Principal: star, Host: localhost, Op: opRead, ResourceType: topic, Name: "t"}) {
		t.Error("super user User:* was refused")
	}
	// The CIDR 0.0.0.0/0 does not hold 0.0.0.0.
	d := newAuthorizer(t, acl(topic, "t", literal, "User:*", "0.0.0.0/0", opRead, allow))
	runChecks(t, d, []check{
		{"alice", "10.1.1.1", opRead, topic, "t", true},
		{"alice", "0.0.0.0", opRead, topic, "t", false},
	})
}

// BaseAuthorizerTest's testAuthorizeByResourceType* cases (core).
func TestAuthorizeByResourceType(t *testing.T) {
	u1, h1, h2 := "User:user1", "192.168.1.1", "192.168.1.2"
	byType := func(a *Authorizer, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
		return a.AuthorizeByResourceType(User("user1"), netip.MustParseAddr(host), op, rt)
	}

	// ...IsolationUnrelatedDenyWontDominateAllow
	a := newAuthorizer(t,
		acl(topic, "sb1", literal, u1, h1, opRead, deny),
		acl(topic, "sb1", literal, "User:user2", h1, opRead, deny),
		acl(topic, "sb1", literal, u1, h2, opWrite, deny),
		acl(topic, "sb1", literal, "User:user2", h2, opRead, deny),
		acl(topic, "sb1", literal, u1, h2, opRead, allow),
		acl(topic, "sb2", literal, u1, h2, opRead, deny),
		acl(group, "s", prefixed, u1, h2, opRead, deny))
	for _, rt := range []kmsg.ACLResourceType{topic, group, kmsg.ACLResourceTypeTransactionalId, cluster} {
		if byType(a, h1, opRead, rt) {
			t.Errorf("isolation: user1 from host1 may READ some %s", rt)
		}
	}
	if !byType(a, h2, opRead, topic) {
		t.Error("isolation: user1 from host2 may not READ any topic")
	}

	// ...DenyTakesPrecedence
	set := NewACLSet([]ACL{acl(topic, "sb1", literal, u1, h1, opWrite, allow)})
	a.SetACLs(set)
	if !byType(a, h1, opWrite, topic) {
		t.Error("precedence: WRITE not allowed")
	}
	a.SetACLs(set.Update([]ACL{acl(topic, "sb1", literal, u1, h1, opWrite, deny)}, nil))
	if byType(a, h1, opWrite, topic) {
		t.Error("precedence: WRITE allowed despite the DENY")
	}

	// ...PrefixedResourceDenyDominate
	allowACL := func(name string) ACL { return acl(group, name, prefixed, u1, h1, opRead, allow) }
	denyACL := func(name string) ACL { return acl(group, name, prefixed, u1, h1, opRead, deny) }
	var acls []ACL
	for _, step := range []struct {
		add  ACL
		want bool
	}{
		{allowACL("abcde"), true},
		{denyACL("abcd"), false},
		{allowACL("abc"), true},
		{denyACL("a"), false},
		{allowACL("ab"), false},
	} {
		acls = append(acls, step.add)
		a.SetACLs(NewACLSet(acls))
		if got := byType(a, h1, opRead, group); got != step.want {
			t.Errorf("prefixed: after %v: %v, want %v", step.add, got, step.want)
		}
	}

	// ...WildcardResourceDenyDominate
	acls = nil
	for _, step := range []struct {
		add  ACL
		want bool
	}{
		{acl(group, "hello", prefixed, u1, h1, opWrite, allow), true},
		{acl(group, "*", literal, u1, h1, opWrite, deny), false},
		{acl(group, "*", literal, u1, h1, opWrite, allow), false},
		{acl(group, "aloha", literal, u1, h1, opWrite, allow), false},
	} {
		acls = append(acls, step.add)
		a.SetACLs(NewACLSet(acls))
		if got := byType(a, h1, opWrite, group); got != step.want {
			t.Errorf("wildcard: after %v: %v, want %v", step.add, got, step.want)
		}
	}

	// ...WithAllOperationAce
	a.SetACLs(NewACLSet(nil))
	if byType(a, h1, opRead, topic) {
		t.Error("all-op: READ allowed without ACLs")
	}
	all := NewACLSet([]ACL{acl(topic, "sb1", literal, u1, h1, opWrite, deny), acl(topic, "sb1", literal, u1, h1, opAll, allow)})
	a.SetACLs(all)
	if !byType(a, h1, opRead, topic) {
		t.Error("all-op: READ not allowed by ALL")
	}
	a.SetACLs(all.Update([]ACL{acl(topic, "sb1", literal, u1, h1, opAll, deny)}, nil))
	if byType(a, h1, opRead, topic) {
		t.Error("all-op: READ allowed despite DENY ALL")
	}

	// ...SuperUserHasAccess, and the "hardcode" probe: an ACL on that
	// name, or allow.everyone.if.no.acl.found, decides at once.
	a.SetACLs(NewACLSet([]ACL{acl(topic, "*", literal, "User:*", "*", opAll, deny)}))
	if !a.AuthorizeByResourceType(User("superman"), netip.MustParseAddr(h1), opWrite, topic) {
		t.Error("super user refused")
	}
	a.SetACLs(NewACLSet([]ACL{acl(topic, "hard", prefixed, u1, "*", opWrite, allow),
		acl(topic, "hardcode", prefixed, u1, "*", opWrite, deny)}))
	// The probe "hardcode" is denied, but that ends nothing: the ALLOW of
	// prefix "hard" is not covered by the DENY of the longer "hardcode".
	if !byType(a, h1, opWrite, topic) {
		t.Error(`probe: a DENY of "hardcode" hid the ALLOW of "hard"`)
	}
	everyone, _ := NewAuthorizer(Config{AllowEveryoneIfNoACLFound: true})
	if !everyone.AuthorizeByResourceType(User("x"), localhost, opIdempotentWrite, cluster) {
		t.Error("allow.everyone.if.no.acl.found did not pass the probe")
	}
	if everyone.AuthorizeByResourceType(User("x"), localhost, kmsg.ACLOperationAny, topic) {
		t.Error("operation ANY was allowed")
	}
}

func TestACLSetSnapshots(t *testing.T) {
	x := acl(topic, "x", literal, "User:a", "*", opRead, allow)
	y := acl(topic, "y", prefixed, "User:a", "*", opRead, allow)
	s1 := NewACLSet([]ACL{x, x, y})
	if s1.Len() != 2 {
		t.Fatalf("duplicates kept: %d ACLs", s1.Len())
	}
	s2 := s1.Update([]ACL{acl(group, "g", literal, "User:a", "*", opRead, deny)}, []ACL{x})
	if s1.Len() != 2 || len(s1.Describe(FilterAny)) != 2 {
		t.Error("Update changed the old snapshot")
	}
	if got := s2.All(); len(got) != 2 || got[0] != y {
		t.Errorf("new snapshot %v", got)
	}
	// Kafka's order: by type, then name descending.
	s3 := NewACLSet([]ACL{acl(group, "a", literal, "User:a", "*", opRead, allow), x, y,
		acl(topic, "*", literal, "User:a", "*", opRead, allow)})
	var names []string
	for _, a := range s3.All() {
		names = append(names, fmt.Sprint(a.ResourceType, "/", a.ResourceName))
	}
	if want := "TOPIC/y TOPIC/x TOPIC/* GROUP/a"; strings.Join(names, " ") != want {
		t.Errorf("order %q, want %q", strings.Join(names, " "), want)
	}
}

// The prefix walk finds exactly the PREFIXED names that prefix a name,
// against a linear scan, over alphabets small enough to collide.
func TestEachPrefixOfProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(max int) string {
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = "ab*"[r.IntN(3)]
		}
		return string(b)
	}
	for round := 0; round < 2000; round++ {
		var acls []ACL
		for n := r.IntN(30); n > 0; n-- {
			acls = append(acls, acl(topic, word(5), prefixed, "User:a", "*", opRead, allow))
		}
		ix := NewACLSet(acls).index(topic)
		for q := 0; q < 20; q++ {
			name := word(6)
			var want, got []string
			for _, a := range acls {
				if strings.HasPrefix(name, a.ResourceName) && !slices.Contains(want, a.ResourceName) {
					want = append(want, a.ResourceName)
				}
			}
			if ix != nil {
				ix.eachPrefixOf(name, func(es []entry) bool {
					got = append(got, es[0].name)
					return false
				})
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("prefixes of %q among %v: got %q, want %q", name, acls, got, want)
			}
		}
	}
}

// benchACLs is n ACLs in the shape of a real cluster: per-team PREFIXED
// topic and group ACLs, per-service LITERAL topic ACLs, a few wildcards.
func benchACLs(n int) []ACL {
	var acls []ACL
	for i := 0; len(acls) < n; i++ {
		team := fmt.Sprintf("team%03d.", i%500)
		user := fmt.Sprintf("User:svc%04d", i)
		acls = append(acls,
			acl(topic, team, prefixed, user, "*", opRead, allow),
			acl(topic, fmt.Sprintf("%sevents-%d", team, i), literal, user, "*", opWrite, allow),
			acl(group, team, prefixed, user, "*", opRead, allow),
			acl(topic, fmt.Sprintf("%ssecret-%d", team, i), literal, "User:*", "10.0.0.0/8", opAll, deny))
	}
	acls = append(acls, acl(topic, "*", literal, "User:admin", "*", opDescribe, allow))
	return acls[:n]
}

func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{100, 10000} {
		a := newAuthorizer(b, benchACLs(n)...)
		host := netip.MustParseAddr("10.1.2.3")
		for _, c := range []struct {
			name string
			r    Request
		}{
			{"literal", Request{Principal: User("svc0042"), Host: host, Op: opWrite, ResourceType: topic, Name: "team042.events-42"}},
			{"prefixed", Request{Principal: User("svc0042"), Host: host, Op: opRead, ResourceType: topic, Name: "team042.orders"}},
			{"denied", Request{Principal: User("nobody"), Host: host, Op: opRead, ResourceType: topic, Name: "team042.orders"}},
			{"no-acl", Request{Principal: User("svc0042"), Host: host, Op: opRead, ResourceType: topic, Name: "zzz"}},
		} {
			b.Run(fmt.Sprintf("acls=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					a.Authorize(c.r)
				}
			})
		}
		b.Run(fmt.Sprintf("acls=%d/by-type", n), func(b *testing.B) {
			for b.Loop() {
				a.AuthorizeByResourceType(User("nobody"), host, opWrite, topic)
			}
		})
	}
}

func BenchmarkNewACLSet(b *testing.B) {
	acls := benchACLs(10000)
	for b.Loop() {
		NewACLSet(acls)
	}
}
