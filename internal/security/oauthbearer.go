package security

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The server side of SASL/OAUTHBEARER (RFC 7628), as Kafka's
// OAuthBearerSaslServer runs it. ^A is the byte 0x01:
//
//	client: n,[a=<authzid>],^Aauth=Bearer <token>^A[<key>=<value>^A]*^A
//	server: (empty)                        the token is valid: done
//	server: {"status":"invalid_token"}     the token is refused; RFC 7628
//	client: ^A                             makes the client acknowledge,
//	server: fails the exchange             with the JSON as the message
//
// A client may also answer the JSON with a new first message instead of
// ^A, which starts over (Kafka allows it). Whether a token is valid is the
// validator's decision (OAuthBearerValidator): the unsecured one for
// development (oauthbearer_unsecured.go) or the JWKS one
// (oauthbearer_jwt.go). The client is told only the RFC's status and, for
// a missing scope, the scope required; why a token was refused goes to the
// broker's log. The token's expiry bounds the session (ExpiringCredential).
//
// Extensions (key=value pairs after auth) are parsed and checked for
// form; both of Kafka's validators accept any of them, and so does
// Samsa, which does not use them.

// OAuthBearerLoginModule is the JAAS login module class of
// SASL/OAUTHBEARER; its options configure the unsecured validator.
const OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

// OAuthBearerToken is a token a validator accepted.
type OAuthBearerToken struct {
	// Value is the token as the client sent it.
	Value string
	// Principal is the principal's name, from the subject claim.
	Principal string
	// Scope is the token's scope, each item trimmed.
	Scope []string
	// Expiry is when the token expires (its exp claim); IssuedAt its
	// iat claim, zero when the token has none.
	Expiry, IssuedAt time.Time
}

// OAuthBearerValidator decides whether a token is valid (Kafka's server
// callback handler answering an OAuthBearerValidatorCallback). It is
// called concurrently by every connection authenticating.
type OAuthBearerValidator interface {
	// Validate returns the accepted token, or a *TokenError.
	Validate(token string) (OAuthBearerToken, error)
}

// TokenError refuses a token. Status and Scope are what the client is
// told (RFC 7628 section 3.2.2); Reason is for the broker's log only.
type TokenError struct {
	// Status is "invalid_token", or "insufficient_scope" with Scope the
	// scope that was required.
	Status, Scope string
	Reason        string
}

func (e *TokenError) Error() string { return e.Reason }

func invalidToken(format string, args ...any) *TokenError {
	return &TokenError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// json is the server's answer to the refused token, formatted exactly as
// Kafka's OAuthBearerSaslServer formats it.
func (e *TokenError) json() string {
	s := `{"status":` + strconv.Quote(e.Status)
	if e.Scope != "" {
		s += `, "scope":` + strconv.Quote(e.Scope)
	}
	return s + "}"
}

// ExpiringCredential is a SASLServer whose credential expires: the
// session it authenticates ends then at the latest (Kafka's
// CREDENTIAL_LIFETIME_MS negotiated property, KIP-368).
type ExpiringCredential interface {
	// CredentialExpiry is when the credential expires, once Step
	// reported done; zero when it does not.
	CredentialExpiry() time.Time
}

// OAuthBearerClientFirst is an OAUTHBEARER client's first message.
type OAuthBearerClientFirst struct {
	// AuthzID is the authorization id, as sent (Kafka does not decode
	// =2C and =3D in it either), "" when absent.
	AuthzID string
	// Token is the bearer token of the auth pair.
	Token string
	// Extensions are the other key=value pairs.
	Extensions map[string]string
}

// ParseOAuthBearerClientFirst parses an OAUTHBEARER client's first
// message with the grammar of Kafka's OAuthBearerClientInitialResponse:
//
//	n,[a=<saslname>],^A(<key>=<value>^A)*^A
//	key   = [A-Za-z]+
//	value = [\x21-\x7E \t\r\n]+
//	auth  = <scheme> SP+ <token>, scheme "Bearer" in any case,
//	        token [-_~+/.A-Za-z0-9]+ =*
//
// A key given twice keeps its last value, as in Kafka.
func ParseOAuthBearerClientFirst(msg []byte) (OAuthBearerClientFirst, error) {
	var m OAuthBearerClientFirst
	invalid := errors.New("Invalid OAUTHBEARER client first message")
	rest, ok := strings.CutPrefix(string(msg), "n,")
	if !ok {
		return m, invalid
	}
	authz, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return m, invalid
	}
	if authz != "" {
		name, ok := strings.CutPrefix(authz, "a=")
		if !ok || !isSaslName(name) {
			return m, invalid
		}
		m.AuthzID = name
	}
	// ^A, then pairs each ending in ^A, then ^A.
	if len(rest) < 2 || rest[0] != 0x01 || rest[len(rest)-1] != 0x01 {
		return m, invalid
	}
	pairs := map[string]string{}
	for body := rest[1 : len(rest)-1]; body != ""; {
		pair, tail, ok := strings.Cut(body, "\x01")
		if !ok {
			return m, invalid
		}
		key, value, ok := strings.Cut(pair, "=")
		if !ok || !isExtensionKey(key) || !isExtensionValue(value) {
			return m, invalid
		}
		pairs[key] = value
		body = tail
	}
	auth, ok := pairs["auth"]
	if !ok {
		return m, fmt.Errorf("Invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	delete(pairs, "auth")
	scheme, token, ok := splitAuth(auth)
	if !ok {
		return m, fmt.Errorf("Invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(scheme, "bearer") {
		return m, fmt.Errorf("Invalid scheme in OAUTHBEARER client first message: %s", scheme)
	}
	m.Token, m.Extensions = token, pairs
	return m, nil
}

// isSaslName is RFC 5801's saslname: ASCII but NUL, ',' and '=', or the
// escapes =2C and =3D.
func isSaslName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '=':
			if !strings.HasPrefix(s[i:], "=2C") && !strings.HasPrefix(s[i:], "=3D") {
				return false
			}
			i += 2
		case c == 0 || c == ',' || c > 0x7F:
			return false
		}
	}
	return true
}

func isExtensionKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func isExtensionValue(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x21 || c > 0x7E) && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// splitAuth splits the auth value, "<scheme> +<token>" with scheme
// [A-Za-z0-9_]+ and token RFC 6750's b64token, [-_~+/.A-Za-z0-9]+ =*.
func splitAuth(auth string) (scheme, token string, ok bool) {
	scheme, token, ok = strings.Cut(auth, " ")
	if !ok || scheme == "" {
		return "", "", false
	}
	for i := 0; i < len(scheme); i++ {
		if c := scheme[i]; !isAlnum(c) && c != '_' {
			return "", "", false
		}
	}
	token = strings.TrimLeft(token, " ")
	body := strings.TrimRight(token, "=")
	if body == "" {
		return "", "", false
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; !isAlnum(c) && !strings.ContainsRune("-_~+/.", rune(c)) {
			return "", "", false
		}
	}
	return scheme, token, true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// NewOAuthBearerServer returns the server side of one OAUTHBEARER
// exchange, accepting the tokens v accepts.
func NewOAuthBearerServer(v OAuthBearerValidator) SASLServer {
	return &oauthBearerServer{validator: v}
}

type oauthBearerServer struct {
	validator OAuthBearerValidator
	// refused is the token error the server answered last; the client's
	// ^A then fails the exchange.
	refused *TokenError
	token   OAuthBearerToken
	done    bool
}

func (s *oauthBearerServer) Step(msg []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, errors.New("SASL/OAUTHBEARER: unexpected message after completion")
	}
	if len(msg) == 1 && msg[0] == 0x01 && s.refused != nil {
		return nil, false, fmt.Errorf("token refused: %s: %w", s.refused.Reason, &AuthenticationError{Message: s.refused.json()})
	}
	s.refused = nil
	first, err := ParseOAuthBearerClientFirst(msg)
	if err != nil {
		return nil, false, err
	}
	token, err := s.validator.Validate(first.Token)
	if err != nil {
		var te *TokenError
		if !errors.As(err, &te) {
			te = invalidToken("%v", err)
		}
		s.refused = te
		return []byte(te.json()), false, nil
	}
	if first.AuthzID != "" && first.AuthzID != token.Principal {
		return nil, false, authFailed("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			first.AuthzID, token.Principal)
	}
	s.token, s.done = token, true
	return []byte{}, true, nil
}

func (s *oauthBearerServer) Principal() Principal { return User(s.token.Principal) }

func (s *oauthBearerServer) CredentialExpiry() time.Time { return s.token.Expiry }
