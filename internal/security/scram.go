package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
)

// SCRAM (RFC 5802, RFC 7677) as Kafka keeps it: per user and mechanism a
// credential of salt, iteration count, StoredKey and ServerKey — never
// the password, nor the salted password — in the metadata log
// (UserScramCredentialRecord), so that every node authenticates with the
// same credentials and changes apply everywhere.

// ScramLoginModule is the JAAS login module class of the SCRAM mechanisms.
const ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"

// ScramMechanism is a SCRAM mechanism, numbered as Kafka's ScramMechanism
// type (AlterUserScramCredentials, UserScramCredentialRecord).
type ScramMechanism int8

// The SCRAM mechanisms.
const (
	ScramUnknown ScramMechanism = 0
	ScramSHA256  ScramMechanism = 1
	ScramSHA512  ScramMechanism = 2
)

// Iteration bounds: Kafka's minimum for both mechanisms, and the most
// AlterUserScramCredentials accepts (ScramControlManager.MAX_ITERATIONS).
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramMechanismByName returns the mechanism named SCRAM-SHA-256 or
// SCRAM-SHA-512.
func ScramMechanismByName(name string) (ScramMechanism, bool) {
	switch name {
	case MechanismScramSHA256:
		return ScramSHA256, true
	case MechanismScramSHA512:
		return ScramSHA512, true
	}
	return ScramUnknown, false
}

// Valid reports whether m is a mechanism Samsa knows.
func (m ScramMechanism) Valid() bool { return m == ScramSHA256 || m == ScramSHA512 }

// Name is the mechanism's SASL name.
func (m ScramMechanism) Name() string {
	switch m {
	case ScramSHA256:
		return MechanismScramSHA256
	case ScramSHA512:
		return MechanismScramSHA512
	}
	return "UNKNOWN"
}

func (m ScramMechanism) String() string { return m.Name() }

func (m ScramMechanism) hash() func() hash.Hash {
	if m == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

func (m ScramMechanism) hmac(key []byte, parts ...[]byte) []byte {
	h := hmac.New(m.hash(), key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func (m ScramMechanism) digest(b []byte) []byte {
	h := m.hash()()
	h.Write(b)
	return h.Sum(nil)
}

// SaltedPassword is Hi(password, salt, iterations): PBKDF2 with the
// mechanism's HMAC. Kafka uses the password's UTF-8 bytes as they are
// (no SASLprep), and so does this.
func (m ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) []byte {
	k, err := pbkdf2.Key(m.hash(), password, salt, iterations, m.hash()().Size())
	if err != nil {
		// Only FIPS-140-only mode refuses; Samsa does not run in it.
		panic("scram: pbkdf2: " + err.Error())
	}
	return k
}

// ScramCredential is what a server keeps of a user's password.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// CredentialFromSalted derives the stored credential from a salted
// password, as Kafka's controller does for AlterUserScramCredentials
// upsertions: StoredKey = H(HMAC(salted, "Client Key")), ServerKey =
// HMAC(salted, "Server Key").
func (m ScramMechanism) CredentialFromSalted(salt, salted []byte, iterations int32) ScramCredential {
	clientKey := m.hmac(salted, []byte("Client Key"))
	return ScramCredential{
		Salt:       salt,
		StoredKey:  m.digest(clientKey),
		ServerKey:  m.hmac(salted, []byte("Server Key")),
		Iterations: iterations,
	}
}

// NewCredential computes the credential of a password.
func (m ScramMechanism) NewCredential(password string, salt []byte, iterations int32) ScramCredential {
	return m.CredentialFromSalted(salt, m.SaltedPassword(password, salt, int(iterations)), iterations)
}

// ScramCredentials looks up the credential of a user for a mechanism; on
// a broker, in the latest metadata image.
type ScramCredentials func(m ScramMechanism, user string) (ScramCredential, bool)
