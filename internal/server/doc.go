// Package server assembles one Samsa node from its parts — storage, the
// metadata quorum, the controller, the channel to the active controller,
// the replica manager, the coordinators, the broker's API handlers and
// the socket server — and takes it down again. It is what `samsa server`
// runs and what tests start in-process.
//
// A node is an ordered list of components, each with Start and Close
// (parts.go): process.roles picks the list, Start starts them in order and
// Close closes them in reverse. A combined node (broker,controller) runs
// them all; a controller-only node runs the quorum, the controller and the
// controller listener; a broker-only node runs no quorum member but a
// metadata observer (raft.Observer) that fetches the leader's log over the
// controller listener. Besides the list, the package holds the mapping of
// config keys onto the parts' configs and the controller-listener mux
// (mux.go): raft transport and Kafka requests on one port, the latter
// served by the controller's API table and the raft leader's MetadataLog.
// It holds no protocol or state logic of its own.
package server
