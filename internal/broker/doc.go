// Package broker answers Kafka API requests: one file per API, named by its
// key (00_produce.go, 01_fetch.go, ...), each opening with the versions it
// serves and a short note on its behaviour.
//
// Handlers decode, check, authorize, delegate and map errors to codes —
// nothing else. Authorization follows Kafka's KafkaApis and ControllerApis
// per API (each file's header says what it checks) through the questions
// of authz.go; admin requests forwarded to the controller are authorized
// here, on the broker that received them (forward.go).
// Metadata changes go to the active controller (the Controller interface,
// internal/controllerchannel's Channel: a call when this node is the
// active controller, a request on its controller listener otherwise); a
// handler forwards with Controller.Forward and needs no code elsewhere
// but the controller's decision. Reads of metadata come from the latest
// published image. Partition data goes through the replica manager.
//
// Replication: the metadata publisher (publisher.go) makes each hosted
// replica leader or follower as the image says, and hands followed
// partitions to the replica fetchers (Config.Fetchers, a
// replica.FetcherManager the node owns), which replicate with the Fetch
// API as replica NodeID. Client-facing partition APIs are served by the
// leader only; acks=all produce and coordinator writes wait until the ISR
// has the records.
//
// The package starts no goroutines of its own beyond request handling: a
// Produce with acks=all waits for its partitions in parallel, each in a
// goroutine the handler joins before it answers. (The MarkerWriter in
// txn.go, on its way to internal/coordinator/txn, writes a transaction's
// markers to several leaders in parallel the same way.)
package broker
