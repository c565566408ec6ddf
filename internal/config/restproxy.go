package config

import (
	"fmt"
	"slices"
)

// restProxyPrefix prefixes the REST Proxy's keys in a node's
// configuration: rest.proxy. and the name Confluent's proxy gives the key
// in its own kafka-rest.properties (listeners, ssl.*, authentication.*,
// client.*).
const restProxyPrefix = "rest.proxy."

// withRestProxyKeys adds Samsa's own keys of the REST Proxy that `samsa
// server` runs (rest.proxy.listeners is among the broker keys); internal,
// so not described as Kafka broker keys. Each rest.proxy.ssl.* key has
// the type of the ssl.* key of list it overrides.
func withRestProxyKeys(list []*Key) []*Key {
	keys := []*Key{
		internal(k("rest.proxy.authentication.method", String, "NONE", oneOf{"NONE", "BASIC"}, Medium, ReadOnly, "BASIC requires HTTP basic authentication of every REST Proxy request against rest.proxy.authentication.users.file (Confluent's authentication.method).")),
		internal(k("rest.proxy.authentication.realm", String, "KafkaRest", nil, Low, ReadOnly, "Realm named in the REST Proxy's 401 challenge (Confluent's authentication.realm).")),
		internal(k("rest.proxy.authentication.roles", List, "*", nil, Low, ReadOnly, "Roles a user must hold one of; * allows any (Confluent's authentication.roles).")),
		internal(k("rest.proxy.authentication.users.file", String, null, nil, Medium, ReadOnly, "Users file of the REST Proxy's basic authentication, one `name: password[,role ...]` a line (the format of the file Confluent's PropertyFileLoginModule reads).")),
		internal(k("rest.proxy.client.security.protocol", String, null, securityProtocols, Medium, ReadOnly, "Protocol of the node's broker listener the REST Proxy connects to (Confluent's client.security.protocol); unset: the first PLAINTEXT listener, else SSL, SASL_PLAINTEXT, SASL_SSL (a SASL one with principal propagation).")),
		internal(k("rest.proxy.client.sasl.mechanism", String, null, nil, Medium, ReadOnly, "SASL mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) the REST Proxy logs in with on a SASL listener (Confluent's client.sasl.mechanism); unset: sasl.mechanism.inter.broker.protocol if the listener enables it, else the first of those it enables.")),
		internal(k("rest.proxy.client.sasl.jaas.config", Password, null, nil, Medium, ReadOnly, "JAAS login of the REST Proxy's client, with its username and password options (Confluent's client.sasl.jaas.config); unset: the node's own credentials of the listener and mechanism.")),
		internal(k("rest.proxy.schema.registry.basic.auth.user.info", Password, null, nil, Medium, ReadOnly, "user:password the REST Proxy gives the node's Schema Registry when it asks for basic authentication (Confluent's schema.registry.basic.auth.user.info); unset: such a registry is not used and the avro, jsonschema and protobuf formats are refused.")),
		internal(k("rest.proxy.confluent.rest.auth.propagate.method", String, "NONE", oneOf{"NONE", "JETTY_AUTH"}, Medium, ReadOnly, "JETTY_AUTH: principal propagation; each user of the basic authentication reaches the cluster as its own principal, logging in to a SASL listener with its name and password and rest.proxy.client.sasl.mechanism, so the broker's ACLs apply to it (Confluent's confluent.rest.auth.propagate.method). NONE: every request uses the proxy's own login.")),
	}
	for _, base := range schemaRegistrySSLKeys {
		i := slices.IndexFunc(list, func(k *Key) bool { return k.Name == base })
		kk := list[i]
		keys = append(keys, internal(k(restProxyPrefix+base, kk.Type, null, kk.Validator, kk.Importance, ReadOnly,
			"The REST Proxy's "+base+" for its https listeners; unset, "+base+" applies.")))
	}
	return append(list, keys...)
}

// RestProxyListeners returns the endpoints of rest.proxy.listeners (each
// written http://host:port or https://host:port), or an error naming the
// first that is neither.
func (c *Config) RestProxyListeners() ([]RegistryListener, error) {
	var out []RegistryListener
	for _, l := range c.list("rest.proxy.listeners") {
		rl, err := ParseRegistryListener(l)
		if err != nil {
			return nil, fmt.Errorf("rest.proxy.listeners: %w", err)
		}
		out = append(out, rl)
	}
	return out, nil
}

// RestProxySSL is the ssl.* configuration of the REST Proxy's https
// listeners: each rest.proxy.ssl.* key over the plain ssl.* key.
func (c *Config) RestProxySSL() SSL {
	return c.prefixedSSL("REST_PROXY", restProxyPrefix)
}

// RestProxyAuth is the REST Proxy's authentication settings: method NONE
// or BASIC, the realm, the permitted roles, the users file, and whether
// principals are propagated (rest.proxy.confluent.rest.auth.propagate.method=JETTY_AUTH).
func (c *Config) RestProxyAuth() (method, realm string, roles []string, usersFile string, propagate bool) {
	return c.str("rest.proxy.authentication.method"), c.str("rest.proxy.authentication.realm"),
		c.list("rest.proxy.authentication.roles"), c.str("rest.proxy.authentication.users.file"),
		c.str("rest.proxy.confluent.rest.auth.propagate.method") == "JETTY_AUTH"
}

// RestProxyKafkaClient is how the REST Proxy connects to its node:
// rest.proxy.client.security.protocol, .sasl.mechanism and
// .sasl.jaas.config, "" when unset.
func (c *Config) RestProxyKafkaClient() (protocol, mechanism, jaas string) {
	return c.str("rest.proxy.client.security.protocol"), c.str("rest.proxy.client.sasl.mechanism"), c.str("rest.proxy.client.sasl.jaas.config")
}

// RestProxyRegistryUserInfo is rest.proxy.schema.registry.basic.auth.user.info,
// "" when unset.
func (c *Config) RestProxyRegistryUserInfo() string {
	return c.str("rest.proxy.schema.registry.basic.auth.user.info")
}
