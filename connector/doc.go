// Package connector is Samsa's public Kafka Connect SDK: the interfaces a
// Go connector implements (SourceConnector, SinkConnector and their tasks),
// the data model records carry (Schema, Struct, Record), config
// definitions with validation, converters (StringConverter,
// ByteArrayConverter, JsonConverter in Kafka's envelope format) and single
// message transforms with predicates under Kafka's class names and config
// keys.
//
// The worker that runs connectors lives in internal/connect; this package
// holds no goroutines. Contract, as in Kafka Connect:
//   - a connector is configured (Start), asked for at most N task configs
//     (TaskConfigs) and stopped; tasks do the copying;
//   - a source task's Poll returns records carrying a source partition and
//     offset; the worker stores the offsets only after the records were
//     acknowledged by the cluster, and then calls Commit;
//   - a sink task receives records in Put and the worker commits their
//     consumer offsets only after Flush returned without error.
package connector
