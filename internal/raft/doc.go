// Package raft runs Samsa's metadata quorum: the replicated log that Kafka
// calls __cluster_metadata. The consensus algorithm is go.etcd.io/raft/v3
// (a RawNode driven by one goroutine owned by Node); this package supplies
// the rest: durable storage, the apply loop, proposal tracking and a
// transport seam for peers.
//
// # Contract
//
// Propose returns only after the entry is committed by a quorum, fsynced
// locally and handed to the Applier, so a caller may read state that includes
// it. Only the leader accepts proposals (ErrNotLeader otherwise): like Kafka's
// active controller, the leader is the only writer. Applier methods are
// called from the Node goroutine, one at a time, in log order.
//
// # Disk failures
//
// A failed write or fsync (a full disk, an I/O error) does not stop the
// node. The Ready being persisted is dropped before anything in it is sent
// or applied; every proposal made while the node recovers is answered
// ErrStorage at once. Until it recovers it drops peers' messages (it can
// neither vote nor lead) and, with a growing backoff (one tick up to 50),
// reopens its log from disk as a restart would — keeping the Applier's
// state — cuts the entries of the failed Ready, and rejoins: a sole voter
// campaigns at once. The only voter also cuts its own entries above the
// durable commit index, which no other log holds. The proposals of cut
// entries are answered ErrStorage once the cut is on disk, at the first
// retry: before that, a crash could leave an entry in the log for a
// restart to commit.
//
// A proposal is therefore answered an error only if its entry is never
// applied, with three exceptions that, like Kafka's REQUEST_TIMED_OUT,
// say nothing either way: a context that expires first, ErrStopped (in a
// multi-voter quorum an entry that reached peers may still commit) and
// ErrOutcomeUnknown. Losing leadership does not answer waiting proposals:
// each is answered when its index is applied, success if its entry is
// still there and ErrNotLeader if another leader's entry replaced it; if
// the node catches up by a snapshot that covers the index, it cannot
// tell, and answers ErrNotLeader wrapping ErrOutcomeUnknown. The
// simulation in sim_test.go checks this contract.
//
// # On-disk layout (Kafka puts it at <metadata.log.dir>/__cluster_metadata-0/)
//
//	00000000000000000002.log              entry segment, named by first index
//	00000000000000000002-0000000001.checkpoint  snapshot at index 2, term 1
//	quorum-state                          HardState (term, vote, commit), JSON
//
// A segment is a sequence of frames, all integers big-endian:
//
//	+----------+----------+------------------------------------------+
//	| len u32  | crc u32  | body: term u64 | index u64 | type u8 | data |
//	+----------+----------+------------------------------------------+
//
// crc is CRC-32C (Castagnoli) of body; len is len(body). Recovery reads the
// segments in order and truncates at the first frame that is short, fails its
// CRC or breaks the index sequence: that is a torn tail from a crash during a
// write that was never acknowledged (we fsync before acknowledging).
//
// A checkpoint file is
//
//	magic "SMSS" | version u8 | index u64 | term u64 | confLen u32 |
//	ConfState (protobuf) | dataLen u64 | data | crc32c u32 (of all before)
//
// written to a temporary name, fsynced and renamed. After every
// Config.SnapshotEvery applied entries the Node asks the Applier for a
// snapshot, writes a checkpoint, rolls to a new segment and deletes the
// segments and checkpoints the new one makes redundant.
//
// A fresh directory is bootstrapped with a checkpoint at index 1 holding the
// initial voter set and no Applier data, so the first real entry has index 2
// (raft index 0 means "none"); a node that joins (Config.Join) starts with
// no checkpoint and gets the leader's. Entries with empty data (leader no-ops, barriers)
// are never passed to the Applier.
//
// Each proposed entry is wrapped in a small envelope (format byte, a random
// per-process nonce and a sequence number) so the proposer can recognise its
// own entry when it is applied, whatever index raft gave it.
//
// # Observers
//
// Nodes outside the quorum (Kafka's observers: broker-only nodes) are fed
// over the Kafka protocol, not by raft: the leader's MetadataLog answers
// Fetch and FetchSnapshot of __cluster_metadata on the controller
// listener (KIP-595; offsets are raft indexes, the wire mapping is in
// observer_log.go), reading the committed log and the latest snapshot
// through Commit, CommittedEntries and LatestSnapshot without changing
// anything; Entry.Data is exactly what the Applier was given. An Observer
// long-polls the leader, feeds its own Applier the same entries in the
// same order, restores the leader's snapshot when it is too far behind,
// and tells its node which voter leads.
//
// # Voter changes (KIP-853)
//
// A dynamic quorum changes its voters one at a time with raft's simple
// configuration changes (ConfChangeV2 with one change, never a joint
// configuration): AddVoter adds a learner, waits until its log holds the
// commit index, then promotes it; RemoveVoter removes one; UpdateVoter
// records new endpoints. Each change's Context carries the voter's
// directory id and endpoints (voters.go), and a snapshot's data starts
// with the voter set when one is known, so a restart or a node caught up
// by snapshot knows every voter's endpoints. A node started with
// Config.Join has no voters: it neither campaigns nor votes until the
// leader adds it. Config.OnVoters hears each change (the server points
// the transport at the voters).
//
// # Peers
//
// A quorum of more than one voter (controller.quorum.voters) talks through
// TCPTransport: each node dials every peer once and writes raft messages on
// that connection as CRC-framed protobufs after a hello naming its id and
// cluster id (wire format in transport.go). Send never blocks; a full
// per-peer queue or a broken connection drops messages, which raft
// retransmits. Wire it with NewTCPTransport, Open(Config{Transport: t}) and
// t.Attach(node), which routes received messages to Node.Step and delivery
// feedback (unreachable peers, snapshot outcome) to the node.
package raft
