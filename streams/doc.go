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
// Windows. Tumbling and hopping windows (WindowedBy) and session windows
// (SessionWindowedBy) aggregate per key and window into window and session
// stores with Kafka's key layouts; a record later than its window's end plus
// the grace (by stream time) is dropped. SuppressUntilWindowCloses forwards
// only final results.
//
// Guarantees. Under at_least_once (the default) the App flushes what tasks
// produced every commit interval, then commits the input offsets; after a
// crash, records since the last commit are processed again. Under
// exactly_once_v2 the records of each poll are processed in one transaction
// of the instance's transactional producer, with the input offsets, and an
// aborted transaction makes the tasks restore from their read_committed
// changelogs (eos.go). Joins, standby replicas and interactive queries are
// not built yet (docs/streams.md).
//
// Concurrency. One goroutine runs all of an App's tasks; processors need no
// locking for their own state.
package streams
