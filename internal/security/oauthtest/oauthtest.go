// Package oauthtest makes OAUTHBEARER material for tests: signing keys,
// the JSON Web Key Sets that publish them, signed and unsigned JWTs, and
// a JWKS endpoint served over HTTP on loopback whose keys a test can
// rotate.
package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Key is a signing key with its key id and algorithm.
type Key struct {
	ID     string
	Alg    jose.SignatureAlgorithm
	Signer crypto.Signer
}

// NewRSA makes a 2048-bit RSA key signing with alg (RS* or PS*).
func NewRSA(t testing.TB, kid string, alg jose.SignatureAlgorithm) *Key {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{ID: kid, Alg: alg, Signer: k}
}

// NewEC makes a P-256 key signing with ES256.
func NewEC(t testing.TB, kid string) *Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{ID: kid, Alg: jose.ES256, Signer: k}
}

// JWK is the key's public half as a JWKS publishes it.
func (k *Key) JWK() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.Signer.Public(), KeyID: k.ID, Algorithm: string(k.Alg), Use: "sig"}
}

// Sign returns a JWT of claims signed by k, with k's id as kid.
func (k *Key) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if k.ID != "" {
		opts = opts.WithHeader("kid", k.ID)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.Alg, Key: k.Signer}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// JWKS is the JSON Web Key Set document of keys.
func JWKS(keys ...*Key) []byte {
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.JWK())
	}
	b, err := json.Marshal(set)
	if err != nil {
		panic(err) // public keys of the types above always marshal
	}
	return b
}

// Unsigned returns an unsecured JWT of claims: header {"alg":"none"} and
// an empty signature, as Kafka's unsecured login module makes them.
func Unsigned(claims map[string]any) string {
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." +
		base64.RawURLEncoding.EncodeToString(payload) + "."
}

// Claims are the usual claims of a token for sub issued now and expiring
// after ttl; more are added to them.
func Claims(sub string, ttl time.Duration, more map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	for k, v := range more {
		c[k] = v
	}
	return c
}

// Server is a JWKS endpoint on loopback.
type Server struct {
	URL     string
	fetches atomic.Int64
	mu      sync.Mutex
	doc     []byte
	status  int
}

// NewServer serves the key set of keys at URL until the test ends.
func NewServer(t testing.TB, keys ...*Key) *Server {
	t.Helper()
	s := &Server{doc: JWKS(keys...), status: http.StatusOK}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		doc, status := s.doc, s.status
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(doc)
	}))
	t.Cleanup(hs.Close)
	s.URL = hs.URL + "/jwks.json"
	return s
}

// SetKeys makes the endpoint publish keys from now on.
func (s *Server) SetKeys(keys ...*Key) {
	s.mu.Lock()
	s.doc, s.status = JWKS(keys...), http.StatusOK
	s.mu.Unlock()
}

// Fail makes the endpoint answer status with no key set.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	s.doc, s.status = []byte("unavailable"), status
	s.mu.Unlock()
}

// Fetches is how many times the key set was asked for.
func (s *Server) Fetches() int64 { return s.fetches.Load() }
