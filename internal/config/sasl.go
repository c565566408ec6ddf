package config

import (
	"errors"
	"fmt"
	"strings"
)

// SASL settings are resolved per listener as Kafka resolves them on a
// broker (AbstractConfig.valuesWithPrefixOverride with the listener's
// prefix): a key prefixed with listener.name.<listener>. — the listener
// name in lower case — wins over the broker-wide key, and a per-mechanism
// key adds the mechanism's name in lower case after that prefix
// (listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms).
// The JAAS configuration is the exception: a broker reads it only with
// both prefixes, listener.name.<listener>.<mechanism>.sasl.jaas.config; an
// un-prefixed sasl.jaas.config is ignored with a warning, as Kafka's
// JaasContext.loadServerContext ignores it.

// SASLListener is the SASL configuration of one listener.
type SASLListener struct {
	// Mechanisms are the enabled mechanisms, as written (Kafka compares
	// mechanism names exactly), and MechanismsKey the key they came from.
	Mechanisms    []string
	MechanismsKey string
	// JAAS is each enabled mechanism's JAAS configuration text, absent
	// when its key is not set.
	JAAS map[string]string
	// MaxReauthMs is connections.max.reauth.ms for each enabled mechanism:
	// the session lifetime after which a client must re-authenticate (0:
	// never, KIP-368 off).
	MaxReauthMs map[string]int64
	// CallbackHandler is each enabled mechanism's server callback handler
	// class (CallbackHandlerKey), absent when its key is not set.
	CallbackHandler map[string]string
	// MaxReceiveSize is sasl.server.max.receive.size: the largest frame
	// read before the client is authenticated.
	MaxReceiveSize int32
	// Warnings name keys that are set but ignored.
	Warnings []string
}

// JAASKey is the key of a listener's JAAS configuration for a mechanism.
func JAASKey(listener, mechanism string) string {
	return ListenerPrefix(listener) + strings.ToLower(mechanism) + ".sasl.jaas.config"
}

// ListenerJAAS is the JAAS configuration of a mechanism on a listener
// (JAASKey), whether or not the listener enables that mechanism: a broker
// takes its own client credentials for a listener from it, as Kafka's
// brokers do when they dial another node's SASL listener.
func (c *Config) ListenerJAAS(listener, mechanism string) (string, bool) {
	v, ok := c.Explicit[JAASKey(listener, mechanism)]
	return v, ok
}

// SASLListener resolves the SASL keys of a listener. It fails on a value
// that does not parse, naming the key as written.
func (c *Config) SASLListener(listener string) (SASLListener, error) {
	prefix := ListenerPrefix(listener)
	out := SASLListener{JAAS: map[string]string{}, CallbackHandler: map[string]string{}, MaxReauthMs: map[string]int64{}}
	v, key, err := c.listenerValue(prefix, "sasl.enabled.mechanisms")
	if err != nil {
		return out, err
	}
	out.MechanismsKey = key
	for _, m := range v.([]string) {
		if m != "" {
			out.Mechanisms = append(out.Mechanisms, m)
		}
	}
	v, _, err = c.listenerValue(prefix, "sasl.server.max.receive.size")
	if err != nil {
		return out, err
	}
	out.MaxReceiveSize = v.(int32)
	for _, m := range out.Mechanisms {
		if jaas, ok := c.Explicit[JAASKey(listener, m)]; ok {
			out.JAAS[m] = jaas
		}
		if class, ok := c.Explicit[CallbackHandlerKey(listener, m)]; ok {
			out.CallbackHandler[m] = strings.TrimSpace(class)
		}
		v, _, err := c.listenerValue(prefix+strings.ToLower(m)+".", "connections.max.reauth.ms")
		if err != nil {
			return out, err
		}
		if v == nil {
			if v, _, err = c.listenerValue(prefix, "connections.max.reauth.ms"); err != nil {
				return out, err
			}
		}
		out.MaxReauthMs[m] = v.(int64)
	}
	// A callback handler class is read only with both prefixes, as the
	// JAAS config is; but ignoring one could leave a listener validating
	// tokens less strictly than meant (OAUTHBEARER's unsecured validator
	// instead of OAuthBearerValidatorCallbackHandler), so it is refused.
	for _, key := range []string{"sasl.server.callback.handler.class", prefix + "sasl.server.callback.handler.class"} {
		if c.IsSet(key) {
			return out, fmt.Errorf("%s is not read by a broker, as in Kafka: prefix it with the listener and the mechanism, e.g. %s",
				key, CallbackHandlerKey(listener, "OAUTHBEARER"))
		}
	}
	if c.IsSet("sasl.jaas.config") {
		out.Warnings = append(out.Warnings, "sasl.jaas.config is ignored on a broker, as in Kafka: prefix it with the listener and the mechanism, e.g. "+JAASKey(listener, "PLAIN"))
	}
	if c.IsSet(prefix + "sasl.jaas.config") {
		out.Warnings = append(out.Warnings, prefix+"sasl.jaas.config is ignored, as in Kafka: add the mechanism to the prefix, e.g. "+JAASKey(listener, "PLAIN"))
	}
	return out, nil
}

// listenerValue is the parsed value of base under prefix when that is set
// and else — when prefix is a listener's own — the broker-wide value; the
// key it came from is returned too. Under a mechanism prefix (two dots
// after "listener.name.") an unset key yields nil, so the caller can fall
// back to the listener's value.
func (c *Config) listenerValue(prefix, base string) (any, string, error) {
	key := brokerKeys[base]
	if raw, ok := c.Explicit[prefix+base]; ok {
		v, err := key.parse(raw)
		if err != nil {
			var ve *ValueError
			if errors.As(err, &ve) {
				ve.Key = prefix + base
			}
			return nil, prefix + base, err
		}
		return v, prefix + base, nil
	}
	if strings.Count(strings.TrimPrefix(prefix, "listener.name."), ".") > 1 {
		return nil, "", nil
	}
	return c.values[base], base, nil
}
