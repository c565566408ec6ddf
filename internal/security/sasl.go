package security

import (
	"errors"
	"fmt"
)

// SASL mechanism names, as clients send them in SaslHandshake.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
	MechanismGSSAPI      = "GSSAPI"
	MechanismOAuthBearer = "OAUTHBEARER"
)

// SupportedMechanisms are the SASL mechanisms Samsa serves.
var SupportedMechanisms = []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512, MechanismOAuthBearer}

// SASLServer is the server side of one SASL exchange (Java's SaslServer).
// One is made per authentication and used by one goroutine.
type SASLServer interface {
	// Step evaluates the client's next token and returns the server's
	// answer to it. done reports that the exchange is complete and the
	// client authenticated; an error fails the exchange (see
	// FailureMessage for what the client is told).
	Step(token []byte) (challenge []byte, done bool, err error)
	// Principal is who the client authenticated as, once Step reported
	// done.
	Principal() Principal
}

// AuthenticationError fails a SASL exchange with a message the client is
// sent as it is (Kafka's SaslAuthenticationException). A mechanism
// returns one only where the message tells an unauthenticated client
// nothing it should not know; any other error from Step is reported with
// Kafka's generic message.
type AuthenticationError struct {
	Message string
}

func (e *AuthenticationError) Error() string { return e.Message }

func authFailed(format string, args ...any) error {
	return &AuthenticationError{Message: fmt.Sprintf(format, args...)}
}

// FailureMessage is the error message a client gets in the
// SaslAuthenticate response when err failed its exchange: the message of
// an AuthenticationError, otherwise Kafka's generic text, which does not
// say whether the user exists.
func FailureMessage(err error, mechanism string, reauthenticating bool) string {
	var ae *AuthenticationError
	if errors.As(err, &ae) {
		return ae.Message
	}
	what := "authentication"
	if reauthenticating {
		what = "re-authentication"
	}
	return fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", what, mechanism)
}
