package security

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// JAAS configuration text, as Kafka's sasl.jaas.config takes it (Kafka's
// JaasConfig, which tokenizes with Java's StreamTokenizer):
//
//	<LoginModuleClass> <ControlFlag> (<OptionName>=<OptionValue>)*;
//
// repeated; the control flag is required, requisite, sufficient or
// optional in any case; an option value is a word or a string in double
// or single quotes with Java's escapes (\n, \t, \\, \", octal \NNN, ...);
// // and /* */ comments are skipped. Unlike StreamTokenizer, a value that
// starts with a digit is taken as a word rather than refused, and a
// quoted string must be closed.

// JAASModule is one login module entry.
type JAASModule struct {
	Class   string
	Flag    string // lower case
	Options map[string]string
}

// ParseJAAS parses JAAS configuration text into its login modules.
func ParseJAAS(text string) ([]JAASModule, error) {
	t := &jaasTokenizer{s: text}
	var mods []JAASModule
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		if tok.kind != tokWord {
			return nil, fmt.Errorf("JAAS config: want a login module class, got %q", tok.text)
		}
		m := JAASModule{Class: tok.text, Options: map[string]string{}}
		flag, err := t.next()
		if err != nil {
			return nil, err
		}
		if flag.kind != tokWord {
			return nil, fmt.Errorf("JAAS config: login module control flag not specified for %s", m.Class)
		}
		switch f := strings.ToLower(flag.text); f {
		case "required", "requisite", "sufficient", "optional":
			m.Flag = f
		default:
			return nil, fmt.Errorf("JAAS config: invalid login module control flag %q", flag.text)
		}
		for {
			key, err := t.next()
			if err != nil {
				return nil, err
			}
			if key.kind == tokSemi {
				break
			}
			if key.kind != tokWord {
				return nil, fmt.Errorf("JAAS config entry of %s not terminated by semi-colon", m.Class)
			}
			eq, err := t.next()
			if err != nil {
				return nil, err
			}
			val, err := t.next()
			if err != nil {
				return nil, err
			}
			if eq.kind != tokEquals || (val.kind != tokWord && val.kind != tokString) {
				return nil, fmt.Errorf("JAAS config: value not specified for key %q", key.text)
			}
			m.Options[key.text] = val.text
		}
		mods = append(mods, m)
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("JAAS config: login module not specified")
	}
	return mods, nil
}

// ParseJAASModule parses a sasl.jaas.config value, which must hold
// exactly one login module (Kafka's JaasContext.load), and checks that it
// is of class.
func ParseJAASModule(text, class string) (JAASModule, error) {
	mods, err := ParseJAAS(text)
	if err != nil {
		return JAASModule{}, err
	}
	if len(mods) != 1 {
		return JAASModule{}, fmt.Errorf("JAAS config contains %d login modules, should be 1 module", len(mods))
	}
	if mods[0].Class != class {
		return JAASModule{}, fmt.Errorf("JAAS config names login module %s, want %s", mods[0].Class, class)
	}
	return mods[0], nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokString
	tokEquals
	tokSemi
)

type jaasToken struct {
	kind tokKind
	text string
}

type jaasTokenizer struct {
	s   string
	pos int
}

func isJAASWordChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '-' || r == '_' || r == '$' || r == '.' || r >= 0xA0
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	if err := t.skipSpaceAndComments(); err != nil {
		return jaasToken{}, err
	}
	if t.pos >= len(t.s) {
		return jaasToken{kind: tokEOF}, nil
	}
	switch c := t.s[t.pos]; {
	case c == '=':
		t.pos++
		return jaasToken{kind: tokEquals, text: "="}, nil
	case c == ';':
		t.pos++
		return jaasToken{kind: tokSemi, text: ";"}, nil
	case c == '"' || c == '\'':
		return t.quoted(c)
	}
	start := t.pos
	for t.pos < len(t.s) {
		r, n := utf8.DecodeRuneInString(t.s[t.pos:])
		if !isJAASWordChar(r) {
			break
		}
		t.pos += n
	}
	if t.pos == start {
		r, _ := utf8.DecodeRuneInString(t.s[t.pos:])
		return jaasToken{}, fmt.Errorf("JAAS config: unexpected character %q at offset %d", r, t.pos)
	}
	return jaasToken{kind: tokWord, text: t.s[start:t.pos]}, nil
}

func (t *jaasTokenizer) skipSpaceAndComments() error {
	for t.pos < len(t.s) {
		switch {
		case t.s[t.pos] <= ' ':
			t.pos++
		case strings.HasPrefix(t.s[t.pos:], "//"):
			end := strings.IndexAny(t.s[t.pos:], "\r\n")
			if end < 0 {
				t.pos = len(t.s)
			} else {
				t.pos += end
			}
		case strings.HasPrefix(t.s[t.pos:], "/*"):
			end := strings.Index(t.s[t.pos+2:], "*/")
			if end < 0 {
				return fmt.Errorf("JAAS config: unterminated /* comment")
			}
			t.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

// quoted reads a string in quote q with Java's StreamTokenizer escapes.
func (t *jaasTokenizer) quoted(q byte) (jaasToken, error) {
	start := t.pos
	t.pos++
	var b strings.Builder
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		switch {
		case c == q:
			t.pos++
			return jaasToken{kind: tokString, text: b.String()}, nil
		case c == '\\' && t.pos+1 < len(t.s):
			t.pos++
			e := t.s[t.pos]
			t.pos++
			switch e {
			case 'a':
				b.WriteByte(7)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case '0', '1', '2', '3', '4', '5', '6', '7':
				// Up to three octal digits, the first at most 3 for three.
				v := int(e - '0')
				maxDigits := 2
				if e > '3' {
					maxDigits = 1
				}
				for i := 0; i < maxDigits && t.pos < len(t.s) && t.s[t.pos] >= '0' && t.s[t.pos] <= '7'; i++ {
					v = v*8 + int(t.s[t.pos]-'0')
					t.pos++
				}
				b.WriteRune(rune(v))
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			t.pos++
		}
	}
	return jaasToken{}, fmt.Errorf("JAAS config: unterminated quoted string starting at offset %d", start)
}
