package registry

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/servertest"
)

func writeUsers(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "users.properties")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadUsers(t *testing.T) {
	// MD5:5f4dcc3b5aa765d61d8327deb882cf99 is the digest of "password".
	users, err := LoadUsers(writeUsers(t, "# comment\n! comment\n\nalice: secret,admin, developer\nbob=MD5:5f4dcc3b5aa765d61d8327deb882cf99\ncarol : pw\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u := users["alice"]; u.Password != "secret" || len(u.Roles) != 2 || u.Roles[1] != "developer" {
		t.Errorf("alice = %+v", u)
	}
	if u := users["carol"]; u.Password != "pw" || len(u.Roles) != 0 {
		t.Errorf("carol = %+v", u)
	}
	if len(users) != 3 {
		t.Errorf("users = %v", users)
	}
	for _, bad := range []string{"alice\n", ": pw\n", "dave: OBF:1v2j1uum1xtv1zej1zer1xtn1uvk1v1v\n", "erin: MD5:abc\n"} {
		if _, err := LoadUsers(writeUsers(t, bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := LoadUsers(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing file accepted")
	}
}

// TestBasicAuth checks Confluent's answer to a request without valid
// credentials (401, its JSON body and a Basic challenge) and that sr
// clients with a permitted user's credentials register and read.
func TestBasicAuth(t *testing.T) {
	users, err := LoadUsers(writeUsers(t, "alice: secret,developer\nbob: MD5:5f4dcc3b5aa765d61d8327deb882cf99,developer\nmallory: pw,guest\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := servertest.Start(t)
	reg := New(Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(servertest.Addr(s))}, Logger: servertest.Logger(),
		Auth: &BasicAuth{Realm: "SchemaRegistry", Users: users, Roles: []string{"admin", "developer"}}})
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(func() { srv.Close(); reg.Close() })
	ctx := testContext(t)
	client := func(opts ...sr.ClientOpt) *sr.Client {
		cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(srv.URL), sr.HTTPClient(&http.Client{Timeout: 60 * time.Second})}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}

	for name, cl := range map[string]*sr.Client{
		"no credentials":      client(),
		"wrong password":      client(sr.BasicAuth("alice", "secrets")),
		"unknown user":        client(sr.BasicAuth("eve", "secret")),
		"user without a role": client(sr.BasicAuth("mallory", "pw")),
	} {
		_, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV1})
		var re *sr.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized || re.ErrorCode != 401 || re.Message != "Unauthorized" {
			t.Errorf("%s: register: %v", name, err)
		}
		if _, err := cl.Subjects(ctx); code(err) != 401 {
			t.Errorf("%s: subjects: %v", name, err)
		}
	}
	// The raw answer: Confluent's body and the challenge.
	resp, err := http.Get(srv.URL + "/subjects")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Basic realm="SchemaRegistry"` ||
		body["error_code"] != float64(401) || body["message"] != "Unauthorized" || resp.Header.Get("Content-Type") != contentType {
		t.Errorf("401 answer: %d %v %v", resp.StatusCode, resp.Header, body)
	}

	alice, bob := client(sr.BasicAuth("alice", "secret")), client(sr.BasicAuth("bob", "password"))
	got, err := alice.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV1})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := bob.SchemaByID(ctx, got.ID); err != nil || s.Schema != userV1 {
		t.Errorf("bob (MD5 password) reads id %d: %+v, %v", got.ID, s, err)
	}
	if subjects, err := bob.Subjects(ctx); err != nil || len(subjects) != 1 || subjects[0] != "users-value" {
		t.Errorf("subjects: %v, %v", subjects, err)
	}
}
