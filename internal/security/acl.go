package security

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/wire"
)

// The ACL model uses Kafka's wire numbering through franz-go's kmsg types
// (ACLResourceType, ACLResourcePatternType, ACLOperation,
// ACLPermissionType), so a CreateAcls creation or a DescribeAcls filter
// converts field by field. The names below are the values the authorizer
// reasons about; kmsg has no name for TWO_PHASE_COMMIT yet.
const (
	// Wildcard is the resource name of a LITERAL ACL that matches every
	// resource of its type, and the host of an ACL that matches every host.
	Wildcard = "*"
	// WildcardPrincipal is the ACL principal that matches every principal.
	WildcardPrincipal = "User:*"
	// ClusterName is the only name a CLUSTER resource has.
	ClusterName = "kafka-cluster"

	// OpTwoPhaseCommit is AclOperation.TWO_PHASE_COMMIT (KIP-939), code 15
	// since Kafka 4.0; kmsg does not name it.
	OpTwoPhaseCommit kmsg.ACLOperation = 15
)

// CIDRMetadataVersion is the metadata version from which Kafka accepts CIDR
// host patterns ("10.0.0.0/8") in new ACLs.
const CIDRMetadataVersion = "4.4-IV1"

// ACL is one access control entry bound to a resource pattern: Kafka's
// AclBinding (StandardAcl inside the authorizer). Values are compared as a
// whole; two equal ACLs are one ACL, as in Kafka's controller.
type ACL struct {
	ResourceType kmsg.ACLResourceType
	// ResourceName is the resource's name, "*" for every resource of the
	// type (LITERAL only), or a name prefix (PREFIXED).
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType // LITERAL or PREFIXED
	// Principal is "Type:Name": "User:alice", or "User:*" for everyone.
	Principal string
	// Host is "*", a client address in Java's text form ("10.0.0.1",
	// "0:0:0:0:0:0:0:1"), or a CIDR block ("10.0.0.0/8", "2001:db8::/32").
	Host       string
	Operation  kmsg.ACLOperation
	Permission kmsg.ACLPermissionType // ALLOW or DENY
}

func (a ACL) String() string {
	return fmt.Sprintf("(%s %s %q) %s %s %s from %s", a.ResourceType, a.PatternType, a.ResourceName,
		a.Permission, a.Principal, opName(a.Operation), a.Host)
}

func opName(op kmsg.ACLOperation) string {
	if op == OpTwoPhaseCommit {
		return "TWO_PHASE_COMMIT"
	}
	return op.String()
}

// Filter selects ACLs for DescribeAcls and DeleteAcls: Kafka's
// AclBindingFilter. A nil string matches anything; ResourceType ANY,
// Operation ANY and Permission ANY match any value.
//
// PatternType says how ResourceName is compared: ANY and the ACL's own
// pattern type compare names exactly; MATCH selects every ACL that would
// apply to a resource called ResourceName — LITERAL ACLs of that name,
// LITERAL "*" ACLs, and PREFIXED ACLs whose prefix starts ResourceName.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// FilterAny matches every ACL.
var FilterAny = Filter{
	ResourceType: kmsg.ACLResourceTypeAny,
	PatternType:  kmsg.ACLResourcePatternTypeAny,
	Operation:    kmsg.ACLOperationAny,
	Permission:   kmsg.ACLPermissionTypeAny,
}

// Matches reports whether a is selected by f (AclBindingFilter.matches).
// Codes Kafka does not know compare as UNKNOWN, so a filter with an
// unknown field selects nothing; Validate rejects such filters first.
func (f Filter) Matches(a ACL) bool {
	rt, art := knownResourceType(f.ResourceType), knownResourceType(a.ResourceType)
	if rt != kmsg.ACLResourceTypeAny && rt != art {
		return false
	}
	pt, apt := knownPatternType(f.PatternType), knownPatternType(a.PatternType)
	if pt != kmsg.ACLResourcePatternTypeAny && pt != kmsg.ACLResourcePatternTypeMatch && pt != apt {
		return false
	}
	if f.ResourceName != nil && !f.nameMatches(pt, apt, a.ResourceName) {
		return false
	}
	if f.Principal != nil && *f.Principal != a.Principal {
		return false
	}
	if f.Host != nil && *f.Host != a.Host {
		return false
	}
	if op := knownOperation(f.Operation); op != kmsg.ACLOperationAny && op != knownOperation(a.Operation) {
		return false
	}
	perm := knownPermission(f.Permission)
	return perm == kmsg.ACLPermissionTypeAny || perm == knownPermission(a.Permission)
}

func (f Filter) nameMatches(pt, apt kmsg.ACLResourcePatternType, name string) bool {
	want := *f.ResourceName
	if pt == kmsg.ACLResourcePatternTypeAny || pt == apt {
		return want == name
	}
	// MATCH against a stored pattern.
	switch apt {
	case kmsg.ACLResourcePatternTypeLiteral:
		return want == name || name == Wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(want, name)
	}
	// Kafka throws here; no stored ACL has another pattern type.
	return false
}

// Validate is the check Kafka's controller makes on a DeleteAcls filter
// (AclControlManager.validateFilter): a field Kafka does not know is
// INVALID_REQUEST. DescribeAcls makes no such check: a filter with an
// unknown code there simply selects nothing. (A field with code 0 in
// either request fails Kafka's parsing, which closes the connection.)
func (f Filter) Validate() error {
	if knownResourceType(f.ResourceType) == kmsg.ACLResourceTypeUnknown ||
		knownPatternType(f.PatternType) == kmsg.ACLResourcePatternTypeUnknown {
		return wire.Errorf(kerr.InvalidRequest, "Unknown patternFilter.")
	}
	if knownOperation(f.Operation) == kmsg.ACLOperationUnknown ||
		knownPermission(f.Permission) == kmsg.ACLPermissionTypeUnknown {
		return wire.Errorf(kerr.InvalidRequest, "Unknown entryFilter.")
	}
	return nil
}

// ValidateOptions are the cluster facts creation depends on.
type ValidateOptions struct {
	// CIDRHosts is true when the metadata version is at least
	// CIDRMetadataVersion; before it a host with "/" is
	// UNSUPPORTED_VERSION.
	CIDRHosts bool
}

// ValidateCreation is every check Kafka makes on one ACL of a CreateAcls
// request once the request has been decoded, in Kafka's order, with
// Kafka's error code and message: first the broker API layer (AclApis:
// a CLUSTER resource must be named "kafka-cluster", the name must not be
// empty), then the controller (AclControlManager.validateNewAcl: resource
// type, pattern type, operation and permission must be concrete and
// known, the principal must have a "Type:" part, the host must not be
// empty and a CIDR host must parse). All are INVALID_REQUEST except a
// CIDR host before CIDRMetadataVersion, which is UNSUPPORTED_VERSION.
//
// A creation whose resource type, operation or permission is ANY, or
// whose pattern type is ANY or MATCH, never reaches these checks in
// Kafka: building the binding throws and the whole request fails (see
// CheckCreateRequest); ValidateCreation reports those as INVALID_REQUEST.
func ValidateCreation(a ACL, opts ValidateOptions) error {
	if knownResourceType(a.ResourceType) == kmsg.ACLResourceTypeCluster && a.ResourceName != ClusterName {
		return wire.Errorf(kerr.InvalidRequest, "The only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if a.ResourceName == "" {
		return wire.Errorf(kerr.InvalidRequest, "Invalid empty resource name")
	}
	return validateNewACL(a, opts)
}

// validateNewACL is the controller's part of ValidateCreation.
func validateNewACL(a ACL, opts ValidateOptions) error {
	switch rt := knownResourceType(a.ResourceType); rt {
	case kmsg.ACLResourceTypeUnknown, kmsg.ACLResourceTypeAny:
		return wire.Errorf(kerr.InvalidRequest, "Invalid resourceType %s", rt)
	}
	switch pt := knownPatternType(a.PatternType); pt {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return wire.Errorf(kerr.InvalidRequest, "Invalid patternType %s", pt)
	}
	switch op := knownOperation(a.Operation); op {
	case kmsg.ACLOperationUnknown, kmsg.ACLOperationAny:
		return wire.Errorf(kerr.InvalidRequest, "Invalid operation %s", opName(op))
	}
	switch perm := knownPermission(a.Permission); perm {
	case kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny:
	default:
		return wire.Errorf(kerr.InvalidRequest, "Invalid permissionType %s", perm)
	}
	if a.ResourceName == "" {
		return wire.Errorf(kerr.InvalidRequest, "Resource name should not be empty")
	}
	if !strings.Contains(a.Principal, ":") {
		return wire.Errorf(kerr.InvalidRequest, "Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", a.Principal)
	}
	return validateHost(a.Host, opts)
}

func validateHost(h string, opts ValidateOptions) error {
	if h == "" {
		return wire.Errorf(kerr.InvalidRequest, "Host pattern cannot be null or empty")
	}
	if h == Wildcard || !strings.Contains(h, "/") {
		// Kafka checks nothing else: a host that is no address is
		// accepted and never matches.
		return nil
	}
	if !opts.CIDRHosts {
		return wire.Errorf(kerr.UnsupportedVersion, "CIDR-based ACL host patterns require metadata version %s or higher.", CIDRMetadataVersion)
	}
	if _, err := parseCIDR(h); err != nil {
		return wire.Errorf(kerr.InvalidRequest, "Invalid CIDR notation '%s': %v", h, err)
	}
	return nil
}

// CheckCreateRequest is what happens to a CreateAcls request in Kafka
// before any single ACL is looked at, given the request version and its
// creations with their raw codes.
//
//   - A field with code 0 (UNKNOWN), or a pattern type other than LITERAL
//     in version 0, makes Kafka fail to parse the request: it closes the
//     connection. CheckCreateRequest returns closeConn with an error of
//     code INVALID_REQUEST; the handler should close the connection.
//   - A resource type, operation or permission ANY, or a pattern type ANY
//     or MATCH, makes building the binding throw; every creation of the
//     request then fails with UNKNOWN_SERVER_ERROR.
//
// Codes Kafka does not know (e.g. resource type 99) are not caught here:
// Kafka turns them into UNKNOWN and ValidateCreation rejects that ACL
// alone.
func CheckCreateRequest(version int16, acls []ACL) (closeConn bool, err error) {
	for _, a := range acls {
		if a.PatternType == kmsg.ACLResourcePatternTypeUnknown || a.ResourceType == kmsg.ACLResourceTypeUnknown ||
			a.Permission == kmsg.ACLPermissionTypeUnknown || a.Operation == kmsg.ACLOperationUnknown {
			return true, wire.Errorf(kerr.InvalidRequest, "CreatableAcls contain unknown elements")
		}
		if version == 0 && a.PatternType != kmsg.ACLResourcePatternTypeLiteral {
			return true, wire.Errorf(kerr.UnsupportedVersion, "Version 0 only supports literal resource pattern types")
		}
	}
	for _, a := range acls {
		if msg := bindingError(a); msg != "" {
			return false, wire.Errorf(kerr.UnknownServerError, "%s", msg)
		}
	}
	return false, nil
}

// bindingError is the exception Kafka's ResourcePattern and
// AccessControlEntry constructors throw for a, or "".
func bindingError(a ACL) string {
	switch {
	case knownResourceType(a.ResourceType) == kmsg.ACLResourceTypeAny:
		return "resourceType must not be ANY"
	case knownPatternType(a.PatternType) == kmsg.ACLResourcePatternTypeAny:
		return "patternType must not be ANY"
	case knownPatternType(a.PatternType) == kmsg.ACLResourcePatternTypeMatch:
		return "patternType must not be MATCH"
	case knownOperation(a.Operation) == kmsg.ACLOperationAny:
		return "operation must not be ANY"
	case knownPermission(a.Permission) == kmsg.ACLPermissionTypeAny:
		return "permissionType must not be ANY"
	}
	return ""
}

// The known* functions map a wire code as Kafka's fromCode does: a code
// it has no value for becomes UNKNOWN.

func knownResourceType(v kmsg.ACLResourceType) kmsg.ACLResourceType {
	if v < kmsg.ACLResourceTypeUnknown || v > kmsg.ACLResourceTypeUser {
		return kmsg.ACLResourceTypeUnknown
	}
	return v
}

func knownPatternType(v kmsg.ACLResourcePatternType) kmsg.ACLResourcePatternType {
	if v < kmsg.ACLResourcePatternTypeUnknown || v > kmsg.ACLResourcePatternTypePrefixed {
		return kmsg.ACLResourcePatternTypeUnknown
	}
	return v
}

func knownOperation(v kmsg.ACLOperation) kmsg.ACLOperation {
	if v < kmsg.ACLOperationUnknown || v > OpTwoPhaseCommit {
		return kmsg.ACLOperationUnknown
	}
	return v
}

func knownPermission(v kmsg.ACLPermissionType) kmsg.ACLPermissionType {
	if v < kmsg.ACLPermissionTypeUnknown || v > kmsg.ACLPermissionTypeAllow {
		return kmsg.ACLPermissionTypeUnknown
	}
	return v
}

// HostString is a client address as Kafka writes it
// (InetAddress.getHostAddress), the form an ACL's host must have to match
// it exactly: dotted decimal for IPv4 (an IPv4-mapped IPv6 address is
// IPv4, as Java sees it), and for IPv6 all eight groups in lower-case hex
// without leading zeros and without "::" compression, then "%zone".
// So Kafka never matches an ACL host written "::1": the client is
// "0:0:0:0:0:0:0:1".
func HostString(a netip.Addr) string {
	a = a.Unmap()
	if !a.Is6() {
		return a.String()
	}
	b := a.As16()
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	if z := a.Zone(); z != "" {
		sb.WriteByte('%')
		sb.WriteString(z)
	}
	return sb.String()
}

// hostMatcher is an ACL's host, parsed once when the ACL enters a snapshot.
type hostMatcher struct {
	text     string // the ACL's host; "*" matches all
	cidr     cidr
	haveCIDR bool
}

func newHostMatcher(h string) hostMatcher {
	m := hostMatcher{text: h}
	if h != Wildcard && strings.Contains(h, "/") {
		c, err := parseCIDR(h)
		// An ACL whose CIDR does not parse matches only by text, that is
		// never (Kafka swallows the parse error at every check).
		m.cidr, m.haveCIDR = c, err == nil
	}
	return m
}

// matches is Kafka's host test: "*", the exact text, or (Kafka 4.4) a
// CIDR block that holds the address.
func (m *hostMatcher) matches(addr netip.Addr, text string) bool {
	return m.text == Wildcard || m.text == text || (m.haveCIDR && m.cidr.contains(addr))
}

// cidr is an inclusive address range parsed the way Kafka's CidrUtils
// (commons-net SubnetUtils and SubnetUtils6) parses a host pattern.
type cidr struct {
	v6     bool
	lo, hi [16]byte // IPv4 ranges use the last four bytes
}

var ipv4CIDR = regexp.MustCompile(`^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})/([0-9]{1,2})$`)

// parseCIDR parses "a.b.c.d/n" (no ':' in it) or "ipv6/n". IPv4 wants
// exactly four decimal octets of one to three digits and n of one or two
// digits up to 32. IPv6 splits at the first '/', takes n as a decimal
// integer from 0 to 128 and the address as a Java IPv6 literal (brackets
// allowed): an IPv4 address, an IPv4-mapped IPv6 address (Java makes it
// IPv4) or a zone that is not numeric (Java looks the interface up) is
// not accepted.
func parseCIDR(s string) (cidr, error) {
	if !strings.Contains(s, ":") {
		m := ipv4CIDR.FindStringSubmatch(s)
		if m == nil {
			return cidr{}, fmt.Errorf("Could not parse [%s]", s)
		}
		var addr uint32
		for _, g := range m[1:5] {
			v, _ := strconv.Atoi(g)
			if v > 255 {
				return cidr{}, fmt.Errorf("Value [%d] not in range [0,255]", v)
			}
			addr = addr<<8 | uint32(v)
		}
		bits, _ := strconv.Atoi(m[5])
		if bits > 32 {
			return cidr{}, fmt.Errorf("Value [%d] not in range [0,32]", bits)
		}
		mask := uint32(uint64(0xffffffff) << (32 - bits))
		var c cidr
		lo, hi := addr&mask, addr&mask|^mask
		for i := 0; i < 4; i++ {
			c.lo[12+i], c.hi[12+i] = byte(lo>>(24-8*i)), byte(hi>>(24-8*i))
		}
		return c, nil
	}
	slash := strings.IndexByte(s, '/')
	addrText, bitsText := s[:slash], s[slash+1:]
	bits, err := strconv.Atoi(bitsText)
	if err != nil {
		return cidr{}, fmt.Errorf("Could not parse [%s] - invalid prefix length", s)
	}
	if bits < 0 || bits > 128 {
		return cidr{}, fmt.Errorf("Could not parse [%s] - prefix length must be between 0 and 128", s)
	}
	if len(addrText) > 2 && addrText[0] == '[' && addrText[len(addrText)-1] == ']' {
		addrText = addrText[1 : len(addrText)-1]
	}
	addr, err := netip.ParseAddr(addrText)
	if err != nil || !addr.Is6() || addr.Is4In6() || !numericZone(addr.Zone()) {
		return cidr{}, fmt.Errorf("Could not parse [%s] - not an IPv6 address", s)
	}
	c := cidr{v6: true}
	b := addr.As16()
	for i := 0; i < 16; i++ {
		keep := bits - 8*i // bits of this byte that belong to the network
		var mask byte
		switch {
		case keep >= 8:
			mask = 0xff
		case keep > 0:
			mask = byte(0xff << (8 - keep))
		}
		c.lo[i], c.hi[i] = b[i]&mask, b[i]&mask|^mask
	}
	return c, nil
}

func numericZone(z string) bool {
	for i := 0; i < len(z); i++ {
		if z[i] < '0' || z[i] > '9' {
			return false
		}
	}
	return true
}

// contains is SubnetUtils(6).isInRange with Kafka's inclusive host count:
// the network and broadcast addresses are in range, but the IPv4 address
// 0.0.0.0 never is (commons-net rejects it before comparing).
func (c *cidr) contains(addr netip.Addr) bool {
	addr = addr.Unmap()
	var b [16]byte
	if c.v6 {
		if !addr.Is6() {
			return false
		}
		b = addr.As16()
	} else {
		if !addr.Is4() || addr == netip.IPv4Unspecified() {
			return false
		}
		v4 := addr.As4()
		copy(b[12:], v4[:])
	}
	return string(b[:]) >= string(c.lo[:]) && string(b[:]) <= string(c.hi[:])
}
