// Package coordinator is the one runtime for the state machines that live
// on an internal topic (Kafka's CoordinatorRuntime): the group coordinator
// on __consumer_offsets, the transaction coordinator on
// __transaction_state and the share coordinator on __share_group_state,
// each in its own subpackage, plug in a Shard.
//
// A Runtime loads a partition the node leads by replaying its log to the
// end (ReplicaLog reads the local replica, past the high watermark, as
// Kafka's loader does), serves its shard once loaded, and unloads it when
// leadership moves (Leadership follows the metadata image). Lookup answers
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
// COORDINATOR_NOT_AVAILABLE for an id whose partition does not serve.
//
// Deciding is separate from doing: Partition.Write runs decide under the
// shard's lock, appends its records without the lock (committed, i.e.
// replicated to the ISR, before it returns), then runs apply under the lock
// with the outcome. Writes of a partition are serialised so that memory
// follows log order, and the same replay function serves load and live
// writes.
//
// Every goroutine and timer a shard starts goes through the runtime (Go,
// AfterFunc, Every), so Close joins them all.
package coordinator
