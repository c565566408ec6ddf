package registry

import (
	"net/http"

	"github.com/samsa-io/samsa/internal/httpauth"
)

// DefaultRealm is the realm a BasicAuth without one announces: the name
// Confluent's documentation gives the registry's JAAS section.
const DefaultRealm = "SchemaRegistry"

// BasicAuth is HTTP basic authentication of the REST API, as Confluent's
// registry does it with authentication.method=BASIC (httpauth).
type BasicAuth = httpauth.BasicAuth

// User is an entry of a users file.
type User = httpauth.User

// LoadUsers reads a users file (httpauth.LoadUsers).
func LoadUsers(path string) (map[string]User, error) { return httpauth.LoadUsers(path) }

// wrapAuth refuses requests without valid credentials with Confluent's 401.
func wrapAuth(a *BasicAuth, next http.Handler) http.Handler {
	challenge := a.Challenge(DefaultRealm)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !a.Allows(req) {
			w.Header().Set("WWW-Authenticate", challenge)
			write(w, http.StatusUnauthorized, map[string]any{"error_code": http.StatusUnauthorized, "message": "Unauthorized"})
			return
		}
		next.ServeHTTP(w, req)
	})
}
