// Package replica owns the partitions this node hosts: their logs, their
// high watermarks and the producer state that makes idempotent produce
// exactly-once per partition.
//
// A Partition serialises appends under one lock: validate the batch, check
// the producer's sequence, assign offsets in the log, record the producer's
// new state, advance the high watermark, and wake fetchers waiting for data.
// Reads take no partition lock; the log allows them concurrently with
// appends.
//
// The producer state survives restarts through Kafka's snapshot files and
// a replay of the log's batch headers; producer_recovery.go describes how.
//
// Transactions (transactions.go): transactional batches open a producer's
// transaction, markers written by the transaction coordinator close it.
// The last stable offset, the first offset of the oldest open transaction
// (or the high watermark), bounds read_committed fetches, and abort markers
// are indexed in the segments' .txnindex so those fetches can list the
// aborted transactions they overlap.
//
// Today every partition has one replica, this node, so the in-sync replica
// set is {leader} and the high watermark follows the log end offset at once.
// Followers, the ISR and acks=all waiting on them arrive with replication.
package replica
