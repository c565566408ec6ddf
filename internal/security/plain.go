package security

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
)

// PlainLoginModule is the JAAS login module class of SASL/PLAIN.
const PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// PlainUsers are the users SASL/PLAIN accepts, from the JAAS options
// user_<name>="<password>" (Kafka's PlainServerCallbackHandler). The
// options username and password are the broker's own credentials as a
// client and define no user.
type PlainUsers struct {
	// digests holds SHA-256 of each password, so that comparing costs
	// the same whatever the lengths.
	digests map[string][sha256.Size]byte
}

// PlainUsersFromJAAS reads the users of a PlainLoginModule JAAS config.
func PlainUsersFromJAAS(jaas string) (*PlainUsers, error) {
	m, err := ParseJAASModule(jaas, PlainLoginModule)
	if err != nil {
		return nil, err
	}
	u := &PlainUsers{digests: map[string][sha256.Size]byte{}}
	for k, v := range m.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			u.digests[name] = sha256.Sum256([]byte(v))
		}
	}
	return u, nil
}

// Len is the number of users.
func (u *PlainUsers) Len() int { return len(u.digests) }

// Check reports whether password is user's, in time that does not depend
// on how much of it matches. An unknown user is compared against a
// digest that matches nothing, so it costs the same.
func (u *PlainUsers) Check(user string, password []byte) bool {
	want, known := u.digests[user]
	got := sha256.Sum256(password)
	eq := subtle.ConstantTimeCompare(want[:], got[:]) == 1
	return known && eq
}

// NewPlainServer returns the server side of one SASL/PLAIN exchange
// (RFC 4616, Kafka's PlainSaslServer) checking against users.
func NewPlainServer(users *PlainUsers) SASLServer { return &plainServer{users: users} }

type plainServer struct {
	users *PlainUsers
	user  string
}

// ParsePlain splits a PLAIN token, [authzid] NUL authcid NUL passwd.
func ParsePlain(token []byte) (authzid, user string, password []byte, err error) {
	parts := bytes.SplitN(token, []byte{0}, 4)
	if len(parts) != 3 {
		return "", "", nil, authFailed("Invalid SASL/PLAIN response: expected 3 tokens, got %d", min(len(parts), 4))
	}
	return string(parts[0]), string(parts[1]), parts[2], nil
}

func (s *plainServer) Step(token []byte) ([]byte, bool, error) {
	if s.user != "" {
		return nil, false, fmt.Errorf("SASL/PLAIN: unexpected token after completion")
	}
	authzid, user, password, err := ParsePlain(token)
	switch {
	case err != nil:
		return nil, false, err
	case user == "":
		return nil, false, authFailed("Authentication failed: username not specified")
	case len(password) == 0:
		return nil, false, authFailed("Authentication failed: password not specified")
	case !s.users.Check(user, password):
		return nil, false, authFailed("Authentication failed: Invalid username or password")
	case authzid != "" && authzid != user:
		return nil, false, authFailed("Authentication failed: Client requested an authorization id that is different from username")
	}
	s.user = user
	return []byte{}, true, nil
}

func (s *plainServer) Principal() Principal { return User(s.user) }
