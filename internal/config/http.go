package config

import (
	"fmt"
	"slices"
)

// DefaultHTTPListener is the endpoint `samsa server` serves /metrics,
// /healthz and /readyz on when it runs from its embedded defaults and
// http.listeners is not set (Redpanda's admin port).
const DefaultHTTPListener = "http://127.0.0.1:9644"

// httpPrefix prefixes the ssl.* keys of the node's https listeners
// (http.listeners), as schema.registry. prefixes the registry's.
const httpPrefix = "http."

// httpEndpoints accepts a list of http://host:port or https://host:port
// endpoints.
type httpEndpoints struct{}

func (httpEndpoints) valid(v any) bool {
	for _, e := range v.([]string) {
		if _, err := ParseRegistryListener(e); err != nil {
			return false
		}
	}
	return true
}

func (httpEndpoints) want() string {
	return "a comma-separated list of http://host:port or https://host:port endpoints"
}

// withHTTPKeys adds Samsa's own keys of the node's HTTP listener
// (internal/httpapi: /metrics, /healthz, /readyz) to the broker keys;
// internal, so not described as Kafka broker keys. Each http.ssl.* key
// has the type of the ssl.* key it overrides.
func withHTTPKeys(list []*Key) []*Key {
	keys := []*Key{
		internal(k("http.listeners", List, "", httpEndpoints{}, Medium, ReadOnly, "http://host:port or https://host:port endpoints on which this node serves Prometheus metrics (/metrics) and its health (/healthz, /readyz); empty: none. `samsa server` without --config serves "+DefaultHTTPListener+" unless this key is given.")),
		internal(k("http.authentication.method", String, "NONE", oneOf{"NONE", "BASIC"}, Medium, ReadOnly, "BASIC requires HTTP basic authentication of every request to http.listeners (/healthz excepted) against http.authentication.users.file.")),
		internal(k("http.authentication.realm", String, "Samsa", nil, Low, ReadOnly, "Realm named in the 401 challenge of http.listeners.")),
		internal(k("http.authentication.roles", List, "*", nil, Low, ReadOnly, "Roles a user of http.listeners must hold one of; * allows any.")),
		internal(k("http.authentication.users.file", String, null, nil, Medium, ReadOnly, "Users file of the basic authentication of http.listeners, one `name: password[,role ...]` a line (the format schema.registry.authentication.users.file reads).")),
	}
	for _, base := range schemaRegistrySSLKeys {
		i := slices.IndexFunc(list, func(k *Key) bool { return k.Name == base })
		kk := list[i]
		keys = append(keys, internal(k(httpPrefix+base, kk.Type, null, kk.Validator, kk.Importance, ReadOnly,
			"The "+base+" of the https endpoints of http.listeners; unset, "+base+" applies.")))
	}
	return append(list, keys...)
}

// HTTPListeners returns the endpoints of http.listeners.
func (c *Config) HTTPListeners() ([]RegistryListener, error) {
	var out []RegistryListener
	for _, l := range c.list("http.listeners") {
		rl, err := ParseRegistryListener(l)
		if err != nil {
			return nil, fmt.Errorf("http.listeners: %w", err)
		}
		out = append(out, rl)
	}
	return out, nil
}

// HTTPSSL is the ssl.* configuration of the https endpoints of
// http.listeners: each http.ssl.* key over the plain ssl.* key.
func (c *Config) HTTPSSL() SSL {
	return c.prefixedSSL("HTTP", httpPrefix)
}

// HTTPAuth is the authentication of http.listeners: method NONE or
// BASIC, the realm, the permitted roles and the users file.
func (c *Config) HTTPAuth() (method, realm string, roles []string, usersFile string) {
	return c.str("http.authentication.method"), c.str("http.authentication.realm"),
		c.list("http.authentication.roles"), c.str("http.authentication.users.file")
}
