package config

import (
	"fmt"
	"net/url"
	"strings"
)

// OAUTHBEARER settings of a listener, resolved as Kafka's OAuth code
// resolves them (ConfigurationUtils with the mechanism's prefix, over the
// listener's configs): listener.name.<listener>.oauthbearer.<key> wins over
// listener.name.<listener>.<key>, which wins over <key>. The server
// callback handler class is the exception: Kafka's SaslChannelBuilder
// reads it only in the first form (CallbackHandlerKey).

// OAuthBearerListener is the OAUTHBEARER configuration of one listener.
// Its JWKS keys matter only when CallbackHandlerClass selects Kafka's
// OAuthBearerValidatorCallbackHandler; ValidateJWKS checks them then.
type OAuthBearerListener struct {
	// CallbackHandlerClass is
	// listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class,
	// "" when unset.
	CallbackHandlerClass string
	// JWKSEndpointURL is sasl.oauthbearer.jwks.endpoint.url, "" when unset.
	JWKSEndpointURL string
	// The JWKS refresh interval and the retry backoff of a failed fetch
	// (sasl.oauthbearer.jwks.endpoint.refresh.ms, .retry.backoff.ms and
	// .retry.backoff.max.ms), in milliseconds.
	JWKSRefreshMs, JWKSRetryBackoffMs, JWKSRetryBackoffMaxMs int64
	// ClockSkewSeconds is sasl.oauthbearer.clock.skew.seconds.
	ClockSkewSeconds int32
	// ExpectedAudience is sasl.oauthbearer.expected.audience (empty: not
	// set) and ExpectedIssuer sasl.oauthbearer.expected.issuer, trimmed
	// ("": not set).
	ExpectedAudience []string
	ExpectedIssuer   string
	// ScopeClaimName and SubClaimName are sasl.oauthbearer.scope.claim.name
	// and sasl.oauthbearer.sub.claim.name, trimmed.
	ScopeClaimName, SubClaimName string

	// from is the key each setting was read from, by base key.
	from map[string]string
}

// CallbackHandlerKey is the key of a mechanism's server callback handler
// class on a listener.
func CallbackHandlerKey(listener, mechanism string) string {
	return ListenerPrefix(listener) + strings.ToLower(mechanism) + ".sasl.server.callback.handler.class"
}

// KeyName is the key a setting of this listener was read from, with its
// prefixes: what an error about its value should name.
func (o OAuthBearerListener) KeyName(base string) string {
	if k, ok := o.from[base]; ok {
		return k
	}
	return base
}

// oauthBearerKeys are the keys of Kafka's OAuthBearerValidatorCallbackHandler.
var oauthBearerKeys = []string{
	"sasl.oauthbearer.jwks.endpoint.url",
	"sasl.oauthbearer.jwks.endpoint.refresh.ms",
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
	"sasl.oauthbearer.clock.skew.seconds",
	"sasl.oauthbearer.expected.audience",
	"sasl.oauthbearer.expected.issuer",
	"sasl.oauthbearer.scope.claim.name",
	"sasl.oauthbearer.sub.claim.name",
}

// OAuthBearerListener resolves the OAUTHBEARER keys of a listener. It
// fails on a value that does not parse, naming the key as written.
func (c *Config) OAuthBearerListener(listener string) (OAuthBearerListener, error) {
	prefix := ListenerPrefix(listener)
	o := OAuthBearerListener{
		CallbackHandlerClass: strings.TrimSpace(c.Explicit[CallbackHandlerKey(listener, "OAUTHBEARER")]),
		from:                 map[string]string{},
	}
	values := map[string]any{}
	for _, base := range oauthBearerKeys {
		v, key, err := c.listenerValue(prefix+"oauthbearer.", base)
		if err != nil {
			return o, err
		}
		if v == nil {
			if v, key, err = c.listenerValue(prefix, base); err != nil {
				return o, err
			}
		}
		values[base], o.from[base] = v, key
	}
	o.JWKSEndpointURL, _ = values["sasl.oauthbearer.jwks.endpoint.url"].(string)
	o.JWKSEndpointURL = strings.TrimSpace(o.JWKSEndpointURL)
	o.JWKSRefreshMs, _ = values["sasl.oauthbearer.jwks.endpoint.refresh.ms"].(int64)
	o.JWKSRetryBackoffMs, _ = values["sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"].(int64)
	o.JWKSRetryBackoffMaxMs, _ = values["sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"].(int64)
	o.ClockSkewSeconds, _ = values["sasl.oauthbearer.clock.skew.seconds"].(int32)
	audience, _ := values["sasl.oauthbearer.expected.audience"].([]string)
	for _, a := range audience {
		if a = strings.TrimSpace(a); a != "" {
			o.ExpectedAudience = append(o.ExpectedAudience, a)
		}
	}
	o.ExpectedIssuer, _ = values["sasl.oauthbearer.expected.issuer"].(string)
	o.ExpectedIssuer = strings.TrimSpace(o.ExpectedIssuer)
	o.ScopeClaimName, _ = values["sasl.oauthbearer.scope.claim.name"].(string)
	o.ScopeClaimName = strings.TrimSpace(o.ScopeClaimName)
	o.SubClaimName, _ = values["sasl.oauthbearer.sub.claim.name"].(string)
	o.SubClaimName = strings.TrimSpace(o.SubClaimName)
	return o, nil
}

// ValidateJWKS checks the keys of JWKS validation as Kafka's
// ConfigurationUtils and RefreshingHttpsJwks do when the validator
// handler is configured, and a little more: values Kafka would only
// trip over at the first refresh (a backoff below zero, a maximum below
// the initial backoff) and a negative clock skew are refused here too.
func (o OAuthBearerListener) ValidateJWKS() error {
	const what = "The OAuth configuration option"
	urlKey := o.KeyName("sasl.oauthbearer.jwks.endpoint.url")
	if o.JWKSEndpointURL == "" {
		return fmt.Errorf("%s %s value must be set: OAuthBearerValidatorCallbackHandler verifies token signatures with the keys found there (an http, https or file URL)", what, urlKey)
	}
	u, err := url.Parse(o.JWKSEndpointURL)
	if err != nil {
		return fmt.Errorf("%s %s contains a URL (%s) that is malformed: %v", what, urlKey, o.JWKSEndpointURL, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return fmt.Errorf("%s %s contains a URL (%s) that has no host", what, urlKey, o.JWKSEndpointURL)
		}
		if o.JWKSRefreshMs <= 0 {
			return fmt.Errorf("invalid value %d for %s: want a positive number of milliseconds", o.JWKSRefreshMs, o.KeyName("sasl.oauthbearer.jwks.endpoint.refresh.ms"))
		}
	case "file":
		if u.Path == "" {
			return fmt.Errorf("%s %s contains a file URL (%s) without a path: want file:///absolute/path", what, urlKey, o.JWKSEndpointURL)
		}
	case "":
		return fmt.Errorf("%s %s contains a URL (%s) that is missing the protocol", what, urlKey, o.JWKSEndpointURL)
	default:
		return fmt.Errorf(`%s %s contains a URL (%s) that contains an invalid protocol (%s); only "http", "https", and "file" protocol are supported`,
			what, urlKey, o.JWKSEndpointURL, u.Scheme)
	}
	backoffKey, maxKey := o.KeyName("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"), o.KeyName("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms")
	switch {
	case o.JWKSRetryBackoffMs < 0:
		return fmt.Errorf("invalid value %d for %s: want milliseconds, at least 0", o.JWKSRetryBackoffMs, backoffKey)
	case o.JWKSRetryBackoffMaxMs < o.JWKSRetryBackoffMs:
		return fmt.Errorf("invalid value %d for %s: want at least %s (%d)", o.JWKSRetryBackoffMaxMs, maxKey, backoffKey, o.JWKSRetryBackoffMs)
	case o.ClockSkewSeconds < 0:
		return fmt.Errorf("invalid value %d for %s: want seconds, at least 0", o.ClockSkewSeconds, o.KeyName("sasl.oauthbearer.clock.skew.seconds"))
	case o.ScopeClaimName == "":
		return fmt.Errorf("%s %s value must not contain only whitespace", what, o.KeyName("sasl.oauthbearer.scope.claim.name"))
	case o.SubClaimName == "":
		return fmt.Errorf("%s %s value must not contain only whitespace", what, o.KeyName("sasl.oauthbearer.sub.claim.name"))
	}
	return nil
}
