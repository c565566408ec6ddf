// Package group is Samsa's classic consumer-group coordinator (Kafka's
// GroupCoordinator for the JoinGroup/SyncGroup protocol) and the owner of the
// committed offsets stored in the internal topic __consumer_offsets.
//
// # Placement
//
// A group belongs to partition abs(javaStringHashCode(groupID)) % NumPartitions
// of __consumer_offsets (see [Coordinator.PartitionFor]); the broker leading that
// partition is the group's coordinator. The broker calls [Coordinator.Load] when
// it becomes leader of a partition and [Coordinator.Unload] when it stops. Load
// replays the partition from its start in the background; until replay ends,
// requests for the partition's groups get COORDINATOR_LOAD_IN_PROGRESS. Groups
// of partitions that are not loaded get NOT_COORDINATOR.
//
// # Records
//
// The partition holds Kafka's own record schemas, so Kafka tools can read it:
//
//	key   OffsetCommitKey   v1 (group, topic, partition)  value OffsetCommitValue v3
//	                                                      (v1 when the commit carried an explicit retention)
//	key   GroupMetadataKey  v2 (group)                    value GroupMetadataValue v3
//
// A nil value is a tombstone. Key versions 3 and above (KIP-848 records) are
// skipped on replay.
//
// # Deciding and doing
//
// Every handler that persists something follows one path (shard.write): under
// the shard lock it validates and builds the records, releases the lock while
// PartitionLog.Append runs, then applies the outcome under the lock again. A
// per-shard write lock is held across the three steps so memory changes in
// log order. Offset records and tombstones change memory only through replay
// (the same function Load uses); group metadata values are snapshots of the
// in-memory group (Kafka's storeGroup) and are only read back on Load, because
// the classic protocol's transient state (pending joins and syncs) is never
// logged.
//
// # Concurrency
//
// Each loaded partition is a shard with one mutex (shard.mu) guarding its
// groups and offsets. Session, rebalance and sync timers are time.AfterFunc
// timers whose callbacks are tracked so Close can join them; tests drive time
// with testing/synctest. JoinGroup and SyncGroup block until the rebalance
// step completes or ctx ends.
//
// Handlers return kmsg responses with every field that matters for the request
// version filled; the broker sets the response Version and handles ACLs.
package group
