package metadata

import (
	"encoding/base64"
	"fmt"
	"io"
)

// Uuid is Kafka's 128-bit identifier (topic ids, incarnation ids).
type Uuid [16]byte

// ZeroUuid is Kafka's Uuid.ZERO_UUID, meaning "no id".
var ZeroUuid Uuid

// String formats the id as Kafka does: URL-safe base64 without padding.
func (u Uuid) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// IsZero reports whether u is the zero id.
func (u Uuid) IsZero() bool { return u == ZeroUuid }

// ParseUuid parses the String form.
func ParseUuid(s string) (Uuid, error) {
	var u Uuid
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("invalid uuid %q: want 22 characters of URL-safe base64", s)
	}
	copy(u[:], b)
	return u, nil
}

// RandomUuid reads a version-4 uuid from r. Like Kafka's Uuid.randomUuid and
// DirectoryId.random it never returns a reserved id (all zero but a last
// byte below 100), nor one whose string starts with '-' (it would look like
// a command-line flag).
func RandomUuid(r io.Reader) (Uuid, error) {
	for {
		var u Uuid
		if _, err := io.ReadFull(r, u[:]); err != nil {
			return u, fmt.Errorf("random uuid: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if !u.reserved() && u.String()[0] != '-' {
			return u, nil
		}
	}
}

// MarshalText implements encoding.TextMarshaler.
func (u Uuid) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (u *Uuid) UnmarshalText(b []byte) error {
	v, err := ParseUuid(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// reserved reports whether u is one of the ids Kafka keeps for itself.
func (u Uuid) reserved() bool {
	for _, b := range u[:15] {
		if b != 0 {
			return false
		}
	}
	return u[15] < 100
}
