// Package group is Samsa's group coordinator: classic groups (Kafka's
// JoinGroup/SyncGroup protocol), KIP-848 consumer groups
// (ConsumerGroupHeartbeat, ConsumerGroupDescribe), KIP-1071 streams groups
// (StreamsGroupHeartbeat, StreamsGroupDescribe; streams_*.go) and the
// committed offsets, all stored in the internal topic __consumer_offsets.
// The group types share one namespace: an id is one or the other, and an
// empty classic or consumer group converts when the other protocol joins
// it.
//
// # Placement
//
// A group belongs to partition abs(javaStringHashCode(groupID)) % NumPartitions
// of __consumer_offsets (see [Coordinator.PartitionFor]; the hash is package
// coordinator's, shared with the transaction coordinator); the broker leading that
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
//	key 3 ConsumerGroupMetadataKey (group)                  value: group epoch, MetadataHash (tag 0)
//	key 5 ConsumerGroupMemberMetadataKey (group, member)    value: subscription, client, timeouts
//	key 6 ConsumerGroupTargetAssignmentMetadataKey (group)  value: target assignment epoch
//	key 7 ConsumerGroupTargetAssignmentMemberKey (g, m)     value: the member's target partitions
//	key 8 ConsumerGroupCurrentMemberAssignmentKey (g, m)    value: member epochs, state, owned and
//	                                                        pending-revocation partitions
//
//	key 17 StreamsGroupMetadataKey (group)                  value: group epoch, metadata hash
//	key 19 StreamsGroupMemberMetadataKey (group, member)    value: process, endpoint, client, timeouts
//	key 20 StreamsGroupTargetAssignmentMetadataKey (group)  value: target assignment epoch
//	key 21 StreamsGroupTargetAssignmentMemberKey (g, m)     value: the member's target tasks
//	key 22 StreamsGroupCurrentMemberAssignmentKey (g, m)    value: member epochs, state, owned and
//	                                                        pending-revocation tasks
//	key 23 StreamsGroupTopologyKey (group)                  value: the topology the members sent
//
// A nil value is a tombstone. KIP-848 and KIP-1071 values are flexible
// version-0 structs, written with kbin since kmsg lacks them. Key 4
// (ConsumerGroupPartitionMetadata, deprecated by Kafka 4.1) is never written
// and ignored on replay; other key versions (share groups) are skipped.
//
// # Streams groups (KIP-1071)
//
// A Kafka Streams application joins with its topology. The coordinator
// checks it against the cluster's topics (source topics must exist,
// copartitioned topics must agree), derives the partition counts of the
// repartition and changelog topics and hands the missing ones to the broker
// for creation (status MISSING_INTERNAL_TOPICS until they exist). A task is
// a subtopology and a partition; the sticky assignor spreads active tasks
// evenly over the members, keeps each where it was while that member is
// under its share, and places group.streams.num.standby.replicas standbys
// on other processes. Members are reconciled like consumer group members:
// active tasks are revoked before another member gets them. Offsets are
// committed with the member epoch, as for consumer groups.
//
// # Transactional offsets
//
// TxnOffsetCommit appends offset records as a transactional batch of the
// producer (PartitionLog.AppendTransactional). They stay pending per
// producer, invisible to OffsetFetch, until the producer's marker reaches the
// partition: the broker reports a marker it wrote with
// [Coordinator.CompleteTransaction], and on Load markers come back through
// Replay (KV.Control). COMMIT moves the pending offsets into the committed
// ones unless a plain commit was written after them (Kafka compares log
// positions; replay order stands in for them); ABORT drops them. OffsetFetch
// with require_stable answers UNSTABLE_OFFSET_COMMIT for a partition with a
// pending offset.
//
// # Consumer groups (KIP-848)
//
// The coordinator assigns: a heartbeat updates the member (a subscription
// change bumps the group epoch, as does any change to the subscribed
// topics' metadata, detected through Config.Topics), a group epoch past the
// target assignment epoch recomputes the target with the group's assignor
// (uniform: balanced and sticky; range), and the member is reconciled
// towards its target one safe step at a time: partitions to give up are
// revoked first, and a partition is only handed to a member once its
// previous owner stopped reporting it. Unlike classic groups, every change
// of a consumer group is a record, and memory changes only by applying
// records, whether live or on Load.
//
// # Deciding and doing
//
// Every handler that persists something follows the coordinator runtime's one
// path (coordinator.Partition.Write): under the shard lock it validates and
// builds the records, releases the lock while PartitionLog.Append runs, then
// applies the outcome under the lock again. A per-partition write lock is held
// across the three steps so memory changes in log order. Offset records and tombstones change memory only through replay
// (the same function Load uses); group metadata values are snapshots of the
// in-memory group (Kafka's storeGroup) and are only read back on Load, because
// the classic protocol's transient state (pending joins and syncs) is never
// logged.
//
// # Concurrency
//
// Each loaded partition is a shard with one mutex (shard.mu) guarding its
// groups and offsets; the runtime (internal/coordinator) loads and unloads
// shards and owns their goroutines. Session, rebalance and sync timers are
// the runtime's AfterFunc timers, whose callbacks Close joins; tests drive time
// with testing/synctest. JoinGroup and SyncGroup block until the rebalance
// step completes or ctx ends.
//
// Handlers return kmsg responses with every field that matters for the request
// version filled; the broker sets the response Version and handles ACLs.
package group
