// Package config owns every configuration key Samsa understands, under
// Apache Kafka's own names: the broker keys of Kafka's KafkaConfig and the
// topic keys of Kafka's LogConfig/TopicConfig.
//
// Contract:
//
//   - A stock Apache Kafka 4.x KRaft server.properties loads unchanged (see
//     testdata/server.properties). Every key it sets is known; none warns.
//   - Load reads Java .properties syntax (comments with # and !, separators
//     '=', ':' or whitespace, backslash continuation, \uXXXX and other
//     escapes). Unlike java.util.Properties, which Kafka feeds ISO-8859-1, we
//     read the file as UTF-8: non-ASCII config values are rare and UTF-8 is
//     what editors write today.
//   - Overrides ("key=value", as given to --override) win over the file.
//   - Unknown keys produce a warning naming the key, never an error, because
//     Kafka only logs them too; a typo must not stop a broker.
//   - An invalid value stops start-up with an error naming the key, the value
//     and what is wanted: `invalid value "abc" for log.retention.ms: want a long`.
//   - Cross-key checks follow Kafka's KafkaConfig for KRaft mode (roles,
//     node.id, controller listeners, quorum, inter-broker listener, security
//     protocol map), keeping only those that stop a misconfigured node.
//
// Every key carries Kafka's type, default, validator, documentation,
// ConfigDef importance and dynamic-update mode (read-only, per-broker or
// cluster-wide, as listed in Kafka's DynamicBrokerConfig). Describe and
// DescribeTopic produce DescribeConfigs entries with Kafka's ConfigSource and
// ConfigType numbers (kmsg.ConfigSource, kmsg.ConfigType) and Kafka's synonym
// rules, so the source reported for retention.ms when server.properties sets
// log.retention.hours is STATIC_BROKER_CONFIG, exactly as Kafka reports it.
//
// With no file, Load uses Samsa's embedded defaults: a single combined node
// on loopback (see EmbeddedDefaults). They stand in for a server.properties,
// so Describe reports the keys they set as STATIC_BROKER_CONFIG.
//
// Dynamic broker configuration: WithDynamic layers the per-broker and
// cluster-default values kept in the metadata log over the static ones and
// returns a new immutable Config, whose Describe and DescribeTopic report
// the sources DYNAMIC_BROKER_CONFIG and DYNAMIC_DEFAULT_BROKER_CONFIG with
// synonyms in Kafka's order (per-broker, cluster default, static, default).
// ValidateDynamicBrokerConfigs applies Kafka's rules for what may change:
// the Dynamic field of each key (read-only, per-broker, cluster-wide).
package config
