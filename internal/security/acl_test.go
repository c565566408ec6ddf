package security

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic    = kmsg.ACLResourceTypeTopic
	group    = kmsg.ACLResourceTypeGroup
	cluster  = kmsg.ACLResourceTypeCluster
	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed
	match    = kmsg.ACLResourcePatternTypeMatch
	anyPT    = kmsg.ACLResourcePatternTypeAny
	allow    = kmsg.ACLPermissionTypeAllow
	deny     = kmsg.ACLPermissionTypeDeny
)

func sp(s string) *string { return &s }

// The cases of Kafka's ResourcePatternFilterTest (clients), one per test
// method, by name.
func TestFilterResourcePatternKafka(t *testing.T) {
	pattern := func(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType) ACL {
		return ACL{ResourceType: rt, ResourceName: name, PatternType: pt}
	}
	filter := func(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType) Filter {
		f := FilterAny
		f.ResourceType, f.ResourceName, f.PatternType = rt, name, pt
		return f
	}
	for _, c := range []struct {
		test string
		f    Filter
		a    ACL
		want bool
	}{
		{"shouldNotMatchIfDifferentResourceType", filter(topic, sp("Name"), literal), pattern(group, "Name", literal), false},
		{"shouldNotMatchIfDifferentName", filter(topic, sp("Different"), prefixed), pattern(topic, "Name", prefixed), false},
		{"shouldNotMatchIfDifferentNameCase", filter(topic, sp("NAME"), literal), pattern(topic, "Name", literal), false},
		{"shouldNotMatchIfDifferentPatternType", filter(topic, sp("Name"), literal), pattern(topic, "Name", prefixed), false},
		{"shouldMatchWhereResourceTypeIsAny", filter(kmsg.ACLResourceTypeAny, sp("Name"), prefixed), pattern(topic, "Name", prefixed), true},
		{"shouldMatchWhereResourceNameIsAny", filter(topic, nil, prefixed), pattern(topic, "Name", prefixed), true},
		{"shouldMatchWherePatternTypeIsAny", filter(topic, nil, anyPT), pattern(topic, "Name", prefixed), true},
		{"shouldMatchWherePatternTypeIsMatch", filter(topic, nil, match), pattern(topic, "Name", prefixed), true},
		{"shouldMatchLiteralIfExactMatch", filter(topic, sp("Name"), literal), pattern(topic, "Name", literal), true},
		{"shouldMatchLiteralIfNameMatchesAndFilterIsOnPatternTypeAny", filter(topic, sp("Name"), anyPT), pattern(topic, "Name", literal), true},
		{"shouldMatchLiteralIfNameMatchesAndFilterIsOnPatternTypeMatch", filter(topic, sp("Name"), match), pattern(topic, "Name", literal), true},
		{"shouldNotMatchLiteralIfNamePrefixed", filter(topic, sp("Name-something"), match), pattern(topic, "Name", literal), false},
		{"shouldMatchLiteralWildcardIfExactMatch", filter(topic, sp("*"), literal), pattern(topic, "*", literal), true},
		{"shouldNotMatchLiteralWildcardAgainstOtherName", filter(topic, sp("Name"), literal), pattern(topic, "*", literal), false},
		{"shouldNotMatchLiteralWildcardTheWayAround", filter(topic, sp("*"), literal), pattern(topic, "Name", literal), false},
		{"shouldNotMatchLiteralWildcardIfFilterHasPatternTypeOfAny", filter(topic, sp("Name"), anyPT), pattern(topic, "*", literal), false},
		{"shouldMatchLiteralWildcardIfFilterHasPatternTypeOfMatch", filter(topic, sp("Name"), match), pattern(topic, "*", literal), true},
		{"shouldMatchPrefixedIfExactMatch", filter(topic, sp("Name"), prefixed), pattern(topic, "Name", prefixed), true},
		{"shouldNotMatchIfBothPrefixedAndFilterIsPrefixOfResource", filter(topic, sp("Name"), prefixed), pattern(topic, "Name-something", prefixed), false},
		{"shouldNotMatchIfBothPrefixedAndResourceIsPrefixOfFilter", filter(topic, sp("Name-something"), prefixed), pattern(topic, "Name", prefixed), false},
		{"shouldNotMatchPrefixedIfNamePrefixedAnyFilterTypeIsAny", filter(topic, sp("Name-something"), anyPT), pattern(topic, "Name", prefixed), false},
		{"shouldMatchPrefixedIfNamePrefixedAnyFilterTypeIsMatch", filter(topic, sp("Name-something"), match), pattern(topic, "Name", prefixed), true},
		// Not in Kafka's test: unknown codes select nothing (fromCode
		// gives UNKNOWN, which no stored ACL has).
		{"unknown resource type", filter(99, nil, anyPT), pattern(topic, "Name", literal), false},
		{"unknown pattern type", filter(topic, nil, 9), pattern(topic, "Name", literal), false},
	} {
		c.a.Operation, c.a.Permission, c.a.Principal, c.a.Host = kmsg.ACLOperationRead, allow, "User:a", "*"
		if got := c.f.Matches(c.a); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.test, got, c.want)
		}
	}
}

// AccessControlEntryFilter.matches: nil and ANY match anything, the rest
// compare exactly (no wildcard meaning in a filter's principal or host).
func TestFilterEntry(t *testing.T) {
	a := ACL{ResourceType: topic, ResourceName: "t", PatternType: literal, Principal: "User:*", Host: "*",
		Operation: kmsg.ACLOperationRead, Permission: allow}
	f := FilterAny
	for _, c := range []struct {
		name string
		edit func(*Filter)
		want bool
	}{
		{"any", func(*Filter) {}, true},
		{"principal equal", func(f *Filter) { f.Principal = sp("User:*") }, true},
		{"principal not a wildcard in a filter", func(f *Filter) { f.Principal = sp("User:alice") }, false},
		{"host equal", func(f *Filter) { f.Host = sp("*") }, true},
		{"host differs", func(f *Filter) { f.Host = sp("10.0.0.1") }, false},
		{"operation equal", func(f *Filter) { f.Operation = kmsg.ACLOperationRead }, true},
		{"ALL in a filter is just ALL", func(f *Filter) { f.Operation = kmsg.ACLOperationAll }, false},
		{"permission differs", func(f *Filter) { f.Permission = deny }, false},
	} {
		g := f
		c.edit(&g)
		if got := g.Matches(a); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
}

// AclControlManager.validateFilter: unknown parts are INVALID_REQUEST.
func TestFilterValidate(t *testing.T) {
	if err := FilterAny.Validate(); err != nil {
		t.Fatalf("FilterAny: %v", err)
	}
	for _, edit := range []func(*Filter){
		func(f *Filter) { f.ResourceType = kmsg.ACLResourceTypeUnknown },
		func(f *Filter) { f.ResourceType = 42 },
		func(f *Filter) { f.PatternType = kmsg.ACLResourcePatternTypeUnknown },
		func(f *Filter) { f.Operation = 77 },
		func(f *Filter) { f.Permission = kmsg.ACLPermissionTypeUnknown },
	} {
		f := FilterAny
		edit(&f)
		if err := f.Validate(); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("%+v: Validate = %v, want INVALID_REQUEST", f, err)
		}
	}
}

// ValidateCreation follows AclApis.handleCreateAcls and
// AclControlManager.validateNewAcl (Kafka 4.4.0); the differential test
// checks the same against Kafka's own code.
func TestValidateCreation(t *testing.T) {
	ok := ACL{ResourceType: topic, ResourceName: "t", PatternType: literal, Principal: "User:alice", Host: "*",
		Operation: kmsg.ACLOperationRead, Permission: allow}
	cidr := ValidateOptions{CIDRHosts: true}
	for _, c := range []struct {
		name string
		edit func(*ACL)
		opts ValidateOptions
		want error
		msg  string
	}{
		{"valid", func(*ACL) {}, cidr, nil, ""},
		{"cluster must be kafka-cluster", func(a *ACL) { a.ResourceType = cluster }, cidr, kerr.InvalidRequest,
			"INVALID_REQUEST: The only valid name for the CLUSTER resource is kafka-cluster"},
		{"cluster named right", func(a *ACL) { a.ResourceType, a.ResourceName = cluster, ClusterName }, cidr, nil, ""},
		{"empty name", func(a *ACL) { a.ResourceName = "" }, cidr, kerr.InvalidRequest, "INVALID_REQUEST: Invalid empty resource name"},
		{"unknown resource type", func(a *ACL) { a.ResourceType = 99 }, cidr, kerr.InvalidRequest, "INVALID_REQUEST: Invalid resourceType UNKNOWN"},
		{"unknown pattern type", func(a *ACL) { a.PatternType = 7 }, cidr, kerr.InvalidRequest, "INVALID_REQUEST: Invalid patternType UNKNOWN"},
		{"MATCH pattern type", func(a *ACL) { a.PatternType = match }, cidr, kerr.InvalidRequest, "INVALID_REQUEST: Invalid patternType MATCH"},
		{"unknown operation", func(a *ACL) { a.Operation = 16 }, cidr, kerr.InvalidRequest, "INVALID_REQUEST: Invalid operation UNKNOWN"},
		{"TWO_PHASE_COMMIT is known", func(a *ACL) { a.Operation = OpTwoPhaseCommit }, cidr, nil, ""},
		{"unknown permission", func(a *ACL) { a.Permission = 9 }, cidr, kerr.InvalidRequest, "INVALID_REQUEST: Invalid permissionType UNKNOWN"},
		{"principal without type", func(a *ACL) { a.Principal = "alice" }, cidr, kerr.InvalidRequest,
			"INVALID_REQUEST: Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
		{"principal with empty name is accepted", func(a *ACL) { a.Principal = "User:" }, cidr, nil, ""},
		{"empty host", func(a *ACL) { a.Host = "" }, cidr, kerr.InvalidRequest, "INVALID_REQUEST: Host pattern cannot be null or empty"},
		{"any host text without / is accepted", func(a *ACL) { a.Host = "not-an-address" }, cidr, nil, ""},
		{"CIDR before 4.4-IV1", func(a *ACL) { a.Host = "10.0.0.0/8" }, ValidateOptions{}, kerr.UnsupportedVersion,
			"UNSUPPORTED_VERSION: CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher."},
		{"IPv4 CIDR", func(a *ACL) { a.Host = "10.0.0.0/8" }, cidr, nil, ""},
		{"IPv4 CIDR mask too long", func(a *ACL) { a.Host = "10.0.0.0/33" }, cidr, kerr.InvalidRequest,
			"INVALID_REQUEST: Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]"},
		{"IPv4 CIDR octet too large", func(a *ACL) { a.Host = "256.0.0.0/8" }, cidr, kerr.InvalidRequest, ""},
		{"IPv6 CIDR", func(a *ACL) { a.Host = "2001:db8::/32" }, cidr, nil, ""},
		{"IPv6 CIDR in brackets", func(a *ACL) { a.Host = "[2001:db8::]/32" }, cidr, nil, ""},
		{"IPv6 CIDR prefix too long", func(a *ACL) { a.Host = "2001:db8::/129" }, cidr, kerr.InvalidRequest, ""},
		{"IPv4-mapped is not IPv6 to Java", func(a *ACL) { a.Host = "::ffff:1.2.3.4/96" }, cidr, kerr.InvalidRequest, ""},
	} {
		a := ok
		c.edit(&a)
		err := ValidateCreation(a, c.opts)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want nil", c.name, err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		} else if c.msg != "" && err.Error() != c.msg {
			t.Errorf("%s: message %q, want %q", c.name, err.Error(), c.msg)
		}
	}
}

// CreateAclsRequest's parse-time checks and the constructors of
// ResourcePattern and AccessControlEntry.
func TestCheckCreateRequest(t *testing.T) {
	ok := ACL{ResourceType: topic, ResourceName: "t", PatternType: literal, Principal: "User:alice", Host: "*",
		Operation: kmsg.ACLOperationRead, Permission: allow}
	for _, c := range []struct {
		name    string
		version int16
		edit    func(*ACL)
		close   bool
		want    error
	}{
		{"valid", 1, func(*ACL) {}, false, nil},
		{"code 0 fails parsing", 1, func(a *ACL) { a.Operation = 0 }, true, kerr.InvalidRequest},
		{"v0 is LITERAL only", 0, func(a *ACL) { a.PatternType = prefixed }, true, kerr.UnsupportedVersion},
		{"resource type ANY", 1, func(a *ACL) { a.ResourceType = kmsg.ACLResourceTypeAny }, false, kerr.UnknownServerError},
		{"pattern type MATCH", 1, func(a *ACL) { a.PatternType = match }, false, kerr.UnknownServerError},
		{"operation ANY", 1, func(a *ACL) { a.Operation = kmsg.ACLOperationAny }, false, kerr.UnknownServerError},
		{"permission ANY", 1, func(a *ACL) { a.Permission = kmsg.ACLPermissionTypeAny }, false, kerr.UnknownServerError},
		{"unknown code is left to ValidateCreation", 1, func(a *ACL) { a.ResourceType = 99 }, false, nil},
	} {
		a := ok
		c.edit(&a)
		closeConn, err := CheckCreateRequest(c.version, []ACL{ok, a})
		if closeConn != c.close || !errors.Is(err, c.want) && !(err == nil && c.want == nil) {
			t.Errorf("%s: (%v, %v), want (%v, %v)", c.name, closeConn, err, c.close, c.want)
		}
	}
}

// Java's InetAddress.getHostAddress, which is what Kafka compares an ACL's
// host with.
func TestHostString(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1":          "10.0.0.1",
		"::1":               "0:0:0:0:0:0:0:1",
		"::":                "0:0:0:0:0:0:0:0",
		"2001:db8::5":       "2001:db8:0:0:0:0:0:5",
		"2001:DB8:0:0:ab::": "2001:db8:0:0:ab:0:0:0",
		"::ffff:10.0.0.1":   "10.0.0.1",
		"fe80::1%1":         "fe80:0:0:0:0:0:0:1%1",
	} {
		if got := HostString(netip.MustParseAddr(in)); got != want {
			t.Errorf("HostString(%s) = %q, want %q", in, got, want)
		}
	}
}

// CIDR host patterns as Kafka 4.4's CidrUtils reads them.
func TestCIDR(t *testing.T) {
	for _, c := range []struct {
		cidr, addr string
		want       bool
	}{
		{"10.0.0.0/8", "10.1.2.3", true},
		{"10.0.0.0/8", "11.0.0.0", false},
		{"10.0.0.1/8", "10.255.255.255", true}, // host bits are masked off
		{"10.0.0.0/31", "10.0.0.1", true},      // network and broadcast count (inclusive)
		{"10.0.0.1/32", "10.0.0.1", true},
		{"0.0.0.0/0", "255.255.255.255", true},
		{"0.0.0.0/0", "0.0.0.0", false}, // commons-net never has 0.0.0.0 in range
		{"010.000.000.001/32", "10.0.0.1", true},
		{"10.0.0.0/8", "::ffff:10.0.0.1", true}, // a mapped client is IPv4 to Java
		{"10.0.0.0/8", "::1", false},
		{"::/0", "10.0.0.1", false},
		{"::/0", "::", true},
		{"2001:db8::/32", "2001:db8:ffff::1", true},
		{"2001:db8::/32", "2001:db9::", false},
		{"[2001:db8::]/32", "2001:db8::1", true},
		{"fe80::/10", "fe80::1%1", true},
		{"2001:db8::/+32", "2001:db8::1", true}, // Integer.parseInt takes a sign
		{"10.0.0.0/33", "10.0.0.1", false},      // does not parse: never matches
		{"1.2.3/8", "1.2.3.4", false},
	} {
		m := newHostMatcher(c.cidr)
		a := netip.MustParseAddr(c.addr)
		if got := m.matches(a, HostString(a)); got != c.want {
			t.Errorf("%s holds %s = %v, want %v", c.cidr, c.addr, got, c.want)
		}
	}
}
