// Package httpauth is HTTP basic authentication of Samsa's HTTP
// listeners (the Schema Registry's, the node's metrics and health
// endpoints) against a users file in the format of Jetty's property
// files, which Confluent's services read through JAAS's
// PropertyFileLoginModule.
package httpauth

import (
	"bufio"
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
)

// BasicAuth is HTTP basic authentication, as Confluent's services do it
// with authentication.method=BASIC: every request must carry the
// credentials of a user in Users, and when Roles is not empty that user
// must hold one of them (Confluent's authentication.roles; "*" allows any
// role). Anything else is answered 401 with a WWW-Authenticate challenge
// for Realm (Challenge).
type BasicAuth struct {
	Realm string
	Users map[string]User
	Roles []string
}

// User is an entry of a users file.
type User struct {
	// Password is the password in clear, or "MD5:" and its hex MD5
	// digest, as Jetty's property files allow.
	Password string
	Roles    []string
}

// LoadUsers reads a users file in the format of Jetty's property files,
// which Confluent's registry reads through the JAAS PropertyFileLoginModule:
// one user a line, `name: password[,role ...]` (`=` may stand for `:`),
// blank lines and lines starting with # or ! ignored. A password is in
// clear, or `MD5:` and the hex digest; Jetty's OBF: and CRYPT: forms are
// refused.
func LoadUsers(path string) (map[string]User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	users := map[string]User{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, ":=")
		if i <= 0 {
			return nil, fmt.Errorf("%s:%d: want name: password[,role ...]", path, n)
		}
		name := strings.TrimSpace(line[:i])
		fields := strings.Split(line[i+1:], ",")
		u := User{Password: strings.TrimSpace(fields[0])}
		for _, r := range fields[1:] {
			if r = strings.TrimSpace(r); r != "" {
				u.Roles = append(u.Roles, r)
			}
		}
		switch {
		case strings.HasPrefix(u.Password, "OBF:"), strings.HasPrefix(u.Password, "CRYPT:"):
			return nil, fmt.Errorf("%s:%d: user %s: only clear and MD5: passwords are supported", path, n, name)
		case strings.HasPrefix(u.Password, "MD5:"):
			if d, err := hex.DecodeString(u.Password[4:]); err != nil || len(d) != md5.Size {
				return nil, fmt.Errorf("%s:%d: user %s: MD5: wants 32 hex digits", path, n, name)
			}
		}
		users[name] = u
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return users, nil
}

// Allows reports whether the request's credentials name a user of a
// permitted role with the right password.
func (a *BasicAuth) Allows(req *http.Request) bool {
	name, password, ok := req.BasicAuth()
	if !ok {
		return false
	}
	u, known := a.Users[name]
	want := []byte(u.Password)
	got := []byte(password)
	if d, isMD5 := strings.CutPrefix(u.Password, "MD5:"); isMD5 {
		sum := md5.Sum(got)
		want, got = []byte(strings.ToLower(d)), []byte(hex.EncodeToString(sum[:]))
	}
	match := subtle.ConstantTimeCompare(want, got) == 1
	return known && match && a.roleAllowed(u.Roles)
}

func (a *BasicAuth) roleAllowed(roles []string) bool {
	if len(a.Roles) == 0 || slices.Contains(a.Roles, "*") {
		return true
	}
	for _, r := range roles {
		if slices.Contains(a.Roles, r) {
			return true
		}
	}
	return false
}

// Challenge is the WWW-Authenticate value of a 401 answer: Basic with
// Realm, or with defaultRealm when Realm is empty.
func (a *BasicAuth) Challenge(defaultRealm string) string {
	realm := a.Realm
	if realm == "" {
		realm = defaultRealm
	}
	return fmt.Sprintf("Basic realm=%q", realm)
}
