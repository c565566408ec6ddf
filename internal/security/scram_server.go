package security

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The server side of a SCRAM exchange, as Kafka's ScramSaslServer:
//
//	client-first → server-first "r=<c-nonce><s-nonce>,s=<salt>,i=<iterations>"
//	client-final → server-final "v=<ServerSignature>"
//
// The client proves it knows the password by ClientProof, which the
// server checks against the stored StoredKey alone:
// H(ClientProof XOR HMAC(StoredKey, AuthMessage)) == StoredKey, compared
// in constant time. An unknown user fails at the first message with the
// generic message (Kafka's behaviour: its SaslException).
//
// Extensions: tokenauth=true asks for delegation-token authentication:
// the user name is a token id and the password the token's HMAC (base64);
// the client authenticates as the token's owner, marked as authenticated
// by a token (TokenAuthenticated), for a session that ends when the token
// expires. Without delegation tokens it fails. Other extensions are
// ignored, as Kafka ignores them.

// NewScramServer returns the server side of one SCRAM exchange with
// credentials from creds and no delegation tokens.
func NewScramServer(m ScramMechanism, creds ScramCredentials) SASLServer {
	return NewScramServerWithTokens(m, creds, nil)
}

// NewScramServerWithTokens is NewScramServer that also authenticates
// with the delegation tokens of tokens (nil: none).
func NewScramServerWithTokens(m ScramMechanism, creds ScramCredentials, tokens DelegationTokenCredentials) SASLServer {
	return &scramServer{mech: m, creds: creds, tokens: tokens, nonce: randomNonce}
}

// DelegationTokenCredentials looks up the SCRAM credential of a delegation
// token id for a mechanism; false when there is no such token.
type DelegationTokenCredentials func(m ScramMechanism, id string) (TokenCredential, bool)

// TokenCredential is what authenticating with a delegation token needs:
// the SCRAM credential its HMAC makes, its owner and its expiry.
type TokenCredential struct {
	Credential ScramCredential
	Owner      Principal
	Expiry     time.Time
}

// TokenAuthenticated is a SASLServer that may authenticate clients with
// delegation tokens: such clients may not manage tokens (Kafka's
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
type TokenAuthenticated interface {
	// TokenAuthenticated reports, once Step reported done, whether the
	// client authenticated with a delegation token.
	TokenAuthenticated() bool
}

type scramState int

const (
	scramFirst scramState = iota
	scramFinal
	scramDone
	scramFailed
)

type scramServer struct {
	mech   ScramMechanism
	creds  ScramCredentials
	tokens DelegationTokenCredentials
	nonce  func() string // the server's part of the nonce
	// token is the delegation token the client authenticates with, if
	// it asked for tokenauth.
	token *TokenCredential

	state       scramState
	user        string
	cred        ScramCredential
	first       *ScramClientFirst
	serverFirst string
}

// randomNonce is 24 random bytes, base64url: printable, no ','.
func randomNonce() string {
	b := make([]byte, 24)
	rand.Read(b) // crypto/rand.Read never fails (it aborts the program)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *scramServer) Step(token []byte) ([]byte, bool, error) {
	var out []byte
	var err error
	switch s.state {
	case scramFirst:
		out, err = s.clientFirst(token)
	case scramFinal:
		out, err = s.clientFinal(token)
		if err == nil {
			s.state = scramDone
			s.cred = ScramCredential{} // not needed any more
			return out, true, nil
		}
	default:
		err = fmt.Errorf("unexpected SCRAM message in state %d", s.state)
	}
	if err != nil {
		s.state = scramFailed
		s.cred = ScramCredential{}
	}
	return out, false, err
}

func (s *scramServer) clientFirst(token []byte) ([]byte, error) {
	first, err := ParseScramClientFirst(token)
	if err != nil {
		return nil, err
	}
	var cred ScramCredential
	ok := false
	switch {
	case first.Extensions["tokenauth"] == "true":
		if s.tokens == nil {
			return nil, fmt.Errorf("delegation token authentication is not enabled")
		}
		var t TokenCredential
		if t, ok = s.tokens(s.mech, first.User); ok {
			cred, s.token = t.Credential, &t
		}
	case s.creds != nil:
		cred, ok = s.creds(s.mech, first.User)
	}
	if !ok {
		return nil, fmt.Errorf("authentication failed: invalid user credentials")
	}
	if first.AuthzID != "" && first.AuthzID != first.User {
		return nil, authFailed("Authentication failed: Client requested an authorization id that is different from username")
	}
	if cred.Iterations < ScramMinIterations {
		return nil, fmt.Errorf("iterations %d is less than the minimum %d for %s", cred.Iterations, ScramMinIterations, s.mech)
	}
	s.user, s.cred, s.first = first.User, cred, first
	s.serverFirst = "r=" + first.Nonce + s.nonce() + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) +
		",i=" + strconv.Itoa(int(cred.Iterations))
	s.state = scramFinal
	return []byte(s.serverFirst), nil
}

func (s *scramServer) clientFinal(token []byte) ([]byte, error) {
	final, err := ParseScramClientFinal(token)
	if err != nil {
		return nil, err
	}
	if string(final.ChannelBinding) != s.first.GS2Header {
		return nil, fmt.Errorf("invalid channel binding in the final client message")
	}
	// Kafka accepts a nonce that ends with the one it sent
	// (ScramSaslServer: endsWith): librdkafka before 2.x sent its own
	// part twice. The proof covers the message as sent either way.
	if !strings.HasSuffix(final.Nonce, s.combinedNonce()) {
		return nil, fmt.Errorf("invalid client nonce in the final client message")
	}
	authMessage := []byte(s.first.Bare + "," + s.serverFirst + "," + final.WithoutProof)
	clientSignature := s.mech.hmac(s.cred.StoredKey, authMessage)
	if len(final.Proof) != len(clientSignature) {
		return nil, fmt.Errorf("invalid client credentials")
	}
	clientKey := make([]byte, len(clientSignature))
	for i := range clientKey {
		clientKey[i] = final.Proof[i] ^ clientSignature[i]
	}
	if !hmac.Equal(s.mech.digest(clientKey), s.cred.StoredKey) {
		return nil, fmt.Errorf("invalid client credentials")
	}
	serverSignature := s.mech.hmac(s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), nil
}

// combinedNonce is the nonce of server-first, client's part and ours.
func (s *scramServer) combinedNonce() string {
	v := s.serverFirst[len("r="):]
	for i := 0; i < len(v); i++ {
		if v[i] == ',' {
			return v[:i]
		}
	}
	return v
}

func (s *scramServer) Principal() Principal {
	if s.token != nil {
		return s.token.Owner
	}
	return User(s.user)
}

func (s *scramServer) TokenAuthenticated() bool { return s.token != nil }

// CredentialExpiry is a delegation token's expiry (ExpiringCredential);
// zero for a user's credential, which does not expire.
func (s *scramServer) CredentialExpiry() time.Time {
	if s.token != nil {
		return s.token.Expiry
	}
	return time.Time{}
}
