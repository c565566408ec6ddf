// Package controllerchannel carries a broker's requests to the active
// controller (Kafka's NodeToControllerChannelManager, ForwardingManager
// and BrokerLifecycleManager).
//
// Channel sends each request to whichever controller leads: a call into
// the local controller when this node leads, a Kafka request on the
// leader's controller listener otherwise, retried on the next leader after
// a NOT_CONTROLLER answer or a broken connection until the request's
// deadline; nothing is sent after it. Forward carries a client's admin
// request in the client's version — to a remote controller in an Envelope
// naming the client when the context names one (controller.WithRequester),
// so the controller can apply the client's controller_mutation_rate — and
// has no code per API: the
// controller's API table (internal/controller, api.go) says how the local
// controller decides a request, what its NOT_CONTROLLER refusal looks
// like, and what the client hears when no controller answered. So a new
// forwarded admin API is its broker handler (which calls Forward), its
// decision and row in the controller, and its test.
//
// Lifecycle registers the broker, heartbeats, asks for a controlled
// shutdown on the way down, and fences the broker itself when its
// heartbeats go unanswered for broker.session.timeout.ms.
package controllerchannel
