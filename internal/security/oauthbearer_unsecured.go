package security

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The unsecured OAUTHBEARER validator, Kafka's
// OAuthBearerUnsecuredValidatorCallbackHandler: the broker's default when
// no server callback handler is configured. It accepts an unsigned JWT
// (header {"alg":"none"}, an empty signature) whose claims carry a
// principal, an expiry in the future and the required scope. Anyone can
// write such a token for any principal: it is for development and tests
// only.
//
// Its options come from the listener's OAUTHBEARER JAAS config:
//
//	unsecuredValidatorPrincipalClaimName  claim of the principal (sub)
//	unsecuredValidatorScopeClaimName      claim of the scope (scope)
//	unsecuredValidatorRequiredScope       space-separated scope every token must have
//	unsecuredValidatorAllowableClockSkewMs  slack on iat and exp (0)

// UnsecuredValidator is the unsecured OAUTHBEARER validator.
type UnsecuredValidator struct {
	// PrincipalClaim and ScopeClaim name the claims of the principal and
	// the scope.
	PrincipalClaim, ScopeClaim string
	// RequiredScope is the scope every token must have.
	RequiredScope []string
	// ClockSkew is how far iat may be in the future and exp in the past.
	ClockSkew time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// The JAAS options of the unsecured validator.
const (
	unsecuredPrincipalClaimOption = "unsecuredValidatorPrincipalClaimName"
	unsecuredScopeClaimOption     = "unsecuredValidatorScopeClaimName"
	unsecuredRequiredScopeOption  = "unsecuredValidatorRequiredScope"
	unsecuredClockSkewOption      = "unsecuredValidatorAllowableClockSkewMs"
)

// NewUnsecuredValidator reads the unsecured validator's options from the
// options of an OAuthBearerLoginModule JAAS entry; a blank option takes
// its default. A clock skew that is not a non-negative int or a scope
// item with characters RFC 6749 does not allow in one fails (Kafka fails
// them at each login; Samsa at start-up).
func NewUnsecuredValidator(options map[string]string) (*UnsecuredValidator, error) {
	v := &UnsecuredValidator{PrincipalClaim: "sub", ScopeClaim: "scope"}
	if s := strings.TrimSpace(options[unsecuredPrincipalClaimOption]); s != "" {
		v.PrincipalClaim = s
	}
	if s := strings.TrimSpace(options[unsecuredScopeClaimOption]); s != "" {
		v.ScopeClaim = s
	}
	for _, item := range strings.Split(strings.TrimSpace(options[unsecuredRequiredScopeOption]), " ") {
		if item == "" {
			continue
		}
		if !isScopeItem(item) {
			return nil, fmt.Errorf("invalid value %q for JAAS option %s: %q is not a valid scope item", options[unsecuredRequiredScopeOption], unsecuredRequiredScopeOption, item)
		}
		v.RequiredScope = append(v.RequiredScope, item)
	}
	if s := strings.TrimSpace(options[unsecuredClockSkewOption]); s != "" {
		ms, err := strconv.ParseInt(s, 10, 32)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("invalid value %q for JAAS option %s: want milliseconds, an int at least 0", options[unsecuredClockSkewOption], unsecuredClockSkewOption)
		}
		v.ClockSkew = time.Duration(ms) * time.Millisecond
	}
	return v, nil
}

// isScopeItem is RFC 6749's scope-token: %x21 / %x23-5B / %x5D-7E.
func isScopeItem(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7E || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}

// Validate accepts an unsigned JWT, checking it in Kafka's order.
func (v *UnsecuredValidator) Validate(token string) (OAuthBearerToken, error) {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	jwt, err := parseUnsecuredJWT(token, v.PrincipalClaim, v.ScopeClaim)
	if err != nil {
		return OAuthBearerToken{}, err
	}
	nowMs, skewMs := now().UnixMilli(), v.ClockSkew.Milliseconds()
	if jwt.iat != nil && 1000**jwt.iat > float64(nowMs+skewMs) {
		return OAuthBearerToken{}, invalidToken("The Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (%d ms)",
			*jwt.iat, nowMs, skewMs)
	}
	if float64(nowMs-skewMs) >= 1000*jwt.exp {
		return OAuthBearerToken{}, invalidToken("The indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%f seconds)",
			nowMs, skewMs, jwt.exp)
	}
	if jwt.iat != nil && jwt.exp <= *jwt.iat {
		return OAuthBearerToken{}, invalidToken("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", jwt.exp, *jwt.iat)
	}
	for _, want := range v.RequiredScope {
		if !contains(jwt.token.Scope, want) {
			return OAuthBearerToken{}, &TokenError{Status: "insufficient_scope", Scope: "[" + strings.Join(v.RequiredScope, ", ") + "]",
				Reason: fmt.Sprintf("The provided scope (%v) was missing a required scope (%s).  All required scope elements: %v", jwt.token.Scope, want, v.RequiredScope)}
		}
	}
	return jwt.token, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unsecuredJWT is a parsed unsigned JWT: the token and its exp and iat
// claims in (possibly fractional) seconds.
type unsecuredJWT struct {
	token OAuthBearerToken
	exp   float64
	iat   *float64
}

// parseUnsecuredJWT takes a token apart as Kafka's OAuthBearerUnsecuredJws
// does, with its messages.
func parseUnsecuredJWT(token, principalClaim, scopeClaim string) (unsecuredJWT, error) {
	var out unsecuredJWT
	if strings.Contains(token, "..") {
		return out, invalidToken("Malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return out, invalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := jwtSection(parts[0])
	if err != nil {
		return out, err
	}
	claims, err := jwtSection(parts[1])
	if err != nil {
		return out, err
	}
	alg, ok := header["alg"]
	if !ok {
		return out, invalidToken("JWS header must have an Algorithm value")
	}
	if alg != "none" {
		return out, invalidToken("Unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return out, invalidToken("Unsecured JWS must not contain a digital signature")
	}
	if out.token.Scope, err = unsecuredScope(claims, scopeClaim); err != nil {
		return out, err
	}
	exp, err := numberClaim(claims, "exp")
	if err != nil {
		return out, err
	}
	if exp == nil {
		return out, invalidToken("No expiration time in JWT")
	}
	principal, isString := claims[principalClaim].(string)
	if _, present := claims[principalClaim]; present && !isString {
		return out, invalidToken("The '%s' claim was not of type String: %s", principalClaim, javaType(claims[principalClaim]))
	}
	if strings.TrimSpace(principal) == "" {
		return out, invalidToken("No principal name in JWT claim: %s", principalClaim)
	}
	if out.iat, err = numberClaim(claims, "iat"); err != nil {
		return out, err
	}
	out.exp = *exp
	out.token.Value, out.token.Principal = token, principal
	out.token.Expiry = time.UnixMilli(int64(math.Round(*exp * 1000)))
	if out.iat != nil {
		out.token.IssuedAt = time.UnixMilli(int64(math.Round(*out.iat * 1000)))
	}
	return out, nil
}

// jwtSection decodes a base64url JSON object into claims as Kafka's
// OAuthBearerUnsecuredJws.toMap converts them: numbers stay numbers
// (float64), arrays become lists of their elements' text, anything else
// becomes its text. Padding and the standard alphabet are accepted too.
func jwtSection(s string) (map[string]any, error) {
	s = strings.NewReplacer("+", "-", "/", "_").Replace(strings.TrimRight(s, "="))
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, invalidToken("malformed Base64 URL encoded value")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var raw map[string]any
	if err := d.Decode(&raw); err != nil || raw == nil || d.More() {
		return nil, invalidToken("malformed JSON")
	}
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case json.Number:
			f, err := v.Float64()
			if err != nil {
				return nil, invalidToken("malformed JSON")
			}
			out[k] = f
		case []any:
			list := make([]string, len(v))
			for i, e := range v {
				list[i] = jsonText(e)
			}
			out[k] = list
		default:
			out[k] = jsonText(v)
		}
	}
	return out, nil
}

// jsonText is Jackson's JsonNode.asText of a value: a string's content,
// a number's or boolean's literal, "null", and "" for an object or array.
func jsonText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	}
	return ""
}

// javaType names a claim value's type as Kafka's messages do.
func javaType(v any) string {
	switch v.(type) {
	case float64:
		return "Double"
	case []string:
		return "ArrayList"
	}
	return "String"
}

func numberClaim(claims map[string]any, name string) (*float64, error) {
	v, ok := claims[name]
	if !ok {
		return nil, nil
	}
	f, ok := v.(float64)
	if !ok {
		return nil, invalidToken("The '%s' claim was not of type Number: %s", name, javaType(v))
	}
	return &f, nil
}

// unsecuredScope is the scope claim: a string is one item (blank: none),
// a list its non-blank items, trimmed.
func unsecuredScope(claims map[string]any, name string) ([]string, error) {
	switch v := claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		if s := strings.TrimSpace(v); s != "" {
			return []string{s}, nil
		}
		return nil, nil
	case []string:
		var out []string
		for _, s := range v {
			if s = strings.TrimSpace(s); s != "" && !contains(out, s) {
				out = append(out, s)
			}
		}
		return out, nil
	default:
		return nil, invalidToken("The '%s' claim was not of type List: %s", name, javaType(v))
	}
}
