// Package controller is Samsa's QuorumController: the only writer of cluster
// metadata. It runs on the raft leader of the metadata quorum.
//
// Every operation follows Kafka's decide → records → propose → replay:
// a decision reads the latest metadata.Image, validates the request and
// produces records plus a response; the records are proposed through raft
// as one batch; the response is returned only after the batch is committed
// and replayed by the metadata.Loader. The Image is the state, and
// decisions are serialised by one mutex, so each decision sees the effect
// of the previous one (two concurrent CreateTopics of one name cannot both
// succeed). The one exception is broker sessions (the time of each
// broker's last heartbeat), which Kafka too keeps in memory on the active
// controller only: a node that becomes active gives every broker a full
// session before judging it.
//
// # Brokers and partitions
//
// Brokers register fenced (BrokerRegistration), are unfenced by a heartbeat
// once they have replayed their registration record, are fenced again when
// their session expires or they ask to be, and leave through controlled
// shutdown (BrokerHeartbeat WantShutdown), which moves their leaderships
// away first. Only unfenced brokers not in controlled shutdown are placed
// on, lead, or join an ISR. Fencing a broker removes it from every ISR
// except where it is the last member and moves its leaderships to the first
// eligible ISR member in replica order; when there is none, to the first
// eligible replica if the topic's unclean.leader.election.enable is on
// (the ISR reset to it), else to no leader. Partition leaders change ISRs
// with AlterPartition; ElectLeaders and the optional auto rebalance move
// leadership back to the preferred replica. The background loop (Start,
// Close) expires sessions, rebalances, and every five minutes elects
// unclean leaders for leaderless partitions whose topic allows it.
//
// Reassignments (reassign.go, KIP-455) add the target replicas first: the
// partition's replicas are the union, with the adding and removing ones
// recorded, until every adding replica is in the ISR; then one batch sets
// the target replicas and moves leadership off a removed leader.
// DescribeQuorum (quorum.go) reports the raft quorum this controller
// belongs to.
//
// The API table (api.go; Kafka's ControllerApis) lists every request the
// controller answers on its controller listener, with its versions; each
// decision file lists its own rows. A row of an admin request that brokers
// forward also builds the answer a client gets when no controller decided
// it, and every row recognises a NOT_CONTROLLER refusal, so forwarding
// (internal/controllerchannel) needs no code per API.
//
// Request methods take and return kmsg types and fill every field of the
// response; the caller sets the response Version (BrokerRegistration,
// BrokerHeartbeat, AlterPartition and ElectLeaders copy the request's).
// Errors are reported with Kafka's codes and, where Kafka sends
// one, its message text.
package controller
