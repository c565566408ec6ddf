package security

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer decides whether a principal may do an operation on a
// resource, with the semantics of Kafka's StandardAuthorizer (KRaft):
//
//   - A super user (super.users) may do anything.
//   - The ACLs that apply to a resource are the LITERAL ACLs of its exact
//     name, the LITERAL ACLs named "*" (except for a name that starts
//     with '*', see wildcardApplies), and the PREFIXED ACLs whose name
//     starts the resource's name, all of the resource's type.
//   - Of those, an ACL matches the request when its principal is the
//     client's or "User:*", its host is the client's address, "*" or a
//     CIDR block holding the address, and its operation is the request's
//     or ALL. An ALLOW ACL also grants what its operation implies:
//     DESCRIBE by READ, WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS by
//     ALTER_CONFIGS. A DENY ACL implies nothing.
//   - A matching DENY wins over any ALLOW. Without a matching ACL the
//     answer is no — unless no ACL at all applies to the resource (for any
//     principal, host, operation or permission), in which case it is
//     allow.everyone.if.no.acl.found.
//
// The ACLs live in an immutable ACLSet; SetACLs swaps it atomically, so
// Authorize never blocks and always sees one whole snapshot. An
// Authorizer is safe for concurrent use.
type Authorizer struct {
	superUsers   map[string]struct{}
	defaultAllow bool
	acls         atomic.Pointer[ACLSet]
	// loaded is set once an ACLPublisher has given it the ACLs of a
	// first metadata image.
	loaded atomic.Bool
}

// Config is the authorizer's static configuration.
type Config struct {
	// SuperUsers are the principals ("User:admin") allowed everything,
	// as ParseSuperUsers reads super.users.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found
	// (default false): the answer for a resource no ACL applies to.
	AllowEveryoneIfNoACLFound bool
}

// Validate checks that every super user is a "Type:Name" principal.
func (c Config) Validate() error {
	for _, s := range c.SuperUsers {
		if !strings.Contains(s, ":") {
			return fmt.Errorf("invalid principal %q in super.users: want Type:Name, e.g. User:admin", s)
		}
	}
	return nil
}

// ParseSuperUsers reads super.users as Kafka does: principals separated by
// ';', each trimmed of spaces and control characters (Java's trim), empty
// entries skipped, each required to have a "Type:" part.
func ParseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ";") {
		p := trimJava(part)
		if p == "" {
			continue
		}
		if !strings.Contains(p, ":") {
			return nil, fmt.Errorf("invalid value %q for super.users: %q is not a principal of the form Type:Name (e.g. User:admin)", s, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseAllowEveryone reads allow.everyone.if.no.acl.found as Kafka does
// (Boolean.parseBoolean of the trimmed value): "true" in any case is true,
// anything else is false.
func ParseAllowEveryone(s string) bool { return strings.EqualFold(trimJava(s), "true") }

// trimJava is Java's String.trim: it drops bytes up to ' ' at both ends.
func trimJava(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// NewAuthorizer returns an authorizer with cfg and no ACLs.
func NewAuthorizer(cfg Config) (*Authorizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Authorizer{superUsers: map[string]struct{}{}, defaultAllow: cfg.AllowEveryoneIfNoACLFound}
	for _, s := range cfg.SuperUsers {
		a.superUsers[s] = struct{}{}
	}
	a.acls.Store(NewACLSet(nil))
	return a, nil
}

// SetACLs makes s the ACLs every later decision sees.
func (a *Authorizer) SetACLs(s *ACLSet) { a.acls.Store(s) }

// ACLs is the current snapshot.
func (a *Authorizer) ACLs() *ACLSet { return a.acls.Load() }

// Loaded reports whether an ACLPublisher has given the authorizer the
// ACLs of a metadata image. Until then the node does not know its ACLs:
// Kafka's StandardAuthorizer is "not ready" and refuses everyone but
// super users, and the broker does the same (Authorize itself answers
// from whatever set it holds).
func (a *Authorizer) Loaded() bool { return a.loaded.Load() }

// Request is one authorization question: may Principal, connected from
// Host, do Op on the resource (ResourceType, Name)? ResourceType is a
// concrete type, never ANY.
type Request struct {
	Principal    Principal
	Host         netip.Addr
	Op           kmsg.ACLOperation
	ResourceType kmsg.ACLResourceType
	Name         string
}

// Authorize answers r.
//
// A client whose principal is User:* itself (a user named "*") is denied
// unless it is a super user: Kafka's authorizer fails every request of
// such a client with an IllegalArgumentException (it builds the set
// {principal, User:*} with Set.of, which rejects the duplicate), so no
// answer of Kafka's can be followed and refusing is the safe one.
func (a *Authorizer) Authorize(r Request) bool {
	if a.isSuperUser(r.Principal) {
		return true
	}
	if r.Principal == wildcardUser {
		return false
	}
	return a.ACLs().decide(&r, a.defaultAllow)
}

var wildcardUser = Principal{Type: UserType, Name: Wildcard}

// IsSuperUser reports whether p is in super.users.
func (a *Authorizer) IsSuperUser(p Principal) bool { return a.isSuperUser(p) }

func (a *Authorizer) isSuperUser(p Principal) bool {
	if len(a.superUsers) == 0 {
		return false
	}
	_, ok := a.superUsers[p.String()]
	return ok
}

// byTypeProbe is the resource name Kafka's authorizeByResourceType first
// authorizes, so that super users (and allow.everyone.if.no.acl.found,
// and ACLs that happen to cover this name) pass at once.
const byTypeProbe = "hardcode"

// AuthorizeByResourceType reports whether principal p from host may do op
// on at least one resource of type rt — how Kafka asks "may this client
// write to some topic?" (IDEMPOTENT_WRITE via WRITE on any topic,
// CreateTopics, transactional ids). It is Kafka's default
// Authorizer.authorizeByResourceType, which StandardAuthorizer does not
// override:
//
//  1. Authorize op on the resource named "hardcode"; if allowed, yes.
//  2. Otherwise look at the ACLs of type rt whose principal, host and
//     operation match — the operation exactly or ALL, without
//     implications. A DENY of LITERAL "*" is a no. An ALLOW of LITERAL
//     "*" is a yes. Otherwise yes when some ALLOWed name is not covered
//     by a DENY: a LITERAL name is covered by a DENY of the same LITERAL
//     name or by a DENY PREFIXED by one of its prefixes; a PREFIXED name
//     only by a DENY PREFIXED by one of its prefixes.
//
// op and rt must be concrete; Kafka throws for ANY or UNKNOWN, this
// answers no.
func (a *Authorizer) AuthorizeByResourceType(p Principal, host netip.Addr, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if k := knownResourceType(rt); k == kmsg.ACLResourceTypeAny || k == kmsg.ACLResourceTypeUnknown {
		return false
	}
	if k := knownOperation(op); k == kmsg.ACLOperationAny || k == kmsg.ACLOperationUnknown {
		return false
	}
	if a.Authorize(Request{Principal: p, Host: host, Op: op, ResourceType: rt, Name: byTypeProbe}) {
		return true
	}
	if p == wildcardUser {
		return false // Kafka's authorize above throws for this client; see Authorize
	}
	ix := a.ACLs().index(rt)
	if ix == nil {
		return false
	}
	c := client{p: p, addr: host}
	var allowLiteral, allowPrefixed []string
	denyLiteral, denyPrefixed := map[string]bool{}, map[string]bool{}
	wildcardAllow := false
	for i := range ix.all {
		e := &ix.all[i]
		// Kafka compares the principal here as parsed-equal or the string
		// "User:*"; for principals with a ':' that is principalMatches.
		if !e.hostMatches(&c) || !e.principalMatches(&c) {
			continue
		}
		if e.op != op && e.op != kmsg.ACLOperationAll {
			continue
		}
		switch {
		case e.perm == kmsg.ACLPermissionTypeDeny && e.literal:
			if e.name == Wildcard {
				return false
			}
			denyLiteral[e.name] = true
		case e.perm == kmsg.ACLPermissionTypeDeny:
			denyPrefixed[e.name] = true
		case e.perm != kmsg.ACLPermissionTypeAllow:
		case e.literal && e.name == Wildcard:
			wildcardAllow = true
		case e.literal:
			allowLiteral = append(allowLiteral, e.name)
		default:
			allowPrefixed = append(allowPrefixed, e.name)
		}
	}
	if wildcardAllow {
		return true
	}
	coveredByPrefix := func(name string) bool {
		for n := 1; n <= len(name); n++ {
			if denyPrefixed[name[:n]] {
				return true
			}
		}
		return false
	}
	for _, n := range allowLiteral {
		if !denyLiteral[n] && !coveredByPrefix(n) {
			return true
		}
	}
	for _, n := range allowPrefixed {
		if !coveredByPrefix(n) {
			return true
		}
	}
	return false
}

// Describe returns the ACLs f selects, in Kafka's order (by resource
// type, then resource name descending, pattern type, operation,
// principal, host, permission).
func (a *Authorizer) Describe(f Filter) []ACL { return a.ACLs().Describe(f) }

// ACLSet is an immutable snapshot of the cluster's ACLs, indexed for
// Authorize: per resource type, a map of LITERAL names, the LITERAL "*"
// ACLs, and the PREFIXED names in a sorted slice that a resource name's
// prefixes are found in by a few binary searches (Kafka walks a sorted
// set the same way). Build a new one with NewACLSet or Update; never
// change one that an Authorizer may be using.
type ACLSet struct {
	acls  []ACL // unique, in Kafka's order
	types [kmsg.ACLResourceTypeUser + 1]*typeIndex
}

type typeIndex struct {
	literal  map[string][]entry // LITERAL ACLs by name, "*" excluded
	wildcard []entry            // LITERAL "*"
	prefixes []string           // distinct PREFIXED names, ascending
	prefixed [][]entry          // the ACLs of prefixes[i]
	all      []entry            // every ACL of the type
}

// entry is an ACL prepared for matching.
type entry struct {
	name    string
	literal bool
	// principal split at its first ':' as Kafka's StandardAcl does; pOK is
	// false when there is no ':' (Kafka fails the request there;
	// creation rejects such ACLs, so none should exist).
	pType, pName string
	pOK          bool
	host         hostMatcher
	op           kmsg.ACLOperation
	perm         kmsg.ACLPermissionType
}

// NewACLSet is a snapshot of acls; duplicates count once.
func NewACLSet(acls []ACL) *ACLSet {
	all := slices.Clone(acls)
	slices.SortFunc(all, compareKafka)
	all = slices.Compact(all)
	s := &ACLSet{acls: all}
	for _, a := range all {
		rt := knownResourceType(a.ResourceType)
		ix := s.types[rt]
		if ix == nil {
			ix = &typeIndex{literal: map[string][]entry{}}
			s.types[rt] = ix
		}
		e := newEntry(a)
		ix.all = append(ix.all, e)
		switch {
		case !e.literal:
			i, found := slices.BinarySearch(ix.prefixes, e.name)
			if !found {
				ix.prefixes = slices.Insert(ix.prefixes, i, e.name)
				ix.prefixed = slices.Insert(ix.prefixed, i, nil)
			}
			ix.prefixed[i] = append(ix.prefixed[i], e)
		case e.name == Wildcard:
			ix.wildcard = append(ix.wildcard, e)
		default:
			ix.literal[e.name] = append(ix.literal[e.name], e)
		}
	}
	return s
}

func newEntry(a ACL) entry {
	e := entry{
		name: a.ResourceName,
		// Kafka stores only LITERAL and PREFIXED; its lookup treats any
		// other pattern type as a prefix, and so does this.
		literal: knownPatternType(a.PatternType) == kmsg.ACLResourcePatternTypeLiteral,
		host:    newHostMatcher(a.Host),
		op:      knownOperation(a.Operation),
		perm:    knownPermission(a.Permission),
	}
	e.pType, e.pName, e.pOK = strings.Cut(a.Principal, ":")
	return e
}

// Update returns a new snapshot: s without remove, plus add. s is
// unchanged. ACLs in remove that s does not hold are ignored.
func (s *ACLSet) Update(add, remove []ACL) *ACLSet {
	gone := make(map[ACL]bool, len(remove))
	for _, a := range remove {
		gone[a] = true
	}
	next := make([]ACL, 0, len(s.acls)+len(add))
	for _, a := range s.acls {
		if !gone[a] {
			next = append(next, a)
		}
	}
	return NewACLSet(append(next, add...))
}

// Len is the number of ACLs.
func (s *ACLSet) Len() int { return len(s.acls) }

// All returns every ACL in Kafka's order.
func (s *ACLSet) All() []ACL { return slices.Clone(s.acls) }

// Describe returns the ACLs f selects, in Kafka's order.
func (s *ACLSet) Describe(f Filter) []ACL {
	var out []ACL
	for _, a := range s.acls {
		if f.Matches(a) {
			out = append(out, a)
		}
	}
	return out
}

func (s *ACLSet) index(rt kmsg.ACLResourceType) *typeIndex {
	if rt < 0 || int(rt) >= len(s.types) {
		return nil
	}
	return s.types[rt]
}

// client is the requester as entries match it; its host text is computed
// only when an entry names an exact host.
type client struct {
	p        Principal
	addr     netip.Addr
	hostText string
	haveText bool
}

func (c *client) host() string {
	if !c.haveText {
		c.hostText, c.haveText = HostString(c.addr), true
	}
	return c.hostText
}

func (e *entry) hostMatches(c *client) bool {
	if e.host.text == Wildcard {
		return true
	}
	return e.host.matches(c.addr, c.host())
}

// principalMatches is StandardAuthorizer's test: the ACL's principal is
// the client's or User:*.
func (e *entry) principalMatches(c *client) bool {
	if !e.pOK {
		return false
	}
	return (e.pType == c.p.Type && e.pName == c.p.Name) || (e.pType == UserType && e.pName == Wildcard)
}

// verdict is the result of one ACL for a request (Kafka's findResult).
type verdict int8

const (
	noMatch verdict = iota
	allowed
	denied
)

func (e *entry) verdict(op kmsg.ACLOperation, c *client) verdict {
	if !e.principalMatches(c) || !e.hostMatches(c) {
		return noMatch
	}
	allow := e.perm == kmsg.ACLPermissionTypeAllow
	if e.op != kmsg.ACLOperationAll && e.op != op && !(allow && implies(e.op, op)) {
		return noMatch
	}
	if allow {
		return allowed
	}
	// Kafka treats any permission other than ALLOW as DENY here.
	return denied
}

// implies reports whether an ALLOW of have also allows want.
func implies(have, want kmsg.ACLOperation) bool {
	switch want {
	case kmsg.ACLOperationDescribe:
		switch have {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return have == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// evaluation gathers the verdicts of the ACLs that apply to a resource.
type evaluation struct {
	op           kmsg.ACLOperation
	c            client
	found, allow bool // found: some ACL applies to the resource at all
	deny         bool
}

// check evaluates es and reports whether a DENY was found.
func (ev *evaluation) check(es []entry) bool {
	if len(es) > 0 {
		ev.found = true
	}
	for i := range es {
		switch es[i].verdict(ev.op, &ev.c) {
		case denied:
			ev.deny = true
			return true
		case allowed:
			ev.allow = true
		}
	}
	return false
}

func (s *ACLSet) decide(r *Request, defaultAllow bool) bool {
	ix := s.index(r.ResourceType)
	if ix == nil {
		return defaultAllow
	}
	ev := evaluation{op: r.Op, c: client{p: r.Principal, addr: r.Host}}
	if ev.check(ix.literal[r.Name]) || ix.eachPrefixOf(r.Name, ev.check) ||
		(wildcardApplies(r.Name) && ev.check(ix.wildcard)) {
		return false
	}
	switch {
	case ev.allow:
		return true
	case ev.found:
		return false
	}
	return defaultAllow
}

// wildcardApplies reports whether the LITERAL "*" ACLs apply to a
// resource called name. They do to every name except those that start
// with '*' and are longer than "*": Kafka's lookup walk
// (StandardAuthorizerData.checkSection) sees that "*" is a prefix of such
// a name, takes the LITERAL ACL for a non-matching literal and skips it,
// and its wildcard exception is only reached for ACL names that are not a
// prefix. Topic names cannot contain '*', but group names, transactional
// ids and user names can: for a group "*x", a LITERAL "*" ACL — ALLOW or
// DENY — does not count, in Kafka and here.
func wildcardApplies(name string) bool {
	return name == Wildcard || !strings.HasPrefix(name, Wildcard)
}

// eachPrefixOf calls fn with the ACLs of every PREFIXED name that is a
// prefix of name (name itself included), longest first, until fn returns
// true; it reports whether fn did.
//
// hi is always a prefix of name, and no name in prefixes between hi and
// name is a prefix of name still unvisited. The largest candidate n <= hi
// either is a prefix of name (visit it; the next can only be shorter, so
// hi becomes name[:len(n)-1]) or shares k < len(hi) bytes with name, in
// which case nothing longer than name[:k] can be a prefix left, so hi
// becomes name[:k]. hi shrinks every round: at most len(name)+1 binary
// searches.
func (ix *typeIndex) eachPrefixOf(name string, fn func([]entry) bool) bool {
	hi := name
	for {
		i := sort.SearchStrings(ix.prefixes, hi)
		if i == len(ix.prefixes) || ix.prefixes[i] != hi {
			i-- // the largest name below hi
		}
		if i < 0 {
			return false
		}
		n := ix.prefixes[i]
		k := commonPrefixLen(n, name)
		if k == len(n) {
			if fn(ix.prefixed[i]) {
				return true
			}
			if k == 0 {
				return false
			}
			hi = name[:k-1]
			continue
		}
		hi = name[:k]
	}
}

func commonPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// compareKafka orders ACLs as Kafka's StandardAcl.compareTo: resource
// type, then resource name descending, then pattern type, operation,
// principal, host and permission ascending.
func compareKafka(a, b ACL) int {
	if c := cmp.Compare(a.ResourceType, b.ResourceType); c != 0 {
		return c
	}
	if c := strings.Compare(b.ResourceName, a.ResourceName); c != 0 {
		return c
	}
	if c := cmp.Compare(a.PatternType, b.PatternType); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Operation, b.Operation); c != 0 {
		return c
	}
	if c := strings.Compare(a.Principal, b.Principal); c != 0 {
		return c
	}
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	return cmp.Compare(a.Permission, b.Permission)
}
