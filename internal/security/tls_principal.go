package security

import (
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PrincipalMapper turns a client certificate's distinguished name into a
// principal name: Kafka's SslPrincipalMapper, configured by
// ssl.principal.mapping.rules. The rules are tried in order; the first
// that matches names the principal, and a name no rule matches fails the
// connection (Kafka's NoMatchingRule).
//
// Rules are "DEFAULT" (the name is the DN itself) or
// "RULE:pattern/replacement/" with an optional L or U after the last
// slash to lower- or upper-case the result. A rule matches when its
// pattern matches the whole DN; the result is then every match of the
// pattern in the DN replaced, as Java's String.replaceAll does, with
// Java's replacement syntax ($n, ${name}, \ escapes).
//
// One difference from Kafka: patterns are Go regular expressions (RE2).
// They share Java's syntax for everything rules commonly use, but RE2 has
// no look-around, back-references or possessive quantifiers; a rule that
// uses them is refused when the rules are parsed, naming the rule, rather
// than matching differently.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault    bool
	source       string // the pattern as written, for String
	replacement  string // as written, for String
	pattern      *regexp.Regexp
	whole        *regexp.Regexp // pattern anchored at both ends: Java's matches()
	template     []replacePart
	lower, upper bool
}

// replacePart is a piece of a parsed Java replacement: literal text, or a
// group by number (group >= 0) or name.
type replacePart struct {
	literal string
	group   int
	name    string
}

// The rule grammar of Kafka's SslPrincipalMapper: a list of DEFAULT or
// RULE:pattern/replacement/[LU], separated by commas; a backslash escapes
// the next character inside pattern and replacement.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// DefaultPrincipalMappingRules is Kafka's default for
// ssl.principal.mapping.rules: the principal is the DN.
const DefaultPrincipalMappingRules = "DEFAULT"

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules. Every
// error is one Kafka would raise (at start-up or on the first client) or
// one RE2 raises for a pattern it cannot run.
func ParsePrincipalMappingRules(rules string) (*PrincipalMapper, error) {
	var m PrincipalMapper
	for _, sm := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		r, ok, err := parseRule(sm[1])
		if err != nil {
			return nil, err
		}
		if ok {
			m.rules = append(m.rules, r)
		}
	}
	return &m, nil
}

// parseRule parses one rule; ok is false for an empty one, which Kafka
// ignores.
func parseRule(rule string) (mappingRule, bool, error) {
	idx := ruleParser.FindStringSubmatchIndex(rule)
	if idx == nil {
		return mappingRule{}, false, fmt.Errorf("invalid rule: %s", rule)
	}
	if idx[1] != len(rule) {
		return mappingRule{}, false, fmt.Errorf("invalid rule: `%s`, unmatched substring: `%s`", rule, rule[idx[1]:])
	}
	group := func(i int) (string, bool) {
		if idx[2*i] < 0 {
			return "", false
		}
		return rule[idx[2*i]:idx[2*i+1]], true
	}
	if _, ok := group(1); ok {
		return mappingRule{isDefault: true}, true, nil
	}
	pattern, ok := group(2)
	if !ok {
		return mappingRule{}, false, nil // empty: ignored
	}
	replacement, _ := group(4)
	flag, _ := group(6)
	re, err := regexp.Compile(pattern)
	if err != nil {
		return mappingRule{}, false, fmt.Errorf("rule %s: pattern %q: %w (patterns are RE2 regular expressions: no look-around or back-references)", rule, pattern, err)
	}
	whole, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return mappingRule{}, false, fmt.Errorf("rule %s: pattern %q: %w", rule, pattern, err)
	}
	r := mappingRule{source: pattern, replacement: replacement, pattern: re, whole: whole,
		lower: flag == "L", upper: flag == "U"}
	groups := re.NumSubexp()
	r.template, err = parseJavaReplacement(escapeLiteralBackReferences(replacement, groups), re)
	if err != nil {
		return mappingRule{}, false, fmt.Errorf("rule %s: replacement %q: %w", rule, replacement, err)
	}
	return r, true, nil
}

// Name maps a distinguished name (RFC 2253, as DistinguishedName writes
// it) to a principal name.
func (m *PrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if name, ok := r.apply(dn); ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("no rules apply to %s, rules %s", dn, m.rulesString())
}

func (r mappingRule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.whole.MatchString(dn) {
		return "", false
	}
	// String.replaceAll: every non-overlapping match, left to right.
	var b strings.Builder
	last := 0
	for _, loc := range r.pattern.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:loc[0]])
		for _, p := range r.template {
			switch {
			case p.group < 0 && p.name == "":
				b.WriteString(p.literal)
			default:
				g := p.group
				if p.name != "" {
					g = r.pattern.SubexpIndex(p.name)
				}
				if loc[2*g] >= 0 {
					b.WriteString(dn[loc[2*g]:loc[2*g+1]])
				}
			}
		}
		last = loc[1]
	}
	b.WriteString(dn[last:])
	out := b.String()
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upper:
		out = strings.ToUpper(out)
	}
	return out, true
}

// String is Kafka's SslPrincipalMapper.toString.
func (m *PrincipalMapper) String() string {
	return "SslPrincipalMapper(rules = " + m.rulesString() + ")"
}

func (m *PrincipalMapper) rulesString() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (r mappingRule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.source + "/" + r.replacement
	switch {
	case r.lower:
		s += "/L"
	case r.upper:
		s += "/U"
	}
	return s
}

var backReference = regexp.MustCompile(`\$(\d+)`)

// escapeLiteralBackReferences is Kafka's Rule.escapeLiteralBackReferences
// (taken by Kafka from Apache NiFi): a $n naming a group the pattern does
// not have becomes a literal. It is ported as it is, including how it
// indexes the original string after inserting a backslash, so that an
// odd replacement behaves as it does in Kafka.
func escapeLiteralBackReferences(unescaped string, groups int) string {
	if groups == 0 {
		return unescaped
	}
	value := unescaped
	for _, loc := range backReference.FindAllStringSubmatchIndex(unescaped, -1) {
		num := unescaped[loc[2]:loc[3]]
		if strings.HasPrefix(num, "0") {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil {
			n = int(^uint(0) >> 1) // more digits than an int: no such group
		}
		for n > groups && n >= 10 {
			n /= 10
		}
		if n > groups {
			start := loc[2]
			if start-1 > len(value) {
				continue
			}
			value = value[:start-1] + `\` + value[start-1:]
		}
	}
	return value
}

// parseJavaReplacement parses a replacement as Java's
// Matcher.appendReplacement reads it: \c is the character c, $n is group
// n (further digits are taken while the number stays a group of the
// pattern), ${name} is a named group.
func parseJavaReplacement(s string, re *regexp.Regexp) ([]replacePart, error) {
	var parts []replacePart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, replacePart{literal: lit.String(), group: -1})
			lit.Reset()
		}
	}
	groups := re.NumSubexp()
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			i++
			if i >= len(s) {
				return nil, errors.New("character to be escaped is missing")
			}
			lit.WriteByte(s[i])
		case '$':
			i++
			if i >= len(s) {
				return nil, errors.New("illegal group reference: group index is missing")
			}
			if s[i] == '{' {
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					return nil, errors.New("named capturing group is missing trailing '}'")
				}
				name := s[i+1 : i+end]
				if name == "" || re.SubexpIndex(name) < 0 {
					return nil, fmt.Errorf("no group with name {%s}", name)
				}
				flush()
				parts = append(parts, replacePart{name: name, group: -1})
				i += end
				continue
			}
			if s[i] < '0' || s[i] > '9' {
				return nil, errors.New("illegal group reference")
			}
			n := int(s[i] - '0')
			for i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
				next := n*10 + int(s[i+1]-'0')
				if next > groups {
					break
				}
				n = next
				i++
			}
			if n > groups {
				return nil, fmt.Errorf("no group %d", n)
			}
			flush()
			parts = append(parts, replacePart{group: n})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return parts, nil
}

// PrincipalFromCertificate is the principal of a client that presented
// cert: User: and the mapped name of its subject. Without a certificate
// the principal is User:ANONYMOUS, as in Kafka.
func (m *PrincipalMapper) PrincipalFromCertificate(cert *x509.Certificate) (Principal, error) {
	if cert == nil {
		return Anonymous, nil
	}
	dn, err := DistinguishedName(cert.RawSubject)
	if err != nil {
		return Principal{}, fmt.Errorf("client certificate subject: %w", err)
	}
	name, err := m.Name(dn)
	if err != nil {
		return Principal{}, fmt.Errorf("failed to map name for '%s' based on SSL principal mapping rules: %w", dn, err)
	}
	return User(name), nil
}
