// Package streams is a stream-processing library with Kafka Streams'
// model and naming: a topology of source, processor and sink nodes reads
// Kafka topics, transforms records one at a time, keeps state in local
// stores backed by compacted changelog topics, and writes to topics. An
// application is any number of processes running the same topology with the
// same application id; they share the input partitions through one consumer
// group (group.id = application id).
//
// A topology is built with the DSL (From, then Stream, Grouped and Table
// operations) or the Processor API (AddSource, AddProcessor, AddSink,
// AddStateStore), and run with New and App.Run. Operations that change a
// record's key or value types are functions rather than methods, because Go
// methods take no type parameters: MapValues(s, f), not s.MapValues(f).
//
// Runtime model. Nodes connected by edges or sharing a store form a
// sub-topology; each runs as one task per partition of its source topics
// (task "1_3" is sub-topology 1, partition 3). A task owns its processor
// instances, its store instances and its stream time (the largest record
// timestamp it has processed). An aggregation after a key change writes to
// and reads back from the repartition topic
// <application.id>-<store>-repartition, so all records of a key meet in one
// task. A store's writes go to <application.id>-<store>-changelog, partition
// = task partition, and a task restores its store from there before it
// processes anything. The App creates those internal topics at start.
//
// Guarantees. Processing is at_least_once: every commit.interval the App
// flushes what tasks produced (outputs and changelogs), then commits the
// input offsets it has processed; after a crash, records since the last
// commit are processed again, so outputs and counts may repeat them.
// exactly_once_v2, windows, joins, standby replicas and interactive queries
// are not built yet (docs/streams.md).
//
// Concurrency. One goroutine runs all of an App's tasks; processors need no
// locking for their own state.
package streams
