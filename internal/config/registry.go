package config

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// RegistryListener is one endpoint of schema.registry.listeners.
type RegistryListener struct {
	Addr string // host:port
	TLS  bool   // https://
}

// URL is the endpoint as written: scheme://host:port.
func (l RegistryListener) URL() string {
	if l.TLS {
		return "https://" + l.Addr
	}
	return "http://" + l.Addr
}

// ParseRegistryListener reads one http://host:port or https://host:port
// endpoint.
func ParseRegistryListener(s string) (RegistryListener, error) {
	s = strings.TrimSpace(s)
	addr, ok := strings.CutPrefix(s, "http://")
	tls := false
	if !ok {
		addr, ok = strings.CutPrefix(s, "https://")
		tls = true
	}
	if _, _, err := net.SplitHostPort(addr); !ok || err != nil {
		return RegistryListener{}, fmt.Errorf("%q is not http://host:port or https://host:port", s)
	}
	return RegistryListener{Addr: addr, TLS: tls}, nil
}

// SchemaRegistryListeners returns the endpoints of
// schema.registry.listeners (each written http://host:port or
// https://host:port), or an error naming the first that is neither.
func (c *Config) SchemaRegistryListeners() ([]RegistryListener, error) {
	v, _ := c.Value("schema.registry.listeners")
	list, _ := v.([]string)
	var out []RegistryListener
	for _, l := range list {
		rl, err := ParseRegistryListener(l)
		if err != nil {
			return nil, fmt.Errorf("schema.registry.listeners: %w", err)
		}
		out = append(out, rl)
	}
	return out, nil
}

// schemaRegistryPrefix prefixes the ssl.* keys of the registry's https
// listeners, as listener.name.<l>. prefixes a broker listener's.
const schemaRegistryPrefix = "schema.registry."

// schemaRegistrySSLKeys are the ssl.* keys the registry's https listeners
// and its forwarding client read with the schema.registry. prefix.
var schemaRegistrySSLKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.client.auth", "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites",
	"ssl.endpoint.identification.algorithm",
}

// withSchemaRegistryKeys adds Samsa's own keys of the registry that
// `samsa server` runs to the broker keys; internal, so not described as
// Kafka broker keys. Each schema.registry.ssl.* key has the type of the
// ssl.* key of list it overrides.
func withSchemaRegistryKeys(list []*Key) []*Key {
	keys := []*Key{
		internal(k("schema.registry.listeners", List, "", nil, Medium, ReadOnly, "http://host:port or https://host:port endpoints on which this node serves the Schema Registry (Confluent's REST API, schemas in _schemas); empty: no registry. The embedded single-node defaults set http://127.0.0.1:8081.")),
		internal(k("schema.registry.authentication.method", String, "NONE", oneOf{"NONE", "BASIC"}, Medium, ReadOnly, "BASIC requires HTTP basic authentication of every registry request against schema.registry.authentication.users.file (Confluent's authentication.method).")),
		internal(k("schema.registry.authentication.realm", String, "SchemaRegistry", nil, Low, ReadOnly, "Realm named in the registry's 401 challenge (Confluent's authentication.realm).")),
		internal(k("schema.registry.authentication.roles", List, "*", nil, Low, ReadOnly, "Roles a user must hold one of; * allows any (Confluent's authentication.roles).")),
		internal(k("schema.registry.kafkastore.sasl.mechanism", String, null, nil, Medium, ReadOnly, "SASL mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) the registry logs in to this node's SASL listener with when the node has no PLAINTEXT one (Confluent's kafkastore.sasl.mechanism); unset: sasl.mechanism.inter.broker.protocol if the listener enables it, else the first of those it enables.")),
		internal(k("schema.registry.kafkastore.sasl.jaas.config", Password, null, nil, Medium, ReadOnly, "JAAS login of the registry's client, with its username and password options (Confluent's kafkastore.sasl.jaas.config); unset: the node's own credentials of the listener and mechanism (listener.name.<l>.<mechanism>.sasl.jaas.config).")),
		internal(k("schema.registry.authentication.users.file", String, null, nil, Medium, ReadOnly, "Users file of basic authentication, one `name: password[,role ...]` a line (the format of the file Confluent's PropertyFileLoginModule reads).")),
	}
	for _, base := range schemaRegistrySSLKeys {
		i := slices.IndexFunc(list, func(k *Key) bool { return k.Name == base })
		kk := list[i]
		keys = append(keys, internal(k(schemaRegistryPrefix+base, kk.Type, null, kk.Validator, kk.Importance, ReadOnly,
			"The registry's "+base+" for its https listeners and the https URLs it forwards writes to; unset, "+base+" applies.")))
	}
	return append(list, keys...)
}

// SchemaRegistrySSL is the ssl.* configuration of the registry's https
// listeners: each schema.registry.ssl.* key over the plain ssl.* key.
func (c *Config) SchemaRegistrySSL() SSL {
	return c.prefixedSSL("SCHEMA_REGISTRY", schemaRegistryPrefix)
}

// SchemaRegistryAuth is the registry's authentication settings: method
// NONE or BASIC, the realm, the permitted roles and the users file.
func (c *Config) SchemaRegistryAuth() (method, realm string, roles []string, usersFile string) {
	return c.str("schema.registry.authentication.method"), c.str("schema.registry.authentication.realm"),
		c.list("schema.registry.authentication.roles"), c.str("schema.registry.authentication.users.file")
}

// SchemaRegistryKafkaLogin is the SASL login the registry's client is
// configured with: schema.registry.kafkastore.sasl.mechanism and
// .sasl.jaas.config, "" when unset.
func (c *Config) SchemaRegistryKafkaLogin() (mechanism, jaas string) {
	return c.str("schema.registry.kafkastore.sasl.mechanism"), c.str("schema.registry.kafkastore.sasl.jaas.config")
}
