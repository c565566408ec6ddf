// Package network is Samsa's socket server: it accepts connections on a
// listener, reads size-prefixed request frames, hands each decoded request to
// a Handler and writes the responses back in request order.
//
// Each connection has one goroutine that reads and handles requests one at a
// time (Kafka processes a connection's requests in order, and idempotent
// producers rely on it) and one writer goroutine that owns the socket's write
// side, so reading the next request overlaps writing the previous response.
// A frame larger than socket.request.max.bytes, or one that cannot be parsed,
// closes only that connection.
//
// On an SSL listener (Config.TLS) the reader goroutine first runs the TLS
// handshake, bounded by Config.HandshakeTimeout, and sets the connection's
// principal from it (Config.TLSPrincipal): the accept loop never waits on a
// client, and a connection whose handshake fails — plaintext bytes, a missing
// or untrusted client certificate — is closed before any request is read.
//
// On a SASL listener (Config.SASL) the reader then runs the client's SASL
// exchange (sasl.go, Kafka's SaslServerAuthenticator): nothing but
// ApiVersions reaches the Handler until the client has authenticated, and
// the connection's Principal is then who it authenticated as. The reader
// also takes KIP-368 re-authentications and closes a connection whose
// session expired. AuthenticateConn (sasl_conn.go) runs the same exchange
// on a connection of another protocol, the raft transport on a SASL
// controller listener, before that protocol starts.
//
// Quotas: a handler throttles its client with Conn.Throttle, and the reader
// reads nothing more from the connection for that long once the request is
// answered, or handled when it gets no answer (Kafka mutes the channel).
// Config.Connections (connquota.go, Kafka's ConnectionQuotas) decides each
// new connection before it is served: the accept loop waits while the
// broker or the listener is at max.connections or over its creation rate;
// a connection over its address's connection_creation_rate is held and
// closed after its throttle; one over max.connections.per.ip is closed.
package network
