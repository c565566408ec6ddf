package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/security"
)

// OAUTHBEARER on a SASL listener. As on a Kafka broker, the listener's
// listener.name.<l>.oauthbearer.sasl.server.callback.handler.class picks
// the validator:
//
//   - unset (or Kafka's OAuthBearerUnsecuredValidatorCallbackHandler):
//     the unsecured validator, its options in the listener's JAAS config
//     (listener.name.<l>.oauthbearer.sasl.jaas.config), for development;
//   - Kafka's OAuthBearerValidatorCallbackHandler (also under its pre-4.0
//     name in ...oauthbearer.secured): signed tokens checked against the
//     keys of sasl.oauthbearer.jwks.endpoint.url and the other
//     sasl.oauthbearer.* keys.
//
// Whatever Samsa cannot honour stops start-up naming the key: another
// handler class, a JAAS config of another login module, the validator
// handler without a usable JWKS URL, JAAS ssl.* options for fetching the
// JWKS (Samsa uses the system's trusted roots), and a JWKS URL with the
// unsecured validator, which would silently accept unsigned tokens.

// The server callback handler classes of OAUTHBEARER that Samsa runs.
const (
	oauthValidatorHandler       = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	oauthValidatorHandlerLegacy = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
	oauthUnsecuredHandler       = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
)

// oauthBearer is the OAUTHBEARER setup of one listener: the unsecured
// validator, or the JWKS validator's settings (jwks set) whose key set
// is started when the listener is.
type oauthBearer struct {
	unsecured *security.UnsecuredValidator
	jwks      *security.JWKSConfig
	jwt       security.JWTValidator // without Keys
	// urlKey names the key of the JWKS URL, for errors.
	urlKey string
}

// newOAuthBearer reads and checks the OAUTHBEARER settings of a listener.
func newOAuthBearer(cfg *config.Config, listener string, jaas string, hasJAAS bool) (*oauthBearer, error) {
	jaasKey := config.JAASKey(listener, security.MechanismOAuthBearer)
	if !hasJAAS {
		return nil, fmt.Errorf("listener %s enables SASL mechanism OAUTHBEARER but %s is not set: set it to %s required; (with the unsecured validator's options, if any), as a Kafka broker requires",
			listener, jaasKey, security.OAuthBearerLoginModule)
	}
	module, err := security.ParseJAASModule(jaas, security.OAuthBearerLoginModule)
	if err != nil {
		return nil, fmt.Errorf("invalid %s: %w", jaasKey, err)
	}
	o, err := cfg.OAuthBearerListener(listener)
	if err != nil {
		return nil, err
	}
	handlerKey := config.CallbackHandlerKey(listener, security.MechanismOAuthBearer)
	switch o.CallbackHandlerClass {
	case "", oauthUnsecuredHandler:
		if o.JWKSEndpointURL != "" {
			return nil, fmt.Errorf("%s is set, but OAUTHBEARER on listener %s uses the unsecured validator, which ignores it and accepts unsigned tokens: set %s=%s to check signatures against that JWKS",
				o.KeyName("sasl.oauthbearer.jwks.endpoint.url"), listener, handlerKey, oauthValidatorHandler)
		}
		v, err := security.NewUnsecuredValidator(module.Options)
		if err != nil {
			return nil, fmt.Errorf("invalid %s: %w", jaasKey, err)
		}
		return &oauthBearer{unsecured: v}, nil
	case oauthValidatorHandler, oauthValidatorHandlerLegacy:
	default:
		return nil, fmt.Errorf("%s=%s: Samsa cannot load custom callback handlers; use %s (tokens signed by the keys of sasl.oauthbearer.jwks.endpoint.url) or remove the key (unsigned tokens, for development)",
			handlerKey, o.CallbackHandlerClass, oauthValidatorHandler)
	}
	if err := o.ValidateJWKS(); err != nil {
		return nil, err
	}
	for name := range module.Options {
		if strings.HasPrefix(name, "ssl.") {
			return nil, fmt.Errorf("%s sets %s: Samsa fetches the JWKS with the system's trusted roots and reads no ssl.* options there; remove it", jaasKey, name)
		}
	}
	return &oauthBearer{
		jwks: &security.JWKSConfig{
			URL:             o.JWKSEndpointURL,
			Refresh:         time.Duration(o.JWKSRefreshMs) * time.Millisecond,
			RetryBackoff:    time.Duration(o.JWKSRetryBackoffMs) * time.Millisecond,
			RetryBackoffMax: time.Duration(o.JWKSRetryBackoffMaxMs) * time.Millisecond,
		},
		jwt: security.JWTValidator{
			ExpectedAudience: o.ExpectedAudience,
			ExpectedIssuer:   o.ExpectedIssuer,
			ScopeClaim:       o.ScopeClaimName,
			SubClaim:         o.SubClaimName,
			ClockSkew:        time.Duration(o.ClockSkewSeconds) * time.Second,
		},
		urlKey: o.KeyName("sasl.oauthbearer.jwks.endpoint.url"),
	}, nil
}

// validator is the listener's token validator. With the JWKS validator
// it starts the key set through deps; deps nil (only checking the
// configuration) yields nil for it.
func (o *oauthBearer) validator(listener string, deps *saslDeps) (security.OAuthBearerValidator, error) {
	if o.unsecured != nil {
		return o.unsecured, nil
	}
	if deps == nil {
		return nil, nil
	}
	keys, err := deps.jwks(listener, *o.jwks)
	if err != nil {
		return nil, fmt.Errorf("listener %s: OAUTHBEARER: the JWKS of %s=%s: %w", listener, o.urlKey, o.jwks.URL, err)
	}
	v := o.jwt
	v.Keys = keys
	return &v, nil
}

// startJWKS loads the key set of a listener's JWKS validator and keeps it
// fresh until the node closes (closeJWKS).
func (s *Server) startJWKS(ctx context.Context, listener string, c security.JWKSConfig) (*security.JWKS, error) {
	c.Logger = s.logger.With("listener", listener)
	j := security.NewJWKS(c)
	if err := j.Start(ctx); err != nil {
		return nil, err
	}
	s.jwks = append(s.jwks, j)
	return j, nil
}

func (s *Server) closeJWKS() error {
	for _, j := range s.jwks {
		j.Close()
	}
	s.jwks = nil
	return nil
}
