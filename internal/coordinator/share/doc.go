// Package share is the share coordinator of KIP-932 share groups: it keeps
// the durable state of every share partition (the start offset, the state
// and leader epochs, and the acknowledged or archived batches past the
// start offset) on the internal topic __share_group_state, one shard per
// partition of that topic, keyed "groupId:topicId:partition".
//
// Coordinator (coordinator.go, rpc.go) is Kafka's ShareCoordinatorService:
// shards run by the one coordinator runtime, loaded as this node leads
// partitions of __share_group_state, serving the five share-group state
// RPCs for the keys they hold. A shard (shard.go) decides under its lock
// and returns one record; the record is appended, committed to the ISR
// (share.coordinator.write.timeout.ms) and replayed, and only then is the
// request answered — replay is the only way state changes, on load and
// after a write. Records are Kafka 4.4's ShareSnapshot and ShareUpdate,
// byte for byte (records.go), so either system could load the other's
// topic. Every share.coordinator.snapshot.update.records.per.snapshot
// updates of a share partition, the next write is a whole snapshot; the
// periodic pruning (prune.go) rewrites every state as a snapshot and
// deletes the records below, as the topic's cleanup.policy is delete.
//
// Persister (persister.go) is how the rest of a broker reaches the share
// coordinator of any key; NewPersister (state_persister.go) builds it
// over this node's Coordinator and the node-to-node client.
package share
