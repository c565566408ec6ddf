// Package sharepartition serves KIP-932 share groups on a partition
// leader: Kafka's SharePartitionManager (share sessions, ShareFetch and
// ShareAcknowledge) and SharePartition (the in-flight records of one
// group on one partition).
//
// A share partition keeps a window of records, from the share-partition
// start offset (SPSO) to the end of what it has handed out (SPEO). Each
// record in the window is available, acquired by one member until its
// acquisition lock (share.record.lock.duration.ms) expires, acknowledged
// or archived. A fetch acquires available records, oldest first, and then
// new ones read from the log through the replica manager (read_committed
// stops at the last stable offset and archives aborted records). A record
// whose delivery count reaches share.delivery.count.limit is archived
// instead of being made available again. The SPSO moves past every record
// acknowledged or archived at the front of the window; the window holds at
// most group.share.partition.max.record.locks records.
//
// The durable state (SPSO and the states and delivery counts past it)
// lives with the share coordinator; a partition reads it through the
// share.Persister when first used and writes it after every change
// caused by an acknowledgement.
package sharepartition
