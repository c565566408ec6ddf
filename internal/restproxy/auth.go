package restproxy

import (
	"context"
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultRealm is the realm of the basic authentication challenge when
// BasicAuth.Realm is empty: Confluent's authentication.realm of the REST
// Proxy's examples.
const DefaultRealm = "KafkaRest"

// BasicAuth is HTTP basic authentication of every request, as Confluent's
// proxy does it with authentication.method=BASIC: the credentials must
// name a user of Users with its password, and when Roles is not empty
// (and not "*") the user must hold one of them. Anything else is answered
// 401 {"error_code":401,"message":"Unauthorized"} with a WWW-Authenticate
// challenge for Realm.
type BasicAuth struct {
	Realm string
	Users map[string]User
	Roles []string
}

// User is one user of BasicAuth.
type User struct {
	// Password in clear, or "MD5:" and its hex MD5 digest (the forms of
	// the users file Confluent's PropertyFileLoginModule reads).
	Password string
	Roles    []string
}

// check reports whether name and password are a permitted user's.
func (a *BasicAuth) check(name, password string) bool {
	u, known := a.Users[name]
	want, got := []byte(u.Password), []byte(password)
	if digest, ok := strings.CutPrefix(u.Password, "MD5:"); ok {
		sum := md5.Sum(got)
		want, got = []byte(strings.ToLower(digest)), []byte(hex.EncodeToString(sum[:]))
	}
	// Compare even for an unknown user, so that timing does not tell
	// which names exist.
	match := subtle.ConstantTimeCompare(want, got) == 1
	if !known || !match {
		return false
	}
	if len(a.Roles) == 0 || slices.Contains(a.Roles, "*") {
		return true
	}
	for _, r := range u.Roles {
		if slices.Contains(a.Roles, r) {
			return true
		}
	}
	return false
}

// principalKey marks a request's context with its authenticated user.
type principalKey struct{}

// principal is an authenticated user and, with principal propagation, the
// cluster clients logged in as that user.
type principal struct {
	name string
	cl   *kgo.Client // nil without propagation
	adm  *kadm.Client
	opts []kgo.Opt // the login options of cl
}

// authenticate checks the request's credentials against cfg.Auth and
// returns the request with its principal in the context, or answers 401
// and returns nil.
func (p *Proxy) authenticate(w http.ResponseWriter, r *http.Request) *http.Request {
	a := p.cfg.Auth
	if a == nil {
		return r
	}
	name, password, ok := r.BasicAuth()
	if !ok || !a.check(name, password) {
		realm := a.Realm
		if realm == "" {
			realm = DefaultRealm
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q", realm))
		writeError(w, errf(401, 401, "Unauthorized"))
		return nil
	}
	pr := &principal{name: name}
	if p.cfg.UserClientOpts != nil {
		var err error
		if pr, err = p.userClient(name, password); err != nil {
			writeError(w, kafkaError(err))
			return nil
		}
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, pr))
}

// userClient returns the cluster client logged in as user, made at the
// user's first request. The users are those of the users file, so the
// clients are few; they live as long as the proxy.
func (p *Proxy) userClient(user, password string) (*principal, error) {
	p.users.Lock()
	defer p.users.Unlock()
	if pr := p.users.m[user]; pr != nil {
		return pr, nil
	}
	if p.users.closed {
		return nil, fmt.Errorf("the proxy is shutting down")
	}
	opts := p.cfg.UserClientOpts(user, password)
	cl, err := p.newClient(opts)
	if err != nil {
		return nil, err
	}
	pr := &principal{name: user, cl: cl, adm: kadm.NewClient(cl), opts: opts}
	p.users.m[user] = pr
	return pr, nil
}

// principalOf is the request's authenticated user, nil without
// authentication.
func principalOf(ctx context.Context) *principal {
	pr, _ := ctx.Value(principalKey{}).(*principal)
	return pr
}

// client is the cluster client a request works with: the user's own with
// principal propagation, else the proxy's.
func (p *Proxy) client(ctx context.Context) *kgo.Client {
	if pr := principalOf(ctx); pr != nil && pr.cl != nil {
		return pr.cl
	}
	return p.cl
}

// admin is client's admin client.
func (p *Proxy) admin(ctx context.Context) *kadm.Client {
	if pr := principalOf(ctx); pr != nil && pr.adm != nil {
		return pr.adm
	}
	return p.adm
}

// closeUsers closes every user's client.
func (p *Proxy) closeUsers() {
	p.users.Lock()
	defer p.users.Unlock()
	p.users.closed = true
	for _, u := range p.users.m {
		u.cl.Close()
	}
	p.users.m = nil
}
