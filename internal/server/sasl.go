package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/security"
)

// SASL listeners: the SASL keys of a listener (config.SASLListener)
// turned into the network layer's authenticator, and the checks that
// refuse what Samsa cannot honour.

// isSASL reports whether a security protocol authenticates with SASL.
func isSASL(protocol string) bool { return protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" }

// saslDeps are what the authenticators of a running node use: SCRAM
// credentials from the metadata image and the key sets of OAUTHBEARER's
// JWKS validator.
type saslDeps struct {
	scram security.ScramCredentials
	// tokens are the SCRAM credentials of delegation tokens; nil when
	// delegation.token.secret.key is unset.
	tokens security.DelegationTokenCredentials
	// jwks starts the key set of a listener's JWKS validator.
	jwks func(listener string, c security.JWKSConfig) (*security.JWKS, error)
}

// saslDeps are the node's SASL dependencies; key sets started through
// them are loaded within ctx.
func (s *Server) saslDeps(ctx context.Context) *saslDeps {
	return &saslDeps{
		scram:  s.scramCredentials(),
		tokens: s.tokenCredentials(),
		jwks: func(listener string, c security.JWKSConfig) (*security.JWKS, error) {
			return s.startJWKS(ctx, listener, c)
		},
	}
}

// callbackHandlers are the server callback handler classes Samsa runs for
// each mechanism other than OAUTHBEARER (oauthbearer.go): Kafka's own,
// which a configuration may name.
var callbackHandlers = map[string]string{
	security.MechanismPlain:       "org.apache.kafka.common.security.plain.internals.PlainServerCallbackHandler",
	security.MechanismScramSHA256: "org.apache.kafka.common.security.scram.internals.ScramServerCallbackHandler",
	security.MechanismScramSHA512: "org.apache.kafka.common.security.scram.internals.ScramServerCallbackHandler",
}

// saslListener builds the authenticator of a SASL listener. deps nil
// only checks the configuration: the authenticator it returns must not
// serve. The warnings name keys that are set but ignored, and settings
// fit only for development.
func saslListener(cfg *config.Config, listener string, deps *saslDeps) (*network.SASLConfig, []string, error) {
	l, err := cfg.SASLListener(listener)
	if err != nil {
		return nil, nil, err
	}
	if len(l.Mechanisms) == 0 {
		return nil, nil, fmt.Errorf("listener %s uses SASL but enables no mechanism: set %s (or sasl.enabled.mechanisms) to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
			listener, config.ListenerPrefix(listener)+"sasl.enabled.mechanisms")
	}
	out := &network.SASLConfig{
		Mechanisms:                l.Mechanisms,
		MaxReceiveSize:            l.MaxReceiveSize,
		FailedAuthenticationDelay: time.Duration(cfg.ConnectionFailedAuthenticationDelayMs) * time.Millisecond,
		SessionLifetime:           map[string]time.Duration{},
	}
	var scram security.ScramCredentials
	var tokens security.DelegationTokenCredentials
	if deps != nil {
		scram, tokens = deps.scram, deps.tokens
	}
	warnings := l.Warnings
	servers := map[string]func() security.SASLServer{}
	for _, m := range l.Mechanisms {
		jaas, hasJAAS := l.JAAS[m]
		if class, ok := l.CallbackHandler[m]; ok && m != security.MechanismOAuthBearer && class != callbackHandlers[m] {
			return nil, nil, fmt.Errorf("%s=%s: Samsa cannot load custom callback handlers; remove the key (%s then checks %s as Kafka's %s does)",
				config.CallbackHandlerKey(listener, m), class, listener, m, callbackHandlers[m])
		}
		switch m {
		case security.MechanismPlain:
			if !hasJAAS {
				return nil, nil, fmt.Errorf("listener %s enables SASL mechanism PLAIN but %s is not set: list its users there as user_<name>=\"<password>\" (an un-prefixed sasl.jaas.config is ignored on a broker, as in Kafka)",
					listener, config.JAASKey(listener, m))
			}
			users, err := security.PlainUsersFromJAAS(jaas)
			if err != nil {
				return nil, nil, fmt.Errorf("invalid %s: %w", config.JAASKey(listener, m), err)
			}
			servers[m] = func() security.SASLServer { return security.NewPlainServer(users) }
		case security.MechanismScramSHA256, security.MechanismScramSHA512:
			// The users are in the metadata log; the JAAS entry holds only
			// the broker's own client credentials.
			if hasJAAS {
				if _, err := security.ParseJAASModule(jaas, security.ScramLoginModule); err != nil {
					return nil, nil, fmt.Errorf("invalid %s: %w", config.JAASKey(listener, m), err)
				}
			}
			mech, _ := security.ScramMechanismByName(m)
			servers[m] = func() security.SASLServer { return security.NewScramServerWithTokens(mech, scram, tokens) }
		case security.MechanismOAuthBearer:
			o, err := newOAuthBearer(cfg, listener, jaas, hasJAAS)
			if err != nil {
				return nil, nil, err
			}
			if o.unsecured != nil {
				warnings = append(warnings, fmt.Sprintf("listener %s accepts unsigned OAUTHBEARER tokens for any principal (the unsecured validator): for development only; set %s=%s in production",
					listener, config.CallbackHandlerKey(listener, m), oauthValidatorHandler))
			}
			v, err := o.validator(listener, deps)
			if err != nil {
				return nil, nil, err
			}
			servers[m] = func() security.SASLServer { return security.NewOAuthBearerServer(v) }
		default:
			return nil, nil, fmt.Errorf("listener %s enables SASL mechanism %s (%s=%s), which Samsa does not support: enable only %s",
				listener, m, l.MechanismsKey, strings.Join(l.Mechanisms, ","), strings.Join(security.SupportedMechanisms, ", "))
		}
		out.SessionLifetime[m] = time.Duration(l.MaxReauthMs[m]) * time.Millisecond
	}
	out.NewServer = func(m string) security.SASLServer { return servers[m]() }
	return out, warnings, nil
}

// saslListeners builds the authenticator of every SASL client listener,
// by name, logging the keys set but ignored.
func (s *Server) saslListeners(ctx context.Context) (map[string]*network.SASLConfig, error) {
	out := map[string]*network.SASLConfig{}
	deps := s.saslDeps(ctx)
	for _, l := range s.cfg.BrokerListeners() {
		if !isSASL(s.cfg.ListenerSecurityProtocolMap[l.Name]) {
			continue
		}
		sc, warnings, err := saslListener(s.cfg, l.Name, deps)
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			s.logger.Warn(w)
		}
		s.logger.Info("SASL authentication", "listener", l.Name, "mechanisms", strings.Join(sc.Mechanisms, ","))
		out[l.Name] = sc
	}
	return out, nil
}

// checkSASL refuses SASL settings Samsa cannot honour on this node's
// listener: a mechanism it does not have, PLAIN without users,
// OAUTHBEARER settings it cannot run (oauthbearer.go). The
// credentials this node dials other nodes' SASL listeners with are
// checked by newNodeDialers (sasl_client.go).
func checkSASL(cfg *config.Config, listener string) error {
	if !slices.ContainsFunc(cfg.Listeners, func(l config.Listener) bool { return l.Name == listener }) {
		return nil // another node's listener, only dialed
	}
	_, _, err := saslListener(cfg, listener, nil)
	return err
}

// scramCredentials looks SCRAM credentials up in the latest metadata
// image, so a change committed to the metadata log applies to the next
// exchange on every node.
func (s *Server) scramCredentials() security.ScramCredentials {
	return func(m security.ScramMechanism, user string) (security.ScramCredential, bool) {
		c, ok := s.loader.Image().ScramCredential(user, int8(m))
		return security.ScramCredential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}, ok
	}
}

// tokenCredentials authenticates with the delegation tokens of the
// metadata image: a token's SCRAM password is its HMAC in base64, from
// which each authentication derives a credential with a fresh salt and
// the minimum iterations, as Kafka's brokers keep one per token. Nil
// when delegation tokens are disabled.
func (s *Server) tokenCredentials() security.DelegationTokenCredentials {
	secret := s.cfg.DelegationTokenSecretKey
	if secret == "" {
		return nil
	}
	return func(m security.ScramMechanism, id string) (security.TokenCredential, bool) {
		t, ok := s.loader.Image().DelegationToken(id)
		if !ok {
			return security.TokenCredential{}, false
		}
		owner, ok := security.ParsePrincipal(t.Owner)
		if !ok {
			return security.TokenCredential{}, false
		}
		salt := make([]byte, 32)
		rand.Read(salt)
		password := base64.StdEncoding.EncodeToString(security.DelegationTokenHMAC(secret, id))
		return security.TokenCredential{
			Credential: m.NewCredential(password, salt, security.ScramMinIterations),
			Owner:      owner,
			Expiry:     time.UnixMilli(min(t.Expiry, t.Max)),
		}, true
	}
}

// scramBootstrapRecords turns --add-scram arguments into the records the
// controller writes when it bootstraps the metadata log.
func scramBootstrapRecords(args []string) ([]metadata.Record, error) {
	var recs []metadata.Record
	for i, arg := range args {
		a, err := security.ParseScramArg(arg, rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("--add-scram #%d: %w", i+1, err)
		}
		c := a.Credential
		recs = append(recs, &metadata.UserScramCredentialRecord{Name: a.Name, Mechanism: int8(a.Mechanism),
			Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
	}
	return recs, nil
}
