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
package security
