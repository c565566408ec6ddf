// Package storage keeps partition logs on disk in Apache Kafka's layout, so
// that Kafka's own tools (kafka-dump-log.sh, DumpLogSegments) can read the
// files Samsa writes and Samsa can open a Kafka log directory.
//
// # Layout
//
// A log directory (Kafka's log.dirs entry) holds one folder per partition,
// named "<topic>-<partition>", plus a few bookkeeping files:
//
//	<logdir>/
//	  meta.properties                     version=1, cluster.id, node.id, directory.id
//	  recovery-point-offset-checkpoint    "0\n<count>\n<topic> <partition> <offset>\n..."
//	  log-start-offset-checkpoint         same format
//	  cleaner-offset-checkpoint           same format: first dirty offset of compacted logs
//	  replication-offset-checkpoint       same format: high watermarks (written by internal/replica)
//	  .kafka_cleanshutdown                present only while the broker is stopped cleanly
//	  orders-0/
//	    partition.metadata                "version: 0\ntopic_id: <base64url uuid>\n"
//	    leader-epoch-checkpoint           "0\n<count>\n<epoch> <start offset>\n..." (leader_epoch.go)
//	    00000000000000000000.log          record batches, back to back
//	    00000000000000000000.index        sparse offset index
//	    00000000000000000000.timeindex    sparse time index
//	    00000000000000031337.log          next segment: named by its base offset
//	    00000000000000031337.snapshot     producer state at that offset (producer_state_snapshot.go)
//	    00000000000000031337.txnindex     aborted transactions whose abort marker is in that segment (txn_index.go)
//	    ...
//
// # Segment (.log)
//
// Record batches (magic v2) exactly as a producer sent them, except that the
// base offset was rewritten to the offset assigned by the log:
//
//	+------------+--------+----------------------------------------------+
//	| baseOffset | length | rest of the batch (length bytes): epoch,     |
//	|  int64     | int32  | magic, CRC-32C, attributes, ..., records     |
//	+------------+--------+----------------------------------------------+
//	  repeated; no per-file header, no padding
//
// # Offset index (.index)
//
// One 8-byte entry per index interval (index.interval.bytes, 4096 by default)
// of log bytes; the entry names the last offset of a batch and where that
// batch starts:
//
//	+-----------------------------+--------------------------+
//	| relative offset int32       | file position int32      |  8 bytes
//	| (batch last offset - base)  | (start of that batch)    |
//	+-----------------------------+--------------------------+
//
// # Time index (.timeindex)
//
// Written at the same index intervals as the offset index, but only when the
// largest timestamp seen in the segment has grown, plus a final entry when the
// segment stops being active:
//
//	+-----------------------------+--------------------------------+
//	| max timestamp so far int64  | relative offset int32 of the   |  12 bytes
//	| (ms)                        | batch holding that timestamp   |
//	+-----------------------------+--------------------------------+
//
// # Transaction index (.txnindex)
//
// One entry per abort marker in the segment, in marker order; the file
// exists only once the segment has one (Kafka's TransactionIndex):
//
//	+-----------+-------------+-------------+------------+------------------+
//	| version   | producer id | first offset| last offset| last stable      |  34 bytes
//	| int16 = 0 | int64       | int64: first| int64: the | offset int64     |
//	|           |             | batch of txn| marker     | after the marker |
//	+-----------+-------------+-------------+------------+------------------+
//
// The partition layer (internal/replica) adds entries as it writes abort
// markers and again, when missing, as it replays markers on start-up;
// recovery and truncation drop entries of markers that are gone, and the
// file goes with its segment.
//
// All integers are big-endian. Like Kafka, the index files of the active
// segment are preallocated to segment.index.bytes and trimmed to their real
// size when the segment rolls or the log closes; an index whose size is not a
// multiple of its entry size, or whose entries make no sense, is rebuilt from
// the segment.
//
// # Concurrency
//
// A Log has one mutex (mu) that serialises writers: appends, rolls, flushes.
// Reads take no part in it: the list of segments is an immutable slice
// swapped atomically, and each segment publishes its size and the log its end
// offset with atomic stores after the bytes and index entries are written, so
// a reader that sees an end offset also sees the bytes before it. Reads use
// pread (os.File.ReadAt) and never move a shared file offset. Operations that
// take bytes away (TruncateTo, Close, Delete) also hold a read/write lock
// (structMu) exclusively; readers hold it shared, so a file is never closed
// or shortened under a reader.
//
// # Durability
//
// Appends are write(2) calls into the page cache: a crash of the process
// (kill -9) loses nothing that was acknowledged. fsync follows flush.messages
// and flush.ms, happens for each segment when it rolls (in the background),
// and on Close. The recovery point is the offset below which everything is
// known to be on disk; on start, segments from the one holding the recovery
// point onward are scanned batch by batch (length, magic, CRC-32C, offsets),
// the first torn or corrupt batch and everything after it are cut off, and
// their indexes are rebuilt. After a clean shutdown (marker present) that
// scan is skipped.
//
// A power failure is different from a process crash: the page cache dies
// with the machine, and only what was fsynced survives. What a power loss
// takes, as the tests measure it (internal/powerloss cuts every segment
// file to its fsynced size, sometimes keeping a torn, corrupt part of the
// unsynced tail; power_loss_test.go here, in internal/server and in
// internal/raft):
//
//   - Kafka's default policy (flush.messages and flush.ms unset, as
//     log.flush.interval.messages and log.flush.interval.ms): every
//     acknowledged record of the active segment can be lost — one node,
//     500 records acknowledged with acks=1 or acks=all (one node: the
//     same) in one segment: all 500 lost with a clean cut, 375 with a torn
//     tail that kept part of them; with 1 MiB segments, the rolled
//     segment survives (fsynced on roll) and the active one's 175 to 250
//     records are lost. Recovery is clean in every case: the log is a
//     prefix of what was appended, the first torn or corrupt batch and
//     everything after it cut, offsets continue from there, and the
//     metadata log (raft fsyncs before it answers) keeps the topics.
//   - flush.messages=1: the append fsyncs before it returns, and the
//     produce path answers only after the append (for acks=1 too), so
//     nothing acknowledged is lost: 0 of 500.
//   - acks=all with replication: an acknowledged record is in the page
//     cache of every in-sync replica, so it survives the power loss of
//     any replicas that do not all fail together: cutting each of three
//     replicas in turn (the leader first), then two of three at once with
//     min.insync.replicas=2, lost 0 of 300 — the cut replicas come back
//     as followers of the one that kept everything and truncate to it.
//     Kafka's durability model is exactly this: replication, not fsync.
//
// The small files beside the segments are written whole to a temporary
// file and renamed, with fsyncs, except two that wait for the
// partition's next append, which makes them durable before it writes a
// record (Log.syncMetaFilesLocked): a new leader's epoch entry (kept in
// memory; epochCache says why losing it changes no answer) and, in a
// log without records, partition.metadata (written without fsync).
// Creating and restarting partitions thus costs no fsync;
// TestPowerLossLeaderEpochs cuts the power around them.
//
// # Retention and compaction
//
// The LogManager runs a retention task (log.retention.check.interval.ms)
// that deletes whole old segments by retention.ms, retention.bytes and the
// log start offset (DeleteRecords), and log cleaner goroutines
// (log.cleaner.threads) that compact logs with cleanup.policy=compact,
// keeping the latest record of each key. Segments leave the list under
// structMu; their files are renamed to *.deleted and removed after
// file.delete.delay.ms. The cleaner writes *.cleaned files, commits by
// renaming them to *.swap (the .log file last), and installs them under
// the log's locks; Open completes a committed swap and drops the rest.
// retention.go and cleaner.go describe the rules.
//
// # Open files
//
// A node may hold far more segment and index files than it may open
// (three per partition, 100,000 partitions). Every one of them is a
// cachedFile in the node's FileCache (file_cache.go; size
// samsa.log.max.open.files, by default half of RLIMIT_NOFILE): idle ones
// are closed least recently used first and reopened on their next use,
// and a use holds a reference, so nothing is closed under a reader or the
// writer. Sync fsyncs only files changed since their last fsync, and the
// active segment of a cleanly stopped log keeps its trimmed indexes until
// its first append, so an idle partition's files are neither written nor
// fsynced by a restart.
//
// Batches are opaque to this package on the append and read paths: it
// reads their headers but never decodes records. Validating what a
// producer sent is internal/record's job, done by the caller before
// Append. Only the cleaner decodes and re-encodes batches.
package storage
