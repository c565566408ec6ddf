// Package security holds what decides who a client is and what it may do:
// principals, TLS and SASL credentials, the authorizer over the ACL image
// and quota accounting. The network layer runs the handshakes with it; the
// broker's handlers ask it before acting.
//
// TLS (tls*.go): TLSServer and TLSClient are built from one listener's
// ssl.* settings (TLSSettings): key and trust stores in Kafka's formats
// (JKS, PKCS12, PEM file or inline), protocols and cipher suites, client
// authentication, and Kafka's ssl.principal.mapping.rules over the client
// certificate's subject as Java prints it. Their material is immutable and
// swapped atomically on Reload, so a running listener changes certificates
// without a restart. Package tlstest makes certificates and stores for
// tests.
//
// SASL: a mechanism is a SASLServer, one per exchange (plain.go for PLAIN
// with users from a JAAS config, jaas.go; scram_server.go for
// SCRAM-SHA-256/512 with credentials looked up through ScramCredentials,
// which a node answers from its metadata image; oauthbearer.go for
// OAUTHBEARER, whose tokens an OAuthBearerValidator checks: the unsecured
// one of Kafka's development setup, or JWTValidator, which verifies
// signatures with go-jose against the keys of a JWKS, fetched over
// http(s) or read from a file, refreshed on the JWKS's own goroutine
// between Start and Close). Apart from a JWKS, SASL
// keeps no state of its own: the network layer drives the exchange and
// owns the connection's principal; a credential that expires
// (ExpiringCredential) bounds the connection's session. Package oauthtest
// makes keys, key sets and tokens for tests.
//
// Quotas (quota.go, quota_stats.go): QuotaManager finds each client's
// quota among the client quota entities of the metadata image
// (QuotaPublisher keeps it current) and measures the client — Kafka's Rate
// for byte rates, request time and per-IP connection rates, its
// TokenBucket for controller mutations — returning how long to throttle.
// The broker, the controller and the network layer act on the answer.
package security
