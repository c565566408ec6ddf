package config

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Dynamic broker configuration (Kafka's DynamicBrokerConfig): values set
// through AlterConfigs on a BROKER resource and kept in the metadata log,
// either for one broker (resource name = node id) or as the cluster-wide
// default (resource name ""). They take precedence over server.properties:
// per-broker, then cluster default, then static, then Kafka's default.

// ErrUnknownBrokerConfig is wrapped by errors for broker keys that do not
// exist.
var ErrUnknownBrokerConfig = errors.New("unknown broker config")

// WithDynamic returns a new Config: c with the dynamic per-broker and
// cluster-default values layered on top. c itself is not changed, so a
// Config stays immutable and may be shared between goroutines.
//
// Keys that are unknown, read-only, per-broker-only but given as a cluster
// default, or whose value does not parse are skipped: the returned Config is
// always usable, and the error (nil when nothing was skipped) names every
// skipped key. The controller validates before writing, so a skipped key
// means the rules changed under a value already in the log; Kafka likewise
// logs and ignores such values rather than refusing to start.
func (c *Config) WithDynamic(perBroker, clusterDefault map[string]string) (*Config, error) {
	n := *c
	n.values = maps.Clone(c.values)
	n.dynBroker, n.dynDefault = map[string]string{}, map[string]string{}
	var errs []error
	apply := func(m map[string]string, into map[string]string, isDefault bool) {
		for _, name := range sortedNames(m) {
			v, err := parseDynamic(name, m[name], isDefault)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			n.values[name] = v
			into[name] = m[name]
		}
	}
	// Later wins: the per-broker value overrides the cluster default.
	apply(clusterDefault, n.dynDefault, true)
	apply(perBroker, n.dynBroker, false)
	// fill cannot fail on values already accepted at start-up; a dynamic
	// value it rejects (say, listeners) falls back to the static config.
	if err := n.fill(); err != nil {
		errs = append(errs, err)
		return c, errors.Join(errs...)
	}
	return &n, errors.Join(errs...)
}

// DynamicBrokerConfigs returns copies of the per-broker and cluster-default
// dynamic values in effect (empty for a Config not made by WithDynamic).
func (c *Config) DynamicBrokerConfigs() (perBroker, clusterDefault map[string]string) {
	return maps.Clone(c.dynBroker), maps.Clone(c.dynDefault)
}

func parseDynamic(name, value string, clusterDefault bool) (any, error) {
	key, ok := brokerKeys[name]
	if !ok {
		lk, _, isListener := listenerKey(name)
		if !isListener {
			return nil, fmt.Errorf("%w %s", ErrUnknownBrokerConfig, name)
		}
		if lk.Dynamic == ReadOnly {
			return nil, fmt.Errorf("%s cannot be updated dynamically", name)
		}
		if clusterDefault {
			return nil, fmt.Errorf("%s can only be updated per broker", name)
		}
		return lk.parse(value)
	}
	if key.Dynamic == ReadOnly {
		return nil, fmt.Errorf("%s cannot be updated dynamically", name)
	}
	if clusterDefault && key.Dynamic == PerBroker {
		return nil, fmt.Errorf("%s can only be updated per broker", name)
	}
	return key.parse(value)
}

// startupListenerKeys are dynamic in Kafka's key table (DescribeConfigs
// says so) but refused at runtime: a KRaft broker's listeners are in its
// registration, which Kafka refuses to alter ("Advertised listeners
// cannot be altered when using a Raft-based metadata quorum"), and Samsa
// binds its listeners only at start-up, so even the changes Kafka lets
// through (a listener added while advertised.listeners stays) would be
// stored and never applied.
var startupListenerKeys = []string{"listeners", "advertised.listeners", "listener.security.protocol.map"}

// ValidateDynamicBrokerConfigs checks the complete set of dynamic configs a
// BROKER resource would have, as Kafka's DynamicBrokerConfig.validateConfigs
// does: every key known and dynamic, not per-broker-only when clusterDefault
// (resource name ""), not a listener key (startupListenerKeys), and every
// value valid. The message names the keys in Kafka's words, e.g. "Cannot
// update these configs dynamically: [node.id]".
func ValidateDynamicBrokerConfigs(configs map[string]string, clusterDefault bool) error {
	var unknown, readOnly, registered, unprefixed, perBroker []string
	for _, name := range sortedNames(configs) {
		key, ok := brokerKeys[name]
		prefixed := false
		if !ok {
			key, _, ok = listenerKey(name)
			prefixed = ok
		}
		switch {
		case !ok:
			unknown = append(unknown, name)
		case key.Dynamic == ReadOnly:
			readOnly = append(readOnly, name)
		case !prefixed && contains(startupListenerKeys, name):
			registered = append(registered, name)
		case !prefixed && contains(listenerOnlySecurityKeys, name):
			unprefixed = append(unprefixed, name)
		case clusterDefault && (prefixed || key.Dynamic == PerBroker):
			perBroker = append(perBroker, name)
		}
	}
	switch {
	case len(unknown) > 0:
		// Kafka silently stores unknown broker keys; we refuse them, as a
		// typo stored in the log would otherwise look like it took effect.
		return fmt.Errorf("Unknown broker configs: %s", javaSet(unknown))
	case len(readOnly) > 0:
		return fmt.Errorf("Cannot update these configs dynamically: %s", javaSet(readOnly))
	case len(registered) > 0:
		return fmt.Errorf("Cannot update these configs dynamically: %s: a broker binds and registers its listeners at start-up "+
			"(a KRaft broker's advertised listeners cannot be altered); change them in the broker's properties file and restart it",
			javaSet(registered))
	case len(unprefixed) > 0:
		return fmt.Errorf("These security configs can be dynamically updated only per-listener using the listener prefix: %s", javaSet(unprefixed))
	case len(perBroker) > 0:
		return fmt.Errorf("Cannot update these configs at default cluster level, broker id must be specified: %s", javaSet(perBroker))
	}
	var errs []error
	for _, name := range sortedNames(configs) {
		key, ok := brokerKeys[name]
		if !ok {
			key, _, _ = listenerKey(name)
		}
		if _, err := key.parse(configs[name]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// javaSet formats names as Java prints a collection, as Kafka's messages do.
func javaSet(names []string) string { return "[" + strings.Join(names, ", ") + "]" }

// ListDefault reports whether a key of a resource type (2 topic, 4 broker)
// is a LIST, which IncrementalAlterConfigs APPEND and SUBTRACT need, and
// Kafka's default for it: the list APPEND extends when nothing is set.
func ListDefault(resourceType int8, name string) (def string, isList bool) {
	var key *Key
	switch resourceType {
	case int8(kmsg.ConfigResourceTypeTopic):
		if tk, ok := topicKeys[name]; ok {
			key = &tk.Key
		}
	case int8(kmsg.ConfigResourceTypeBroker):
		key = brokerKeys[name]
	case int8(kmsg.ConfigResourceTypeGroupConfig):
		if gk, ok := groupKeys[name]; ok && gk.typ == List {
			key = brokerKeys[gk.broker]
		}
	}
	if key == nil || key.Type != List {
		return "", false
	}
	if !key.HasDefault {
		return "", true
	}
	return key.Default, true
}

// DescribeDefaults returns the cluster-default dynamic configs, sorted by
// name, as Kafka answers DescribeConfigs for the BROKER resource "": only
// the keys set at that level, with the synonyms below it (no per-broker).
func (c *Config) DescribeDefaults() []Entry {
	var out []Entry
	for _, name := range sortedNames(c.dynDefault) {
		key := brokerKeys[name]
		e := Entry{
			Name:          name,
			Source:        kmsg.ConfigSourceDynamicDefaultBrokerConfig,
			ReadOnly:      key.ReadOnly(),
			IsSensitive:   key.Sensitive(),
			Type:          kmsg.ConfigType(key.Type),
			Documentation: key.Doc,
			Synonyms:      c.synonymsAt(brokerSynonyms(name), key.Sensitive(), false),
		}
		if !key.Sensitive() {
			if v, err := key.parse(c.dynDefault[name]); err == nil {
				e.Value = ptr(format(key.Type, v))
			}
		}
		out = append(out, e)
	}
	return out
}

// BrokerResourceName is the BROKER resource name of a node id.
func BrokerResourceName(nodeID int32) string { return strconv.Itoa(int(nodeID)) }

// dynamicSynonyms are the dynamic sources of the synonyms names, per-broker
// ones first, as Kafka's ConfigHelper.configSynonyms lists them.
func (c *Config) dynamicSynonyms(names []string, sensitive, perBroker bool) []Synonym {
	var out []Synonym
	add := func(m map[string]string, src kmsg.ConfigSource) {
		for _, name := range names {
			raw, ok := m[name]
			if !ok {
				continue
			}
			key := brokerKeys[name]
			s := Synonym{Name: name, Source: src}
			if !sensitive && !key.Sensitive() {
				if v, err := key.parse(raw); err == nil {
					s.Value = ptr(format(key.Type, v))
				}
			}
			out = append(out, s)
		}
	}
	if perBroker {
		add(c.dynBroker, kmsg.ConfigSourceDynamicBrokerConfig)
	}
	add(c.dynDefault, kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	return out
}
