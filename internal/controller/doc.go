// Package controller is Samsa's QuorumController: the only writer of cluster
// metadata. It runs on the raft leader of the metadata quorum.
//
// Every operation follows Kafka's decide → records → propose → replay:
// a decision reads the latest metadata.Image, validates the request and
// produces records plus a response; the records are proposed through raft
// as one batch; the response is returned only after the batch is committed
// and replayed by the metadata.Loader. The controller keeps no state of its
// own — the Image is the state — and decisions are serialised by one mutex,
// so each decision sees the effect of the previous one (two concurrent
// CreateTopics of one name cannot both succeed).
//
// Request methods take and return kmsg types and fill every field of the
// response; the caller sets the response Version. Errors are reported with
// Kafka's codes and, where Kafka sends one, its message text.
package controller
