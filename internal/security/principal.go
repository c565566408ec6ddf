package security

// Principal is a client's identity as Kafka's KafkaPrincipal: a type
// ("User") and a name. A connection that did not authenticate is
// User:ANONYMOUS.
type Principal struct {
	Type string
	Name string
}

// UserType is the principal type of every authenticated client.
const UserType = "User"

// Anonymous is the principal of a connection that did not authenticate
// (PLAINTEXT, or SSL without a client certificate).
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// User is the principal User:name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// String is Kafka's form, "User:alice".
func (p Principal) String() string { return p.Type + ":" + p.Name }
