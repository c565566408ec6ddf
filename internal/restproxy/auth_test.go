package restproxy

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	saslplain "github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/servertest"
)

// users of the auth tests: alice and bob are developers, carol a guest;
// bob's password is stored as its MD5 digest.
var testAuth = &BasicAuth{
	Users: map[string]User{
		"alice": {Password: "alice-secret", Roles: []string{"developer"}},
		"bob":   {Password: "MD5:" + md5Hex("bob-secret"), Roles: []string{"developer"}},
		"carol": {Password: "carol-secret", Roles: []string{"guest"}},
	},
	Roles: []string{"developer"},
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestBasicAuth: without, with wrong or with unpermitted credentials every
// path answers 401 with a challenge and produces nothing; a developer's
// credentials (clear or MD5 in the users file) are served.
func TestBasicAuth(t *testing.T) {
	e := start(t, Config{Auth: testAuth})
	e.createTopic("secured", 1)
	body := map[string]any{"records": []any{map[string]any{"value": b64("v")}}}
	for _, c := range []struct{ user, pass string }{{"", ""}, {"alice", "nope"}, {"nobody", "alice-secret"}, {"carol", "carol-secret"}} {
		for _, path := range []string{"/topics", "/topics/secured", "/v3/clusters"} {
			method, ct := "GET", ""
			var b any
			if path == "/topics/secured" {
				method, ct, b = "POST", binaryType, body
			}
			r := e.as(c.user, c.pass).do(method, path, ct, "", b)
			if r.status != 401 || r.errorCode(t) != 401 {
				t.Errorf("%s %s as %q/%q: %d %s", method, path, c.user, c.pass, r.status, r.body)
			}
		}
	}
	req, _ := http.NewRequest("GET", e.url+"/topics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("WWW-Authenticate"); got != `Basic realm="KafkaRest"` {
		t.Errorf("challenge %q", got)
	}
	if end, _ := e.adm.ListEndOffsets(e.ctx, "secured"); end["secured"][0].Offset != 0 {
		t.Errorf("refused requests produced: end offset %d", end["secured"][0].Offset)
	}
	for _, u := range []*env{e.as("alice", "alice-secret"), e.as("bob", "bob-secret")} {
		var topics []string
		u.want(u.do("GET", "/topics", "", "", nil), 200).decode(t, &topics)
		if !slices.Contains(topics, "secured") {
			t.Errorf("%s: topics %v", u.user, topics)
		}
		u.want(u.do("POST", "/topics/secured", binaryType, "", body), 200)
	}
	if got := e.consume("secured", 2); len(got) != 2 {
		t.Errorf("consumed %d records", len(got))
	}
}

// TestPrincipalPropagation runs the proxy in front of a node with ACLs:
// each basic-auth user talks to the cluster as its own SASL/PLAIN
// principal, so the broker lets alice write her topic and refuses bob,
// each sees only the topics it may describe, and a consumer instance
// belongs to the user who made it.
func TestPrincipalPropagation(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
	s := servertest.Start(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+jaas,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		// The test's own clients (and the node's) use PLAINTEXT.
		"super.users=User:ANONYMOUS",
		"allow.everyone.if.no.acl.found=false")
	cfg := Config{Auth: testAuth, Logger: servertest.Logger(),
		ClientOpts: []kgo.Opt{kgo.SeedBrokers(s.Addr("SASL_PLAINTEXT"))},
		UserClientOpts: func(user, password string) []kgo.Opt {
			return []kgo.Opt{kgo.SASL(saslplain.Auth{User: user, Pass: password}.AsMechanism())}
		}}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(func() { srv.Close(); p.Close() })
	e := startOn(t, s, Config{})
	e.url = srv.URL
	e.createTopic("alice-topic", 1)
	e.createTopic("other", 1)
	acls := kadm.NewACLs().Allow("User:alice").Topics("alice-topic").Groups("alice-group").
		Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe)
	if rs, err := e.adm.CreateACLs(e.ctx, acls); err != nil || rs[0].Err != nil {
		t.Fatalf("create ACLs: %v %v", err, rs)
	}
	alice, bob := e.as("alice", "alice-secret"), e.as("bob", "bob-secret")
	body := map[string]any{"records": []any{map[string]any{"key": b64("k"), "value": b64("from alice")}}}
	// The ACL reaches the broker's authorizer through the metadata log.
	e.eventually("alice may describe alice-topic", func() bool {
		return alice.do("GET", "/topics/alice-topic/partitions", "", "", nil).status == 200
	})
	var off offsetAnswer
	alice.want(alice.do("POST", "/topics/alice-topic", binaryType, "", body), 200).decode(t, &off)
	if len(off.Offsets) != 1 || off.Offsets[0].Offset == nil || *off.Offsets[0].Offset != 0 {
		t.Errorf("alice's produce: %+v", off)
	}
	if r := bob.do("POST", "/topics/alice-topic", binaryType, "", body); r.status != 403 || r.errorCode(t) != 40301 {
		t.Errorf("bob's produce: %d %s", r.status, r.body)
	}
	if r := alice.do("GET", "/topics/other", "", "", nil); r.status != 403 || r.errorCode(t) != 40301 {
		t.Errorf("alice reads other: %d %s", r.status, r.body)
	}
	var topics []string
	alice.want(alice.do("GET", "/topics", "", "", nil), 200).decode(t, &topics)
	if !slices.Equal(topics, []string{"alice-topic"}) {
		t.Errorf("alice's topics: %v", topics)
	}
	bob.want(bob.do("GET", "/topics", "", "", nil), 200).decode(t, &topics)
	if len(topics) != 0 {
		t.Errorf("bob's topics: %v", topics)
	}
	recs := e.consume("alice-topic", 1)
	if string(recs[0].Value) != "from alice" {
		t.Errorf("record %q", recs[0].Value)
	}

	// A consumer instance reads as its creator; another user cannot
	// reach it.
	var created struct {
		BaseURI string `json:"base_uri"`
	}
	alice.want(alice.do("POST", "/consumers/alice-group", v2Type, "", map[string]any{"name": "c1", "auto.offset.reset": "earliest"}), 200).decode(t, &created)
	inst := "/consumers/alice-group/instances/c1"
	for _, r := range []response{
		bob.do("POST", inst+"/subscription", v2Type, "", map[string]any{"topics": []string{"alice-topic"}}),
		bob.do("DELETE", inst, "", "", nil),
	} {
		if r.status != 404 || r.errorCode(t) != 40403 {
			t.Errorf("bob on alice's instance: %d %s", r.status, r.body)
		}
	}
	alice.want(alice.do("POST", inst+"/subscription", v2Type, "", map[string]any{"topics": []string{"alice-topic"}}), 204)
	var got []v2RecordAnswer
	deadline := time.Now().Add(60 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		var batch []v2RecordAnswer
		alice.want(alice.do("GET", inst+"/records?timeout=500", "", binaryType, nil), 200).decode(t, &batch)
		got = append(got, batch...)
	}
	if len(got) != 1 || string(mustB64(t, got[0].Value)) != "from alice" {
		t.Errorf("alice's instance read %+v", got)
	}
	alice.want(alice.do("POST", inst+"/offsets", v2Type, "", nil), 200)
	committed, err := e.adm.FetchOffsets(e.ctx, "alice-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := committed.Lookup("alice-topic", 0); o.At != 1 {
		t.Errorf("committed %+v", o)
	}
	alice.want(alice.do("DELETE", inst, "", "", nil), 204)
}

func mustB64(t *testing.T, v any) []byte {
	t.Helper()
	s, _ := v.(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	return b
}
