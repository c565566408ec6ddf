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
// Replication (replication.go, isr.go): Manager.Ensure applies the
// partition state from the metadata image, making this node leader or
// follower. A leader serves its followers' fetches (FetchForFollower),
// tracks their log end offsets, moves the high watermark to the smallest
// one in the maximal ISR, and asks the controller to change the ISR
// (Config.AlterPartition) when a follower catches up or lags for
// replica.lag.time.max.ms. An acks=all produce parks once in a CommitWait
// (commit_wait.go, Kafka's DelayedProduce): each partition it wrote
// queues it by offset and answers it when its high watermark passes the
// batch or its leadership ends, with no goroutine per partition. A
// follower appends the leader's batches as they are (AppendAsFollower),
// replaying them into the producer state exactly as a restart would, and
// truncates where its history diverges from the leader's, which the leader
// epoch cache (storage's leader-epoch-checkpoint) tells. With a single
// replica the ISR is {leader} and the high watermark follows the log end
// offset at once. High watermarks survive restarts in each log directory's
// replication-offset-checkpoint.
//
// Fetchers (fetcher.go): a FetcherManager (Kafka's ReplicaFetcherManager)
// replicates the partitions this node follows. The broker's metadata
// publisher tells it each follower's leader and leader epoch (Follow) and
// takes partitions back when this node leads them or stops hosting them
// (Unfollow). It runs one goroutine per source broker, started with the
// first partition followed there and ended with the last; each sends one
// Fetch at a time for all its partitions, as replica NodeID, over a
// connection to the leader's inter-broker listener found in the latest
// metadata image (FetcherConfig), and applies every partition's answer to
// the local replica: AppendAsFollower, the leader's high watermark and log
// start offset, truncation on a diverging epoch, or a reset (ListOffsets)
// when the fetch offset is out of range. When the flush policy makes
// fsyncs due (flush.messages=1), the partitions of one answer are fsynced
// in parallel, before the next fetch reports their new positions. A
// fenced leader epoch parks the partition until newer metadata restarts
// it; other errors retry it after
// replica.fetch.backoff.ms. Unfollow returns only once no fetcher touches
// the replica, so it may then lead or be removed. Close stops and joins
// every fetcher; the node calls it before closing the logs.
//
// Leader epochs (KIP-320): requests that name the leader epoch they
// expect (Fetch, ListOffsets, OffsetForLeaderEpoch, follower fetches) are
// checked by one rule, CheckLeaderEpoch: older than the partition's is
// FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH, -1 is not checked.
//
// Fencing (Manager.SetFenced): a broker whose session with the controller
// quorum lapsed cannot know whether other leaders were elected meanwhile,
// so it leads nothing until the session is back: leader operations answer
// NOT_LEADER_OR_FOLLOWER and the partitions keep their state for when the
// fence is lifted.
package replica
