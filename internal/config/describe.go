package config

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Entry is one config in a DescribeConfigs response.
type Entry struct {
	Name          string
	Value         *string // nil: no value (null default) or sensitive
	Source        kmsg.ConfigSource
	ReadOnly      bool
	IsSensitive   bool
	Type          kmsg.ConfigType
	Documentation string
	// Synonyms are the sources of the value in precedence order, first
	// the one in effect (Kafka's include_synonyms). Source is Synonyms[0]'s.
	Synonyms []Synonym
}

// Synonym is one place a config's value may come from.
type Synonym struct {
	Name   string
	Value  *string
	Source kmsg.ConfigSource
}

// Describe returns every known, non-internal broker key with its value and
// where it came from, sorted by name, as a broker answers DescribeConfigs
// for itself. As in Kafka, a key whose synonym is set reports that
// synonym's source: log.retention.ms is STATIC_BROKER_CONFIG when only
// log.retention.hours is in the file.
func (c *Config) Describe() []Entry {
	var out []Entry
	for _, key := range BrokerKeys() {
		if key.Internal {
			continue
		}
		syn := c.synonyms(brokerSynonyms(key.Name), key.Sensitive())
		e := Entry{
			Name:          key.Name,
			Source:        kmsg.ConfigSourceDefaultConfig,
			ReadOnly:      key.ReadOnly(),
			IsSensitive:   key.Sensitive(),
			Type:          kmsg.ConfigType(key.Type),
			Documentation: key.Doc,
			Synonyms:      syn,
		}
		if v, ok := c.values[key.Name]; ok && !key.Sensitive() {
			e.Value = ptr(format(key.Type, v))
		}
		if len(syn) > 0 {
			e.Source = syn[0].Source
		}
		out = append(out, e)
	}
	out = append(out, c.describeListenerKeys()...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DescribeTopic returns every topic key of a topic with the given overrides,
// sorted by name. Overrides report DYNAMIC_TOPIC_CONFIG; otherwise the
// source is that of the broker synonym in effect (DYNAMIC_BROKER_CONFIG or
// DYNAMIC_DEFAULT_BROKER_CONFIG when set dynamically, STATIC_BROKER_CONFIG
// when set in the file, DEFAULT_CONFIG when Kafka's default applies), as Kafka
// reports it. Overrides are assumed valid (see ValidateTopicConfig); unknown
// ones are skipped.
func (c *Config) DescribeTopic(overrides map[string]string) []Entry {
	var out []Entry
	for _, key := range TopicKeys() {
		e := Entry{
			Name:          key.Name,
			Source:        kmsg.ConfigSourceDefaultConfig,
			IsSensitive:   key.Sensitive(),
			Type:          kmsg.ConfigType(key.Type),
			Documentation: key.Doc,
		}
		v := c.topicDefault(key)
		var syn []Synonym
		if raw, ok := overrides[key.Name]; ok {
			if x, err := key.parse(raw); err == nil {
				v = x
				syn = append(syn, Synonym{Name: key.Name, Value: ptr(format(key.Type, x)), Source: kmsg.ConfigSourceDynamicTopicConfig})
			}
		}
		if key.BrokerKey != "" {
			syn = append(syn, c.synonyms(brokerSynonyms(key.BrokerKey), key.Sensitive())...)
		}
		if !key.Sensitive() {
			e.Value = ptr(format(key.Type, v))
		}
		if len(syn) > 0 {
			e.Source = syn[0].Source
		}
		e.Synonyms = syn
		out = append(out, e)
	}
	return out
}

// synonyms lists the sources of a broker key's value in precedence order:
// dynamic per-broker values, cluster defaults, static values, then Kafka's
// defaults, each over every synonym name in order (Kafka's
// ConfigHelper.configSynonyms).
func (c *Config) synonyms(names []string, sensitive bool) []Synonym {
	return c.synonymsAt(names, sensitive, true)
}

// synonymsAt is synonyms; perBroker false leaves out per-broker dynamic
// values, for describing the cluster-default resource.
func (c *Config) synonymsAt(names []string, sensitive, perBroker bool) []Synonym {
	out := c.dynamicSynonyms(names, sensitive, perBroker)
	value := func(key *Key, v any) *string {
		if sensitive || key.Sensitive() {
			return nil
		}
		return ptr(format(key.Type, v))
	}
	for _, name := range names {
		if c.IsSet(name) {
			key := brokerKeys[name]
			static, err := key.parse(c.Explicit[name])
			if err != nil {
				continue
			}
			out = append(out, Synonym{Name: name, Value: value(key, static), Source: kmsg.ConfigSourceStaticBrokerConfig})
		}
	}
	for _, name := range names {
		if key := brokerKeys[name]; key.HasDefault {
			d, _ := key.parse(key.Default)
			out = append(out, Synonym{Name: name, Value: value(key, d), Source: kmsg.ConfigSourceDefaultConfig})
		}
	}
	return out
}

func ptr(s string) *string { return &s }

// DescribeMap is a convenience for tests and tools: name → value ("" for nil).
func DescribeMap(entries []Entry) map[string]string {
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		if e.Value != nil {
			m[e.Name] = *e.Value
		} else {
			m[e.Name] = ""
		}
	}
	return m
}
