// Package server assembles one Samsa node from its parts — storage, the
// metadata quorum, the controller, the replica manager, the broker's API
// handlers and the socket server — and takes it down again in order. It is
// what `samsa server` runs and what tests start in-process.
//
// process.roles picks the parts: a combined node (broker,controller) runs
// them all; a controller-only node runs the quorum, the controller and the
// controller listener; a broker-only node runs no quorum member but a
// metadata fetcher that observes the leader's log over the controller
// listener (metadata_log.go serves it, metadata_fetcher.go fetches it).
package server
