// Package connect is Samsa's Kafka Connect worker: standalone and
// distributed modes, Kafka's Connect REST API, the config, offset and
// status topics in Kafka's record formats, and the built-in connectors
// (FileStream source and sink, a data generator).
//
// Structure. A Worker owns one herder. Connector configs, task configs
// and target states arrive as records of the config log (the config topic
// in distributed mode, memory in standalone mode) and are applied in log
// order by apply; nothing else changes them. One reconciler goroutine
// compares that desired state with the connectors and tasks it runs and
// starts, stops, pauses and restarts them; it alone owns the runtimes.
// REST handlers read the state under the herder's lock and write by
// appending to the config log, returning once their record was applied.
//
// Formats (so a Java worker can read our topics):
//   - config topic: key connector-<name> value {"properties":{...}};
//     task-<name>-<n> {"properties":{...}}; commit-<name> {"tasks":n};
//     target-state-<name> {"state":"PAUSED","state.v2":"PAUSED"}; a null
//     value deletes a connector;
//   - offset topic: key ["<connector>",{source partition}] value {source
//     offset}, both schemaless JSON;
//   - status topic: status-connector-<name>, status-task-<name>-<n> with
//     {"state":..,"trace":..,"worker_id":..,"generation":..};
//     status-topic-<topic>:connector-<name> with {"topic":{"name":..,
//     "connector":..,"task":..,"discoverTimestamp":..}} (topic tracking).
//
// Distributed workers form a Connect group (group.go) with Kafka's
// incremental cooperative protocol: the leader's assignor (assignor.go)
// spreads connectors and tasks over all workers, and each worker's
// reconciler runs exactly the units assigned to it. Requests only the
// leader serves are forwarded to it (forward.go).
package connect
