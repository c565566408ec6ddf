package security

import (
	"crypto/hmac"
	"crypto/sha512"
	"strings"
)

// Delegation tokens (KIP-48): a token is an id and an HMAC, the client's
// SCRAM user name and password. The HMAC is HMAC-SHA512 of the id keyed
// with delegation.token.secret.key, which every node shares, so no node
// stores it: each derives it when it needs it (to find the token a renew
// names, to describe it, to authenticate with it).

// DelegationTokenHMAC is the HMAC of token id under secret.
func DelegationTokenHMAC(secret, id string) []byte {
	m := hmac.New(sha512.New, []byte(secret))
	m.Write([]byte(id))
	return m.Sum(nil)
}

// ParsePrincipal reads Kafka's "Type:name" form of a principal (the type
// up to the first colon).
func ParsePrincipal(s string) (Principal, bool) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" {
		return Principal{}, false
	}
	return Principal{Type: typ, Name: name}, true
}
