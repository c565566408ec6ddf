// Package txn is Samsa's transaction coordinator (Kafka's
// TransactionCoordinator, TransactionStateManager and
// TransactionMarkerChannelManager): it maps transactional ids to producer
// ids and epochs, tracks each transaction's partitions, and ends
// transactions by writing COMMIT or ABORT markers to them.
//
// It runs both transaction versions of KIP-890. Version 1 clients add
// partitions explicitly (AddPartitionsToTxn v0-v3, AddOffsetsToTxn) and
// keep their epoch across transactions. Version 2 clients (EndTxn v5, once
// the cluster's transaction.version is 2) add none: the partition leaders
// add them with AddPartitionsToTxn v4+ ([PartitionAdder]), and every
// EndTxn bumps the producer epoch (rotating to a new producer id when the
// epoch is exhausted); the markers carry the bumped epoch, which fences
// the ended transaction's late writes. For both, leaders verify a
// transactional write that would open a transaction on a partition with
// the coordinator first (KIP-890 part 1; see [PartitionAdder] and
// replica.Partition.StartTxnVerification).
//
// # Placement
//
// A transactional id belongs to partition
// abs(javaStringHashCode(id)) % NumPartitions of __transaction_state (see
// [Coordinator.PartitionFor]); the broker leading that partition is the
// id's coordinator. As in the group coordinator, the broker calls
// [Coordinator.Load] when it becomes leader (with the partition's leader
// epoch, which markers carry as the coordinator epoch) and
// [Coordinator.Unload] when it stops. Until replay ends requests get
// COORDINATOR_LOAD_IN_PROGRESS; ids of partitions not loaded get
// NOT_COORDINATOR.
//
// # Records
//
// Kafka's own schemas, so Kafka tools can read the partition:
//
//	key   TxnMetadataKey v0 (transactional id)
//	value TxnMetadataValue v0: producer id, epoch, timeout, state,
//	      partitions, last update and start timestamps; nil = tombstone.
//	      v1 (written from transaction.version 1) adds the tagged
//	      PreviousProducerId, NextProducerId and ClientTransactionVersion.
//
// # States
//
//	Empty ──AddPartitions──► Ongoing ──EndTxn──► PrepareCommit ──markers──► CompleteCommit
//	                            │                PrepareAbort  ──markers──► CompleteAbort
//	                            └─ timeout or InitProducerId: PrepareAbort at epoch+1 (fence)
//
// A Complete state accepts AddPartitions (a new transaction) and
// InitProducerId (epoch bump). PrepareEpochFence and Dead exist only as
// names: a fence is written as PrepareAbort at the bumped epoch, removal
// (transactional.id.expiration.ms) as a tombstone.
//
// # Deciding and doing
//
// With transaction version 2, EndTxn writes the Prepare state at epoch+1
// (and NextProducerId at an exhausted epoch); the Complete state moves to
// the next producer id at epoch 0.
//
// As in the group coordinator, a handler decides under the shard lock and
// returns the new state as a record; the record is appended without the
// lock, and memory changes only by replaying it (the function Load uses).
// A per-shard write lock keeps memory in log order. EndTxn answers once
// the Prepare state is written; a background goroutine then calls
// [MarkerWriter.WriteMarkers] until it succeeds and writes the Complete
// state. Until then the producer gets CONCURRENT_TRANSACTIONS. A
// transaction found in a Prepare state on Load has its markers written
// again, which is harmless.
//
// Two loops run per coordinator: ongoing transactions past their
// transaction.timeout.ms are fenced and aborted every
// AbortTimedOutInterval; idle ids are removed every RemoveExpiredInterval.
// Tests drive them with testing/synctest.
//
// # Markers
//
// [MarkerChannel] is the MarkerWriter of a broker (Kafka's
// TransactionMarkerChannelManager). It sorts a transaction's partitions by
// leader in the latest metadata image: markers for partitions this node
// leads are appended directly, the others go to their leader as one
// WriteTxnMarkers request per broker, sent concurrently over a kept
// connection per broker (dialed on inter.broker.listener.name, dialed
// again after an error). Partitions of deleted topics are skipped, and so
// are markers a partition refuses as stale (an older producer or
// coordinator epoch): retrying them could never succeed. Any other
// failure fails the call, and the coordinator retries it whole.
//
// [WriteLocalMarkers] is the one place a marker is appended: the local
// half of MarkerChannel and the broker's WriteTxnMarkers handler both call
// it, so a marker means the same on either path. It waits until each
// marker is committed (replicated to the ISR, within [WriteTimeout]) and
// only then hands a marker on a partition of __consumer_offsets to the
// local group coordinator ([TransactionCompleter]), so pending
// transactional offsets commit or drop in step with the log.
//
// WriteMarkers starts one goroutine per remote broker and joins them
// before it returns; MarkerChannel's connections are guarded by its mutex.
// Close it after the Coordinator: later remote markers fail.
//
// Handlers take and return kmsg types; the broker sets response versions,
// authorizes, and checks that topics exist.
package txn
