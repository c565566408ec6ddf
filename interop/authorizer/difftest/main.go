// Command difftest asks Samsa's authorizer (internal/security) and Apache
// Kafka's StandardAuthorizer (the Java harness beside it) the same
// questions and lists every answer on which they disagree.
//
// Each case is one authorizer configuration (super.users,
// allow.everyone.if.no.acl.found) with a random ACL set, then 8 Authorize
// questions, 2 AuthorizeByResourceType questions, one DescribeAcls filter
// and one CreateAcls validation. Names, principals and hosts come from
// small alphabets so that prefixes, wildcards, "User:*", host wildcards,
// CIDR blocks and DENY/ALLOW pairs collide often. Case i is generated from
// (seed, i) alone, so -case i replays one case.
//
//	go run ./interop/authorizer/difftest -cp "$CLASSPATH" [-seed N] [-cases N]
//
// Exit status: 0 without disagreements, 1 with, 2 when the harness fails.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

func main() {
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (printed; pass it again to replay)")
	cases := flag.Int("cases", 5000, "number of cases (ACL sets)")
	only := flag.Int("case", -1, "run only this case of the seed")
	cp := flag.String("cp", "", "class path of the Java harness (required)")
	results := flag.String("results", "", "append interop matrix rows (client TAB feature TAB status TAB note) here")
	client := flag.String("client", "kafka StandardAuthorizer 4.4.0", "client column for -results")
	flag.Parse()
	if *cp == "" {
		fmt.Fprintln(os.Stderr, "difftest: -cp is required")
		os.Exit(2)
	}
	fmt.Printf("difftest: seed %d, %d cases\n", *seed, *cases)

	var qs []query
	first, last := 0, *cases
	if *only >= 0 {
		first, last = *only, *only+1
	}
	for i := first; i < last; i++ {
		qs = append(qs, genCase(*seed, i)...)
	}
	answers, err := askJava(*cp, qs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "difftest:", err)
		os.Exit(2)
	}

	type tally struct {
		total, bad int
		answers    map[string]int
	}
	byKind := map[string]*tally{}
	var kinds []string
	bad := 0
	for i, q := range qs {
		if q.kind == "" {
			// A set-up line (an ACL) the harness refused is a broken run.
			if answers[i] != q.want {
				fmt.Fprintf(os.Stderr, "difftest: case %d: harness answered %q to %q\n", q.caseNo, answers[i], q.line)
				os.Exit(2)
			}
			continue
		}
		t := byKind[q.kind]
		if t == nil {
			t = &tally{answers: map[string]int{}}
			byKind[q.kind] = t
			kinds = append(kinds, q.kind)
		}
		t.total++
		t.answers[answerClass(q.kind, answers[i])]++
		if answers[i] == q.want {
			continue
		}
		t.bad++
		bad++
		if bad <= 40 {
			fmt.Printf("DISAGREE case %d (-seed %d -case %d) %s\n  kafka: %s\n  samsa: %s\n%s\n",
				q.caseNo, *seed, q.caseNo, q.line, answers[i], q.want, q.context)
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		t := byKind[k]
		fmt.Printf("difftest: %-10s %7d questions, %d disagreements (Kafka's answers: %s)\n", k, t.total, t.bad, histogram(t.answers))
		if *results != "" {
			status, note := "pass", fmt.Sprintf("%d cases, %d questions, seed %d", last-first, t.total, *seed)
			if t.bad > 0 {
				status, note = "fail", fmt.Sprintf("%d of %d questions disagree, seed %d", t.bad, t.total, *seed)
			}
			appendRow(*results, *client, "authorizer: "+k, status, note)
		}
	}
	fmt.Printf("difftest: seed %d, %d cases, %d questions, %d disagreements\n", *seed, last-first, countQuestions(qs), bad)
	if bad > 0 {
		os.Exit(1)
	}
}

// answerClass groups answers for the summary: describe answers by how
// many ACLs they selected.
func answerClass(kind, answer string) string {
	if kind != "describe" {
		return answer
	}
	if answer == "-" {
		return "none"
	}
	if n := strings.Count(answer, " ") + 1; n > 1 {
		return "several"
	}
	return "one"
}

func histogram(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func countQuestions(qs []query) int {
	n := 0
	for _, q := range qs {
		if q.kind != "" {
			n++
		}
	}
	return n
}

func appendRow(path, client, feature, status, note string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "difftest:", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%s\t%s\t%s\n", client, feature, status, note)
}

// query is one line for the harness with Samsa's answer to it; kind is
// empty for set-up lines, whose answer is not compared.
type query struct {
	caseNo  int
	kind    string
	line    string
	want    string
	context string // the case's configuration and ACLs, for a report
}

// askJava runs the harness over every line and returns its answers.
func askJava(cp string, qs []query) ([]string, error) {
	cmd := exec.Command("java", "-XX:+UseSerialGC", "-Xmx512m", "-cp", cp, "io.samsa.interop.authorizer.Harness")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the Java harness: %w", err)
	}
	go func() {
		w := bufio.NewWriterSize(stdin, 1<<16)
		for _, q := range qs {
			w.WriteString(q.line)
			w.WriteByte('\n')
		}
		w.Flush()
		stdin.Close()
	}()
	answers := make([]string, 0, len(qs))
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		answers = append(answers, sc.Text())
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("Java harness: %w", err)
	}
	if len(answers) != len(qs) {
		return nil, fmt.Errorf("Java harness answered %d of %d lines", len(answers), len(qs))
	}
	return answers, nil
}

// The alphabets. Names share prefixes; "hardcode" is the name Kafka's
// authorizeByResourceType probes first; the non-ASCII names sort
// differently in Java (UTF-16) and Go (bytes): U+FF71 is above a
// surrogate pair in UTF-16 and below it in UTF-8.
var (
	names      = []string{"a", "ab", "abc", "abd", "b", "ba", "*", "a*", "*a", "hardcode", "hard", "h", "hardcoded", "kafka-cluster", "é", "éa", "😀", "😀a", "ｱ", "ｱ😀"}
	aclPrincs  = []string{"User:alice", "User:bob", "User:*", "Group:alice", "Group:*", "User:", "User:a:b", "User:ALICE"}
	reqPrincs  = [][2]string{{"User", "alice"}, {"User", "bob"}, {"User", "carol"}, {"Group", "alice"}, {"User", "a:b"}, {"User", ""}, {"User", "ANONYMOUS"}}
	clientIPs  = []string{"10.0.0.1", "10.0.0.2", "10.0.1.7", "0.0.0.0", "192.168.1.1", "::1", "::", "2001:db8::5", "2001:db8:1::1", "fe80::1", "::ffff:10.0.0.1"}
	aclHosts   = []string{"10.0.0.1", "10.0.0.2", "0:0:0:0:0:0:0:1", "::1", "2001:db8:0:0:0:0:0:5", "10.0.0.0/24", "10.0.0.0/8", "0.0.0.0/0", "10.0.0.1/32", "10.0.1.0/24", "10.0.0.0/31", "2001:db8::/32", "2001:db8::/48", "::/0", "::1/128", "fe80::/10", "[2001:db8::]/32", "10.0.0.0/33", "2001:db8::/129", "::ffff:10.0.0.0/104", "010.000.000.001/32", "10.0.0.1/8"}
	superUsers = []string{"", "User:alice", " User:bob ; User:alice;", "User:*", "User:a:b", "Group:alice", ";;", "User:carol;Group:*", "alice"}
	allowEvery = []string{"", "true", "false", " TRUE ", "yes", "True"}
	types      = []kmsg.ACLResourceType{2, 3, 4, 5, 6, 7}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// op is a concrete operation, READ, WRITE and the DESCRIBE pairs more often.
func op(r *rand.Rand) kmsg.ACLOperation {
	if r.IntN(2) == 0 {
		return pick(r, []kmsg.ACLOperation{3, 4, 8, 10, 11, 7, 6})
	}
	return kmsg.ACLOperation(2 + r.IntN(14)) // ALL .. TWO_PHASE_COMMIT
}

// aclHost is "*" two times in five, else a host or CIDR block of the alphabet.
func aclHost(r *rand.Rand) string {
	if r.IntN(5) < 2 {
		return "*"
	}
	return pick(r, aclHosts)
}

// principal is a client's principal; User:* (a user named "*") rarely.
func principal(r *rand.Rand) [2]string {
	if r.IntN(30) == 0 {
		return [2]string{"User", "*"}
	}
	return pick(r, reqPrincs)
}

func name(r *rand.Rand) string {
	if r.IntN(4) == 0 {
		var sb strings.Builder
		for n := 1 + r.IntN(3); n > 0; n-- {
			sb.WriteByte("abh*"[r.IntN(4)])
		}
		return sb.String()
	}
	return pick(r, names)
}

func genCase(seed uint64, caseNo int) []query {
	r := rand.New(rand.NewPCG(seed, uint64(caseNo)))
	var qs []query
	setup := func(line string) { qs = append(qs, query{caseNo: caseNo, line: line}) }

	// Configuration: nil, or a raw property value.
	var su, ae *string
	if r.IntN(2) == 0 {
		su = ptr(pick(r, superUsers))
	}
	if r.IntN(2) == 0 {
		ae = ptr(pick(r, allowEvery))
	}
	setup(join("config", opt(su), opt(ae)))
	cfg := security.Config{}
	cfgErr := ""
	if su != nil {
		users, err := security.ParseSuperUsers(*su)
		if err != nil {
			cfgErr = err.Error()
		}
		cfg.SuperUsers = users
	}
	if ae != nil {
		cfg.AllowEveryoneIfNoACLFound = security.ParseAllowEveryone(*ae)
	}
	if cfgErr != "" {
		// Kafka refuses the configuration too; the case ends here.
		qs[len(qs)-1].kind, qs[len(qs)-1].want = "config", "error IllegalArgumentException"
		return qs
	}
	qs[len(qs)-1].kind, qs[len(qs)-1].want = "config", "ok"

	// A few resource types per case, so ACLs pile up on each.
	rts := []kmsg.ACLResourceType{pick(r, types), pick(r, types)}
	n := r.IntN(13)
	switch r.IntN(50) {
	case 0:
		n = 100 + r.IntN(150) // long walks through the prefixes
	case 1, 2, 3, 4:
		n = 20 + r.IntN(30)
	}
	var acls []security.ACL
	index := map[security.ACL]int{}
	for len(acls) < n {
		a := security.ACL{
			ResourceType: pick(r, rts),
			ResourceName: name(r),
			PatternType:  pick(r, []kmsg.ACLResourcePatternType{3, 4}),
			Principal:    pick(r, aclPrincs),
			Host:         aclHost(r),
			Operation:    op(r),
			Permission:   pick(r, []kmsg.ACLPermissionType{2, 3, 3}), // ALLOW twice as often
		}
		if _, dup := index[a]; dup {
			continue // Kafka's controller keeps one of equal ACLs
		}
		index[a] = len(acls)
		acls = append(acls, a)
		setup(join("acl", code(a.ResourceType), esc(a.ResourceName), code(a.PatternType), esc(a.Principal), esc(a.Host), code(a.Operation), code(a.Permission)))
		qs[len(qs)-1].kind, qs[len(qs)-1].want = "", "ok"
	}
	az, err := security.NewAuthorizer(cfg)
	if err != nil {
		panic(err)
	}
	az.SetACLs(security.NewACLSet(acls))
	context := describeCase(su, ae, acls)

	add := func(kind, line, want string) {
		qs = append(qs, query{caseNo: caseNo, kind: kind, line: line, want: want, context: context})
	}
	verdict := func(ok bool) string {
		if ok {
			return "ALLOWED"
		}
		return "DENIED"
	}
	// Kafka throws for a client named User:* that is not a super user
	// (Set.of(principal, User:*) rejects the duplicate); Samsa denies.
	// Expect exactly that pairing.
	verdictFor := func(p [2]string, ok bool) string {
		if !ok && p == [2]string{"User", "*"} {
			return "error IllegalArgumentException"
		}
		return verdict(ok)
	}
	for range 8 {
		p, host := principal(r), pick(r, clientIPs)
		o, rt, nm := op(r), pick(r, rts), name(r)
		if r.IntN(8) == 0 {
			rt = pick(r, types)
		}
		if len(acls) > 0 && r.IntN(2) == 0 {
			// Aim near an ACL of the set: its resource (or a name it
			// prefixes), often its principal and operation.
			a := pick(r, acls)
			rt, nm = a.ResourceType, a.ResourceName
			if a.PatternType == kmsg.ACLResourcePatternTypePrefixed && r.IntN(2) == 0 {
				nm += name(r)
			}
			if t, n, ok := strings.Cut(a.Principal, ":"); ok && n != "*" && r.IntN(2) == 0 {
				p = [2]string{t, n}
			}
			if r.IntN(2) == 0 {
				o = a.Operation
			}
		}
		ok := az.Authorize(security.Request{Principal: security.Principal{Type: p[0], Name: p[1]},
			Host: netip.MustParseAddr(host), Op: o, ResourceType: rt, Name: nm})
		add("authorize", join("authorize", esc(p[0]), esc(p[1]), host, code(o), code(rt), esc(nm)), verdictFor(p, ok))
	}
	for range 2 {
		p, host := principal(r), pick(r, clientIPs)
		o, rt := op(r), pick(r, rts)
		ok := az.AuthorizeByResourceType(security.Principal{Type: p[0], Name: p[1]}, netip.MustParseAddr(host), o, rt)
		add("bytype", join("bytype", esc(p[0]), esc(p[1]), host, code(o), code(rt)), verdictFor(p, ok))
	}

	f := randomFilter(r, rts, acls)
	var hits []int
	for _, a := range az.Describe(f) {
		hits = append(hits, index[a])
	}
	slices.Sort(hits)
	want := "-"
	if len(hits) > 0 {
		want = strings.Trim(fmt.Sprint(hits), "[]")
	}
	add("describe", join("describe", code(f.ResourceType), opt(f.ResourceName), code(f.PatternType),
		opt(f.Principal), opt(f.Host), code(f.Operation), code(f.Permission)), want)

	cidrOK, v := randomCreation(r)
	add("validate", join("validate", map[bool]string{true: "1", false: "0"}[cidrOK], code(v.ResourceType), esc(v.ResourceName),
		code(v.PatternType), esc(v.Principal), esc(v.Host), code(v.Operation), code(v.Permission)),
		strconv.Itoa(int(validationCode(cidrOK, v))))
	return qs
}

func randomFilter(r *rand.Rand, rts []kmsg.ACLResourceType, acls []security.ACL) security.Filter {
	f := security.Filter{
		ResourceType: pick(r, []kmsg.ACLResourceType{1, 1, rts[0], rts[1], pick(r, types), 0, 99}),
		PatternType:  pick(r, []kmsg.ACLResourcePatternType{1, 2, 2, 3, 4, 0}),
		Operation:    1,
		Permission:   pick(r, []kmsg.ACLPermissionType{1, 1, 2, 3}),
	}
	if r.IntN(3) > 0 {
		f.ResourceName = ptr(name(r))
	}
	if r.IntN(3) == 0 {
		f.Operation = op(r)
	}
	if r.IntN(4) == 0 {
		f.Principal = ptr(pick(r, aclPrincs))
	}
	if r.IntN(4) == 0 {
		f.Host = ptr(pick(r, aclHosts))
	}
	if len(acls) > 0 && r.IntN(2) == 0 {
		// Aim at an ACL of the set so that filters hit: its type, name
		// (or, for MATCH, a name its prefix covers), principal and host.
		a := pick(r, acls)
		if r.IntN(3) > 0 {
			f.ResourceType = a.ResourceType
		}
		if f.ResourceName != nil {
			n := a.ResourceName
			if r.IntN(3) == 0 {
				n += name(r)
			}
			f.ResourceName = &n
		}
		if f.Principal != nil {
			f.Principal = &a.Principal
		}
		if f.Host != nil {
			f.Host = &a.Host
		}
		if f.Operation != 1 {
			f.Operation = a.Operation
		}
	}
	return f
}

// randomCreation is one CreateAcls creation, valid or not in every way
// Kafka checks, and whether the metadata version allows CIDR hosts. Codes
// are never 0: Kafka rejects those while parsing the request, before any
// ACL is validated (CheckCreateRequest covers that in unit tests).
func randomCreation(r *rand.Rand) (bool, security.ACL) {
	a := security.ACL{
		ResourceType: pick(r, types),
		ResourceName: pick(r, []string{"t", "kafka-cluster", "*"}),
		PatternType:  pick(r, []kmsg.ACLResourcePatternType{3, 4}),
		Principal:    pick(r, []string{"User:alice", "User:*"}),
		Host:         "*",
		Operation:    op(r),
		Permission:   pick(r, []kmsg.ACLPermissionType{2, 3}),
	}
	switch r.IntN(8) {
	case 0:
		a.ResourceType = pick(r, []kmsg.ACLResourceType{1, 8, 99, -1})
	case 1:
		a.PatternType = pick(r, []kmsg.ACLResourcePatternType{1, 2, 5, 99, -1})
	case 2:
		a.Operation = pick(r, []kmsg.ACLOperation{1, 16, 99, -1})
	case 3:
		a.Permission = pick(r, []kmsg.ACLPermissionType{1, 4, 99, -1})
	case 4:
		a.ResourceName = pick(r, []string{"", "kafka", "Kafka-cluster"})
	case 5:
		a.Principal = pick(r, []string{"alice", "", ":", "User:", "*"})
	}
	if r.IntN(2) == 0 {
		a.Host = pick(r, []string{"", "*", "10.0.0.1", "::1", "foo", "10.0.0.0/8", "10.0.0.0/0", "10.0.0.0/33", "256.0.0.0/8",
			"1.2.3/8", "10.0.0.0/08", "10.0.0.0/", "/8", "10.0.0.0/8/8", "2001:db8::/32", "::1/128", "2001:db8::/129",
			"::ffff:1.2.3.4/96", "[2001:db8::]/48", "fe80::1%1/64", "2001:db8::/+64", "2001:db8::/-0", "2001:db8::/",
			"2001:db8::/64/1", "1.2.3.4:5/8", "::1.2.3.4/120", "2001:db8:::/32", "1:2:3:4:5:6:7:8:9/64"})
	}
	return r.IntN(4) > 0, a
}

// validationCode is the error code Samsa gives creation a: the request
// fails as a whole for ANY or MATCH values (UNKNOWN_SERVER_ERROR), else
// ValidateCreation decides.
func validationCode(cidrOK bool, a security.ACL) int16 {
	if _, err := security.CheckCreateRequest(1, []security.ACL{a}); err != nil {
		return wire.ErrorCode(err)
	}
	return wire.ErrorCode(security.ValidateCreation(a, security.ValidateOptions{CIDRHosts: cidrOK}))
}

func describeCase(su, ae *string, acls []security.ACL) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "  super.users=%s allow.everyone.if.no.acl.found=%s\n", opt(su), opt(ae))
	for i, a := range acls {
		fmt.Fprintf(&sb, "  acl %d: %s\n", i, a)
	}
	return strings.TrimRight(sb.String(), "\n")
}

type integer interface {
	~int8 | ~int16 | ~int32
}

func code[T integer](v T) string { return strconv.Itoa(int(v)) }

func ptr(s string) *string { return &s }

// opt is a field: the escaped string, or \N for nil.
func opt(s *string) string {
	if s == nil {
		return `\N`
	}
	return esc(*s)
}

var escaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`)

func esc(s string) string { return escaper.Replace(s) }

// join makes a harness line of fields already escaped (esc, opt, code).
func join(cmd string, fields ...string) string {
	return cmd + "\t" + strings.Join(fields, "\t")
}
