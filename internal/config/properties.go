package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// Property is one key/value pair of a .properties file, with the line it
// starts on (1-based) so errors can point at it; 0 for one that is not
// from a file (an override).
type Property struct {
	Key, Value string
	Line       int
}

// SyntaxError is a line of a properties file that cannot be read.
type SyntaxError struct {
	Line int
	Err  error
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *SyntaxError) Unwrap() error { return e.Err }

// ParseProperties parses Java .properties text (java.util.Properties.load
// rules): a logical line continues while a natural line ends in an odd number
// of backslashes; lines whose first non-blank character is '#' or '!' are
// comments (and never continue); the key ends at the first unescaped '=', ':'
// or blank, and one '=' or ':' with surrounding blanks is skipped before the
// value. Escapes \t \n \r \f \uXXXX are decoded and any other escaped
// character stands for itself. Later duplicates win, as in Java, but every
// occurrence is returned in order.
func ParseProperties(text string) ([]Property, error) {
	var props []Property
	lines := splitNatural(text)
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := trimLeftBlank(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines: the trailing backslash goes, and the
		// next line's leading blanks go with it.
		var logical strings.Builder
		for {
			if !endsInContinuation(line) {
				logical.WriteString(line)
				break
			}
			logical.WriteString(line[:len(line)-1])
			if i+1 >= len(lines) {
				break
			}
			i++
			line = trimLeftBlank(lines[i])
		}
		p, err := splitKeyValue(logical.String())
		if err != nil {
			return nil, &SyntaxError{Line: start, Err: err}
		}
		p.Line = start
		props = append(props, p)
	}
	return props, nil
}

// splitNatural splits on \n, \r\n and lone \r, as Java's LineReader does.
func splitNatural(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftBlank(s string) string {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return s[i:]
}

func endsInContinuation(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitKeyValue(s string) (Property, error) {
	// Find the end of the key: first unescaped separator or blank.
	end, valStart := len(s), len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			i++ // skip the escaped character
			continue
		}
		if c == '=' || c == ':' {
			end, valStart = i, i+1
			break
		}
		if isBlank(c) {
			end = i
			j := i
			for j < len(s) && isBlank(s[j]) {
				j++
			}
			if j < len(s) && (s[j] == '=' || s[j] == ':') {
				j++
			}
			valStart = j
			break
		}
	}
	key, err := unescape(s[:end])
	if err != nil {
		return Property{}, err
	}
	val, err := unescape(trimLeftBlank(s[valStart:]))
	if err != nil {
		return Property{}, fmt.Errorf("%s: %w", key, err)
	}
	return Property{Key: key, Value: val}, nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, n, err := decodeU(s[i+1:])
			if err != nil {
				return "", fmt.Errorf("%w in %q", err, s)
			}
			b.WriteRune(r)
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// decodeU decodes the XXXX of a \uXXXX escape, joining a UTF-16 surrogate
// pair written as two escapes, since Java strings are UTF-16. It returns the
// rune and how many bytes after the 'u' it consumed.
func decodeU(s string) (rune, int, error) {
	hex4 := func(s string) (rune, bool) {
		if len(s) < 4 {
			return 0, false
		}
		n, err := strconv.ParseUint(s[:4], 16, 16)
		return rune(n), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0, fmt.Errorf(`malformed \uxxxx escape`)
	}
	if utf16.IsSurrogate(r) && len(s) >= 10 && s[4] == '\\' && s[5] == 'u' {
		if r2, ok := hex4(s[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
				return d, 10, nil
			}
		}
	}
	return r, 4, nil
}
