// Package server assembles one Samsa node from its parts — storage, the
// metadata quorum, the controller, the replica manager, the broker's API
// handlers and the socket server — and takes it down again in order. It is
// what `samsa server` runs and what tests start in-process.
package server
