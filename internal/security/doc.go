// Package security holds what decides who a client is and what it may do:
// principals, TLS and SASL credentials, the authorizer over the ACL image
// and quota accounting. The network layer runs the handshakes with it; the
// broker's handlers ask it before acting.
package security
