package security

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// The JWKS OAUTHBEARER validator, Kafka's
// OAuthBearerValidatorCallbackHandler (ValidatorAccessTokenValidator over
// jose4j). A token is a signed JWT (JWS compact serialization) and is
// accepted when, in this order:
//
//  1. it has three non-empty sections and its alg is an asymmetric one
//     (RS256/384/512, PS256/384/512, ES256/384/512, EdDSA): "none" and the
//     HMAC algorithms are refused;
//  2. a key of the JWKS verifies its signature: the key with the token's
//     kid (a kid the set lacks makes it refetch the set, see JWKS), whose
//     type and curve fit alg and whose use and alg, when given, are "sig"
//     and alg;
//  3. its aud names one of ExpectedAudience; with none expected, a token
//     with an aud claim is refused (jose4j's default, hence Kafka's);
//  4. its iss equals ExpectedIssuer, when one is expected;
//  5. it has exp and iat; now − ClockSkew is before exp, now + ClockSkew is
//     not before nbf, and exp is not before iat or nbf (jose4j's rules, in
//     whole seconds);
//  6. its scope claim (a string is one item, a list its items) has no
//     empty or duplicate item, and its subject claim is a non-blank string:
//     the principal, trimmed.
//
// The reason a token is refused is logged by the broker; the client is
// only told invalid_token.

// JWTValidator is the JWKS OAUTHBEARER validator.
type JWTValidator struct {
	// Keys verifies signatures.
	Keys *JWKS
	// ExpectedAudience and ExpectedIssuer, when set, must match the
	// token's aud and iss exactly.
	ExpectedAudience []string
	ExpectedIssuer   string
	// ScopeClaim and SubClaim name the claims of the scope and the
	// principal.
	ScopeClaim, SubClaim string
	// ClockSkew is the slack on exp and nbf, in whole seconds.
	ClockSkew time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// jwtAlgorithms are the signature algorithms a token may use.
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Validate checks a signed JWT.
func (v *JWTValidator) Validate(token string) (OAuthBearerToken, error) {
	token = strings.TrimSpace(token)
	if err := checkSections(token); err != nil {
		return OAuthBearerToken{}, err
	}
	jws, err := jose.ParseSignedCompact(token, jwtAlgorithms)
	if err != nil {
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: %v", err)
	}
	payload, err := v.verify(jws)
	if err != nil {
		return OAuthBearerToken{}, err
	}
	claims, err := jwtClaims(payload)
	if err != nil {
		return OAuthBearerToken{}, err
	}
	if err := v.checkClaims(claims); err != nil {
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: JWT rejected due to invalid claims: %v", err)
	}
	return v.token(token, claims)
}

// checkSections is Kafka's SerializedJwt.
func checkSections(token string) error {
	if token == "" {
		return invalidToken("Empty JWT provided; expected three sections (header, payload, and signature)")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return invalidToken("Malformed JWT provided; expected three sections (header, payload, and signature), but %d sections provided", len(parts))
	}
	for i, name := range []string{"header", "payload", "signature"} {
		if strings.TrimSpace(parts[i]) == "" {
			return invalidToken("Malformed JWT provided; expected at least three sections (header, payload, and signature), but %s section missing", name)
		}
	}
	return nil
}

// verify finds the token's key and checks its signature.
func (v *JWTValidator) verify(jws *jose.JSONWebSignature) ([]byte, error) {
	h := jws.Signatures[0].Protected
	alg := jose.SignatureAlgorithm(h.Algorithm)
	keys := verificationKeys(v.Keys.Keys(), h.KeyID, alg)
	if len(keys) == 0 && v.Keys.refreshForKeyID(h.KeyID) {
		keys = verificationKeys(v.Keys.Keys(), h.KeyID, alg)
	}
	if len(keys) == 0 {
		return nil, invalidToken("Could not validate the access token: Unable to find a suitable verification key for JWS w/ header {kid: %q, alg: %q} from JWKs obtained from %s",
			h.KeyID, h.Algorithm, v.Keys.Location())
	}
	for _, k := range keys {
		if payload, err := jws.Verify(k.Key); err == nil {
			return payload, nil
		}
	}
	return nil, invalidToken("Could not validate the access token: JWS signature is invalid (kid %q, alg %s)", h.KeyID, h.Algorithm)
}

// verificationKeys are the keys of a set that may have signed a token
// with key id kid ("": any) and algorithm alg.
func verificationKeys(set []jose.JSONWebKey, kid string, alg jose.SignatureAlgorithm) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range set {
		if (kid != "" && k.KeyID != kid) || (k.Use != "" && k.Use != "sig") ||
			(k.Algorithm != "" && k.Algorithm != string(alg)) || !keyFits(k.Key, alg) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// keyFits reports whether a public key can verify alg.
func keyFits(key any, alg jose.SignatureAlgorithm) bool {
	switch key := key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(string(alg), "RS") || strings.HasPrefix(string(alg), "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case jose.ES256:
			return key.Curve == elliptic.P256()
		case jose.ES384:
			return key.Curve == elliptic.P384()
		case jose.ES512:
			return key.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == jose.EdDSA
	}
	return false
}

func jwtClaims(payload []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var claims map[string]any
	if err := d.Decode(&claims); err != nil || claims == nil || d.More() {
		return nil, invalidToken("Could not validate the access token: the JWT's payload is not a JSON object")
	}
	return claims, nil
}

// checkClaims applies jose4j's audience, issuer and date validators as
// Kafka configures them.
func (v *JWTValidator) checkClaims(claims map[string]any) error {
	aud, hasAud, err := audienceClaim(claims)
	if err != nil {
		return err
	}
	switch {
	case !hasAud && len(v.ExpectedAudience) > 0:
		return fmt.Errorf("No Audience (aud) claim present.")
	case hasAud && !intersects(aud, v.ExpectedAudience):
		if len(v.ExpectedAudience) == 0 {
			return fmt.Errorf("Audience (aud) claim %s present in the JWT but no expected audience value(s) were provided to the JWT Consumer; set sasl.oauthbearer.expected.audience",
				javaList(aud))
		}
		expected := v.ExpectedAudience[0]
		if len(v.ExpectedAudience) > 1 {
			expected = "one of " + javaList(v.ExpectedAudience)
		}
		return fmt.Errorf("Audience (aud) claim %s doesn't contain an acceptable identifier. Expected %s as an aud value.", javaList(aud), expected)
	}
	if v.ExpectedIssuer != "" {
		iss, ok := claims["iss"]
		s, isString := iss.(string)
		switch {
		case !ok:
			return fmt.Errorf("No Issuer (iss) claim present but was expecting %s.", v.ExpectedIssuer)
		case !isString:
			return fmt.Errorf("The value of the 'iss' claim is not a string")
		case s != v.ExpectedIssuer:
			return fmt.Errorf("Issuer (iss) claim value (%s) doesn't match expected value of %s", s, v.ExpectedIssuer)
		}
	}
	return v.checkDates(claims)
}

func (v *JWTValidator) checkDates(claims map[string]any) error {
	var dates [3]*int64
	for i, name := range []string{"exp", "iat", "nbf"} {
		d, err := numericDate(claims, name)
		if err != nil {
			return err
		}
		dates[i] = d
	}
	exp, iat, nbf := dates[0], dates[1], dates[2]
	switch {
	case exp == nil:
		return fmt.Errorf("No Expiration Time (exp) claim present.")
	case iat == nil:
		return fmt.Errorf("No Issued At (iat) claim present.")
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	t, skew := now().Unix(), int64(v.ClockSkew/time.Second)
	leeway := "."
	if skew > 0 {
		leeway = fmt.Sprintf(" (even when providing %d seconds of leeway to account for clock skew).", skew)
	}
	switch {
	case t-skew >= *exp:
		return fmt.Errorf("The JWT is no longer valid - the evaluation time %s is on or after the Expiration Time (exp=%s) claim value%s",
			numericDateString(t), numericDateString(*exp), leeway)
	case *exp < *iat:
		return fmt.Errorf("The Expiration Time (exp=%s) claim value cannot be before the Issued At (iat=%s) claim value.",
			numericDateString(*exp), numericDateString(*iat))
	case nbf != nil && *exp < *nbf:
		return fmt.Errorf("The Expiration Time (exp=%s) claim value cannot be before the Not Before (nbf=%s) claim value.",
			numericDateString(*exp), numericDateString(*nbf))
	case nbf != nil && t+skew < *nbf:
		return fmt.Errorf("The JWT is not yet valid as the evaluation time %s is before the Not Before (nbf=%s) claim time%s",
			numericDateString(t), numericDateString(*nbf), leeway)
	}
	return nil
}

// token builds the accepted token from Kafka's own claim checks
// (ClaimValidationUtils).
func (v *JWTValidator) token(value string, claims map[string]any) (OAuthBearerToken, error) {
	t := OAuthBearerToken{Value: value}
	var items []any
	switch s := claims[v.ScopeClaim].(type) {
	case string:
		items = []any{s}
	case []any:
		items = s
	}
	for _, item := range items {
		s, err := claimString(v.ScopeClaim, item)
		if err != nil {
			return t, err
		}
		if contains(t.Scope, s) {
			return t, invalidToken("%s value must not contain duplicates - %s already present", v.ScopeClaim, s)
		}
		t.Scope = append(t.Scope, s)
	}
	exp, _ := numericDate(claims, "exp")
	iat, _ := numericDate(claims, "iat")
	if *exp < 0 {
		return t, invalidToken("exp value must be non-negative; value given was \"%d\"", *exp*1000)
	}
	if *iat < 0 {
		return t, invalidToken("iat value must be null or non-negative; value given was \"%d\"", *iat*1000)
	}
	t.Expiry, t.IssuedAt = time.Unix(*exp, 0), time.Unix(*iat, 0)
	sub, present := claims[v.SubClaim]
	if _, isString := sub.(string); present && !isString {
		return t, invalidToken("Could not extract the '%s' claim from the access token", v.SubClaim)
	}
	if !present {
		sub = nil
	}
	principal, err := claimString(v.SubClaim, sub)
	if err != nil {
		return t, err
	}
	t.Principal = principal
	return t, nil
}

// claimString is Kafka's ClaimValidationUtils.validateString: a
// non-blank string, trimmed.
func claimString(name string, v any) (string, error) {
	s, ok := v.(string)
	switch {
	case v == nil || !ok:
		return "", invalidToken("%s value must be non-null", name)
	case s == "":
		return "", invalidToken("%s value must be non-empty", name)
	case strings.TrimSpace(s) == "":
		return "", invalidToken("%s value must not contain only whitespace", name)
	}
	return strings.TrimSpace(s), nil
}

// audienceClaim is the aud claim: a string or a list of strings.
func audienceClaim(claims map[string]any) ([]string, bool, error) {
	switch a := claims["aud"].(type) {
	case nil:
		_, present := claims["aud"]
		if present {
			return nil, false, fmt.Errorf("The value of the 'aud' claim is not a string or an array of strings")
		}
		return nil, false, nil
	case string:
		return []string{a}, true, nil
	case []any:
		out := make([]string, len(a))
		for i, e := range a {
			s, ok := e.(string)
			if !ok {
				return nil, false, fmt.Errorf("The value of the 'aud' claim is not a string or an array of strings")
			}
			out[i] = s
		}
		return out, true, nil
	}
	return nil, false, fmt.Errorf("The value of the 'aud' claim is not a string or an array of strings")
}

// numericDate is a date claim in whole seconds (jose4j's NumericDate
// drops a fraction), nil when absent.
func numericDate(claims map[string]any, name string) (*int64, error) {
	v, ok := claims[name]
	if !ok {
		return nil, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return nil, fmt.Errorf("The value of the '%s' claim is not the expected type (%v cannot be cast to a number)", name, v)
	}
	if i, err := n.Int64(); err == nil {
		return &i, nil
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f > math.MaxInt64 || f < math.MinInt64 {
		return nil, fmt.Errorf("The value of the '%s' claim is out of range (%s)", name, n)
	}
	i := int64(f)
	return &i, nil
}

func numericDateString(sec int64) string {
	return fmt.Sprintf("NumericDate{%d -> %s}", sec, time.Unix(sec, 0).UTC().Format(time.RFC3339))
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if contains(b, x) {
			return true
		}
	}
	return false
}

// javaList formats a list as Java's List.toString does.
func javaList(l []string) string { return "[" + strings.Join(l, ", ") + "]" }
