package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Listener-prefixed keys and the ssl.* settings of a listener.
//
// Kafka lets a key be set for one listener as
// listener.name.<listener, lower case>.<key>; for that listener the
// prefixed value wins over the plain key, whatever the sources of the two
// (Kafka's valuesWithPrefixOverride). A prefixed key whose key is known
// is parsed and validated like the key itself, so a bad value stops
// start-up naming the prefixed key. Dynamically, the key store and trust
// store keys may only be changed with the listener prefix (Kafka's
// DynamicBrokerConfig rule), and every prefixed key is per-broker.

// listenerKeyPattern is Kafka's ListenerConfigRegex.
var listenerKeyPattern = regexp.MustCompile(`^listener\.name\.([^.]*)\.(.*)$`)

// listenerKey returns the definition of a listener-prefixed key: the
// definition of the key it overrides, under the prefixed name.
func listenerKey(name string) (key *Key, listener string, ok bool) {
	m := listenerKeyPattern.FindStringSubmatch(name)
	if m == nil {
		return nil, "", false
	}
	base, ok := brokerKeys[m[2]]
	if !ok {
		return nil, "", false
	}
	k := *base
	k.Name = name
	return &k, m[1], true
}

// listenerOnlySecurityKeys may be changed dynamically only with a
// listener prefix (Kafka's SslConfigs.RECONFIGURABLE_CONFIGS).
var listenerOnlySecurityKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
}

// listenerKeyWarnings warns about prefixed keys Kafka would ignore: a
// prefix not in lower case, or naming no listener of this node.
func (c *Config) listenerKeyWarnings() []string {
	known := map[string]bool{}
	for name := range c.ListenerSecurityProtocolMap {
		known[strings.ToLower(name)] = true
	}
	for _, l := range c.Listeners {
		known[strings.ToLower(l.Name)] = true
	}
	var out []string
	for _, name := range sortedNames(c.Explicit) {
		m := listenerKeyPattern.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		switch {
		case m[1] != strings.ToLower(m[1]):
			out = append(out, fmt.Sprintf("config %s ignored: listener prefixes are lower case (listener.name.%s.)", name, strings.ToLower(m[1])))
		case !known[m[1]]:
			out = append(out, fmt.Sprintf("config %s ignored: no listener %s in listeners or listener.security.protocol.map", name, strings.ToUpper(m[1])))
		}
	}
	return out
}

// SSL is the ssl.* configuration of one listener, each value resolved
// with the listener prefix first. Empty strings are unset keys.
type SSL struct {
	Listener string

	KeystoreType, KeystoreLocation, KeystorePassword, KeyPassword string
	KeystoreKey, KeystoreCertificateChain                         string
	TruststoreType, TruststoreLocation, TruststorePassword        string
	TruststoreCertificates                                        string

	ClientAuth                      string
	Protocol                        string
	EnabledProtocols                []string
	CipherSuites                    []string
	EndpointIdentificationAlgorithm string
	PrincipalMappingRules           string
	AllowDNChanges, AllowSANChanges bool
	// Provider and EngineFactoryClass are ssl.provider and
	// ssl.engine.factory.class: Java plug-ins Samsa cannot load, so a
	// value set for them must stop start-up.
	Provider, EngineFactoryClass string

	prefix   string          // listener.name.<l>. or schema.registry.
	prefixed map[string]bool // keys set with the prefix
}

// KeyName is the name a key of this listener was set under: the
// listener-prefixed name when the prefix set it, else the key itself.
func (s SSL) KeyName(base string) string {
	if s.prefixed[base] {
		return s.prefix + base
	}
	return base
}

// ListenerPrefix is Kafka's config prefix of a listener:
// "listener.name.<name in lower case>.".
func ListenerPrefix(listener string) string {
	return "listener.name." + strings.ToLower(listener) + "."
}

// ListenerSSL returns the ssl.* configuration of a listener (static and
// dynamic values as this Config holds them).
func (c *Config) ListenerSSL(listener string) SSL {
	return c.prefixedSSL(strings.ToUpper(listener), ListenerPrefix(listener))
}

// prefixedSSL resolves each ssl.* key with prefix first.
func (c *Config) prefixedSSL(name, prefix string) SSL {
	s := SSL{Listener: name, prefix: prefix, prefixed: map[string]bool{}}
	get := func(base string) any {
		if v, ok := c.values[prefix+base]; ok {
			s.prefixed[base] = true
			return v
		}
		return c.values[base]
	}
	str := func(base string) string { v, _ := get(base).(string); return v }
	list := func(base string) []string { v, _ := get(base).([]string); return slices.Clone(v) }
	flag := func(base string) bool { v, _ := get(base).(bool); return v }
	s.KeystoreType = str("ssl.keystore.type")
	s.KeystoreLocation = str("ssl.keystore.location")
	s.KeystorePassword = str("ssl.keystore.password")
	s.KeyPassword = str("ssl.key.password")
	s.KeystoreKey = str("ssl.keystore.key")
	s.KeystoreCertificateChain = str("ssl.keystore.certificate.chain")
	s.TruststoreType = str("ssl.truststore.type")
	s.TruststoreLocation = str("ssl.truststore.location")
	s.TruststorePassword = str("ssl.truststore.password")
	s.TruststoreCertificates = str("ssl.truststore.certificates")
	s.ClientAuth = str("ssl.client.auth")
	s.Protocol = str("ssl.protocol")
	s.EnabledProtocols = list("ssl.enabled.protocols")
	s.CipherSuites = list("ssl.cipher.suites")
	s.EndpointIdentificationAlgorithm = str("ssl.endpoint.identification.algorithm")
	s.PrincipalMappingRules = str("ssl.principal.mapping.rules")
	s.AllowDNChanges = flag("ssl.allow.dn.changes")
	s.AllowSANChanges = flag("ssl.allow.san.changes")
	s.Provider = str("ssl.provider")
	s.EngineFactoryClass = str("ssl.engine.factory.class")
	return s
}

// describeListenerKeys are the DescribeConfigs entries of the
// listener-prefixed keys that are set, statically or dynamically, as
// Kafka lists them among a broker's configs: each with the prefixed name
// and the plain key as synonyms.
func (c *Config) describeListenerKeys() []Entry {
	names := map[string]bool{}
	for name := range c.Explicit {
		names[name] = true
	}
	for name := range c.dynBroker {
		names[name] = true
	}
	var out []Entry
	for _, name := range sortedNames(mapOf(names)) {
		key, _, ok := listenerKey(name)
		if !ok {
			continue
		}
		base := listenerKeyPattern.FindStringSubmatch(name)[2]
		var syn []Synonym
		value := func(raw string) *string {
			if key.Sensitive() {
				return nil
			}
			v, err := key.parse(raw)
			if err != nil {
				return nil
			}
			return ptr(format(key.Type, v))
		}
		if raw, ok := c.dynBroker[name]; ok {
			syn = append(syn, Synonym{Name: name, Value: value(raw), Source: kmsg.ConfigSourceDynamicBrokerConfig})
		}
		if raw, ok := c.Explicit[name]; ok {
			syn = append(syn, Synonym{Name: name, Value: value(raw), Source: kmsg.ConfigSourceStaticBrokerConfig})
		}
		syn = append(syn, c.synonyms([]string{base}, key.Sensitive())...)
		e := Entry{Name: name, Source: syn[0].Source, ReadOnly: key.ReadOnly(), IsSensitive: key.Sensitive(),
			Type: kmsg.ConfigType(key.Type), Documentation: key.Doc, Synonyms: syn, Value: syn[0].Value}
		out = append(out, e)
	}
	return out
}

func mapOf(set map[string]bool) map[string]string {
	m := make(map[string]string, len(set))
	for k := range set {
		m[k] = ""
	}
	return m
}
