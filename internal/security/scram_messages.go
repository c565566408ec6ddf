package security

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The client's SCRAM messages (RFC 5802 section 7), as Kafka's
// ScramMessages reads them:
//
//	client-first = gs2-header client-first-bare
//	gs2-header   = "n," [ "a=" saslname ] ","
//	client-first-bare = "n=" saslname ",r=" c-nonce *("," ext-name "=" value)
//	client-final = "c=" base64(gs2-header) ",r=" nonce *("," ext) ",p=" base64(proof)
//
// Only the gs2 flag "n" is accepted: Kafka does not do channel binding
// (and refuses "y" and "p=" as malformed). A mandatory extension
// ("m=...") is refused as RFC 5802 requires. saslname escapes "," and "="
// as =2C and =3D; unlike Kafka's ASCII-only pattern any UTF-8 but NUL is
// accepted in names.

// ScramClientFirst is a parsed client-first-message.
type ScramClientFirst struct {
	GS2Header  string // "n,," or "n,a=<authzid>,"
	AuthzID    string // decoded
	User       string // decoded
	Nonce      string
	Extensions map[string]string
	Bare       string // client-first-message-bare, as received
}

// ParseScramClientFirst parses a client-first-message.
func ParseScramClientFirst(msg []byte) (*ScramClientFirst, error) {
	s := string(msg)
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return nil, fmt.Errorf("invalid SCRAM client first message: not UTF-8 without NUL")
	}
	rest, ok := strings.CutPrefix(s, "n,")
	if !ok {
		return nil, fmt.Errorf("invalid SCRAM client first message: gs2 flag is not \"n\" (channel binding is not supported)")
	}
	m := &ScramClientFirst{Extensions: map[string]string{}}
	if a, ok := strings.CutPrefix(rest, "a="); ok {
		i := strings.IndexByte(a, ',')
		if i < 0 {
			return nil, fmt.Errorf("invalid SCRAM client first message: truncated gs2 header")
		}
		id, err := decodeSaslName(a[:i])
		if err != nil {
			return nil, err
		}
		m.AuthzID, rest = id, a[i:]
	}
	bare, ok := strings.CutPrefix(rest, ",")
	if !ok {
		return nil, fmt.Errorf("invalid SCRAM client first message: malformed gs2 header")
	}
	m.GS2Header = s[:len(s)-len(bare)]
	m.Bare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		if strings.HasPrefix(bare, "m=") {
			return nil, fmt.Errorf("invalid SCRAM client first message: mandatory extension not supported")
		}
		return nil, fmt.Errorf("invalid SCRAM client first message: want n=<user>,r=<nonce>")
	}
	user, err := decodeSaslName(attrs[0][2:])
	if err != nil {
		return nil, err
	}
	if user == "" {
		return nil, fmt.Errorf("invalid SCRAM client first message: empty user name")
	}
	m.User = user
	m.Nonce = attrs[1][2:]
	if !printableNonce(m.Nonce) {
		return nil, fmt.Errorf("invalid SCRAM client first message: nonce must be printable ASCII without ','")
	}
	if err := parseExtensions(attrs[2:], m.Extensions); err != nil {
		return nil, fmt.Errorf("invalid SCRAM client first message: %w", err)
	}
	return m, nil
}

// ScramClientFinal is a parsed client-final-message.
type ScramClientFinal struct {
	ChannelBinding []byte
	Nonce          string
	Proof          []byte
	// WithoutProof is client-final-message-without-proof, as received.
	WithoutProof string
}

// ParseScramClientFinal parses a client-final-message.
func ParseScramClientFinal(msg []byte) (*ScramClientFinal, error) {
	s := string(msg)
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return nil, fmt.Errorf("invalid SCRAM client final message: not UTF-8 without NUL")
	}
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return nil, fmt.Errorf("invalid SCRAM client final message: no proof")
	}
	m := &ScramClientFinal{WithoutProof: s[:i]}
	var err error
	if m.Proof, err = base64.StdEncoding.Strict().DecodeString(s[i+3:]); err != nil || len(m.Proof) == 0 {
		return nil, fmt.Errorf("invalid SCRAM client final message: proof is not base64")
	}
	attrs := strings.Split(m.WithoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("invalid SCRAM client final message: want c=<binding>,r=<nonce>")
	}
	if m.ChannelBinding, err = base64.StdEncoding.Strict().DecodeString(attrs[0][2:]); err != nil {
		return nil, fmt.Errorf("invalid SCRAM client final message: channel binding is not base64")
	}
	m.Nonce = attrs[1][2:]
	if !printableNonce(m.Nonce) {
		return nil, fmt.Errorf("invalid SCRAM client final message: nonce must be printable ASCII without ','")
	}
	if err := parseExtensions(attrs[2:], map[string]string{}); err != nil {
		return nil, fmt.Errorf("invalid SCRAM client final message: %w", err)
	}
	return m, nil
}

// decodeSaslName undoes the =2C and =3D escapes; any other "=" is an
// error.
func decodeSaslName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("invalid SCRAM saslname: '=' not followed by 2C or 3D")
		}
		i += 2
	}
	return b.String(), nil
}

// encodeSaslName escapes "," and "=" for a saslname.
func encodeSaslName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

func printableNonce(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// parseExtensions reads attr=value pairs with alphabetic names into m.
func parseExtensions(attrs []string, m map[string]string) error {
	for _, a := range attrs {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" || v == "" {
			return fmt.Errorf("malformed extension %q", a)
		}
		for i := 0; i < len(k); i++ {
			if c := k[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return fmt.Errorf("malformed extension name %q", k)
			}
		}
		m[k] = v
	}
	return nil
}
