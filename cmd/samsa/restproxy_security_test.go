package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/security/tlstest"
	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// startRestProxyProc runs `samsa rest-proxy` with args and returns the URL
// it logs it listens on; the process is stopped with SIGTERM at cleanup,
// and must exit cleanly.
func startRestProxyProc(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"rest-proxy"}, args...)...)
	cmd.Env = append(os.Environ(), "SAMSA_RUN_MAIN=1")
	out := &lockedBuffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("samsa rest-proxy exit: %v\n%s", err, out.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("samsa rest-proxy did not stop on SIGTERM:\n%s", out.String())
		}
	})
	return waitFor(t, restProxyRE, out.String)
}

var saslAddrRE = regexp.MustCompile(`serving Kafka clients" listener=SASL_PLAINTEXT addr=(\S+)`)

// TestRestProxyHTTPSPropagation serves the REST Proxy of `samsa server`
// on an https listener with basic authentication and principal
// propagation (rest.proxy.* keys) in front of a node with ACLs, and a
// `samsa rest-proxy` with the same settings as flags: a client must trust
// the CA and give a user's credentials, and the broker authorizes each
// user as its own SASL/PLAIN principal, so alice may write her topic and
// bob may not.
func TestRestProxyHTTPSPropagation(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "Samsa REST Proxy test CA")
	keystore := ca.Server(t, pkix.Name{CommonName: "localhost"}).WritePEM(t, dir, "proxy.pem")
	users := writeFile(t, dir, "users.properties", "alice: alice-secret,developer\nbob: bob-secret,developer\ncarol: carol-secret,guest\n")
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
	srv := startServerProc(t, t.TempDir(),
		"--override", "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"--override", "sasl.enabled.mechanisms=PLAIN",
		"--override", "listener.name.sasl_plaintext.plain.sasl.jaas.config="+jaas,
		"--override", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"--override", "super.users=User:ANONYMOUS",
		"--override", "schema.registry.listeners=",
		"--override", "rest.proxy.listeners=https://127.0.0.1:0",
		"--override", "rest.proxy.ssl.keystore.type=PEM",
		"--override", "rest.proxy.ssl.keystore.location="+keystore,
		"--override", "rest.proxy.authentication.method=BASIC",
		"--override", "rest.proxy.authentication.users.file="+users,
		"--override", "rest.proxy.authentication.roles=developer",
		"--override", "rest.proxy.confluent.rest.auth.propagate.method=JETTY_AUTH")
	url1 := waitFor(t, restProxyRE, srv.stderr.String)
	if !strings.HasPrefix(url1, "https://127.0.0.1:") {
		t.Fatalf("rest proxy listens on %s", url1)
	}
	saslAddr := waitFor(t, saslAddrRE, srv.stderr.String)
	url2 := startRestProxyProc(t, "--bootstrap", saslAddr, "--listen", "https://127.0.0.1:0",
		"--https-cert", keystore, "--https-key", keystore, "--users-file", users, "--roles", "developer",
		"--propagate-principal", "PLAIN")
	// The same from a kafka-rest.properties with Confluent's names.
	props := writeFile(t, dir, "kafka-rest.properties", strings.Join([]string{
		"id=samsa-rest-test",
		"bootstrap.servers=SASL_PLAINTEXT://" + saslAddr,
		"listeners=https://127.0.0.1:0",
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + keystore,
		"authentication.method=BASIC",
		"authentication.realm=KafkaRest",
		"authentication.roles=developer",
		"authentication.users.file=" + users,
		"client.security.protocol=SASL_PLAINTEXT",
		"client.sasl.mechanism=PLAIN",
		"confluent.rest.auth.propagate.method=JETTY_AUTH",
		"producer.linger.ms=5",
	}, "\n"))
	url3 := startRestProxyProc(t, "--config", props)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "alice-topic"); err != nil {
		t.Fatal(err)
	}
	if rs, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("alice-topic").Operations(kadm.OpWrite, kadm.OpDescribe)); err != nil || rs[0].Err != nil {
		t.Fatalf("create ACLs: %v %v", err, rs)
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 60 * time.Second}
	produce := func(hc *http.Client, url, user, pass, value string) (int, int, []byte) {
		t.Helper()
		body := `{"records":[{"value":"` + base64.StdEncoding.EncodeToString([]byte(value)) + `"}]}`
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/topics/alice-topic", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/vnd.kafka.binary.v2+json")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, 0, []byte(err.Error())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct {
			ErrorCode int `json:"error_code"`
		}
		json.Unmarshal(b, &e)
		return resp.StatusCode, e.ErrorCode, b
	}
	var want []string
	for _, url := range []string{url1, url2, url3} {
		if _, _, b := produce(http.DefaultClient, url, "alice", "alice-secret", "untrusted"); !strings.Contains(string(b), "certificate") {
			t.Errorf("%s without the CA: %s", url, b)
		}
		for _, c := range [][2]string{{"", ""}, {"alice", "nope"}, {"carol", "carol-secret"}} {
			if status, code, b := produce(trusting, url, c[0], c[1], "refused"); status != 401 || code != 401 {
				t.Errorf("%s as %q: %d %s", url, c[0], status, b)
			}
		}
		// The ACL reaches the broker's authorizer through the
		// metadata log: alice's first write may still be refused.
		for {
			status, _, b := produce(trusting, url, "alice", "alice-secret", "from alice via "+url)
			if status == 200 {
				want = append(want, "from alice via "+url)
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: alice's produce: %d %s", url, status, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if status, code, b := produce(trusting, url, "bob", "bob-secret", "from bob"); status != 403 || code != 40301 {
			t.Errorf("%s: bob's produce: %d %s", url, status, b)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(srv.addr), kgo.ConsumeTopics("alice-topic"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < len(want) && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("alice-topic holds %q, want %q", got, want)
	}
}

// TestRestProxyStartupRefusals: settings the proxy of `samsa server`
// cannot serve stop its start-up with a message naming the key.
func TestRestProxyStartupRefusals(t *testing.T) {
	srv := servertest.Start(t)
	for _, c := range []struct {
		overrides []string
		want      string
	}{
		{[]string{"rest.proxy.authentication.method=BASIC"}, "rest.proxy.authentication.users.file"},
		{[]string{"rest.proxy.confluent.rest.auth.propagate.method=JETTY_AUTH"}, "rest.proxy.authentication.method=BASIC"},
		{[]string{"rest.proxy.listeners=https://127.0.0.1:0"}, "rest proxy https listener"},
		{[]string{"rest.proxy.client.security.protocol=SSL"}, "rest.proxy.client.security.protocol=SSL"},
		{[]string{"rest.proxy.authentication.method=BASIC", "rest.proxy.authentication.users.file=/nonexistent",
			"rest.proxy.confluent.rest.auth.propagate.method=JETTY_AUTH"}, "rest.proxy.authentication.users.file"},
	} {
		cfg, warnings, err := config.Load("", append([]string{"log.dirs=" + t.TempDir(),
			"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "rest.proxy.listeners=http://127.0.0.1:0"}, c.overrides...))
		if err != nil || len(warnings) > 0 {
			t.Fatalf("%v: %v %v", c.overrides, err, warnings)
		}
		stop, err := startServerRestProxy(cfg, srv, false, servertest.Logger())
		if err == nil {
			stop()
			t.Errorf("%v: started", c.overrides)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v", c.overrides, err)
		}
	}
}

// TestServerRestProxyRegistryAuth: the proxy of `samsa server` uses the
// node's registry that asks for basic authentication with
// rest.proxy.schema.registry.basic.auth.user.info, and without it refuses
// the schema formats.
func TestServerRestProxyRegistryAuth(t *testing.T) {
	dir := t.TempDir()
	users := writeFile(t, dir, "users.properties", "alice: alice-secret\n")
	regAddr := deadAddr(t)
	load := func(extra ...string) *config.Config {
		cfg, warnings, err := config.Load("", append([]string{"log.dirs=" + t.TempDir(),
			"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
			"schema.registry.listeners=http://" + regAddr,
			"schema.registry.authentication.method=BASIC",
			"schema.registry.authentication.users.file=" + users,
			"rest.proxy.listeners=http://127.0.0.1:0"}, extra...))
		if err != nil || len(warnings) > 0 {
			t.Fatalf("config: %v %v", err, warnings)
		}
		return cfg
	}
	cfg := load("rest.proxy.schema.registry.basic.auth.user.info=alice:alice-secret")
	srv, err := server.Start(cfg, servertest.Logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	stopRegistry, err := startServerRegistry(cfg, srv, false, servertest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	defer stopRegistry()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "avro-in"); err != nil {
		t.Fatal(err)
	}
	body := `{"value_schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}","records":[{"value":{"a":1}}]}`
	produce := func(c *config.Config) (int, []byte) {
		logs := &lockedBuffer{}
		stop, err := startServerRestProxy(c, srv, false, slog.New(slog.NewTextHandler(logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		url := waitFor(t, restProxyRE, logs.String)
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/topics/avro-in", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/vnd.kafka.avro.v2+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if status, b := produce(cfg); status != 200 || !strings.Contains(string(b), `"value_schema_id":1`) {
		t.Errorf("with the registry's credentials: %d %s", status, b)
	}
	if status, b := produce(load()); status != 422 || !strings.Contains(string(b), "42205") {
		t.Errorf("without them: %d %s", status, b)
	}
	got, err := srClient(t, "http://"+regAddr, sr.BasicAuth("alice", "alice-secret")).SchemaByVersion(ctx, "avro-in-value", 1)
	if err != nil || !strings.Contains(got.Schema.Schema, `"R"`) {
		t.Errorf("avro-in-value 1: %+v %v", got, err)
	}
}

// TestRestProxyConfigFileRefusals: a kafka-rest.properties value the
// proxy cannot use is an error naming its key.
func TestRestProxyConfigFileRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ props, want string }{
		{"authentication.method=DIGEST", "authentication.method"},
		{"consumer.instance.timeout.ms=soon", "consumer.instance.timeout.ms"},
		{"client.security.protocol=SASL_PLAINTEXT", "sasl.mechanism"},
		{"client.security.protocol=SASL_PLAINTEXT\nclient.sasl.mechanism=GSSAPI", "GSSAPI"},
		{"confluent.rest.auth.propagate.method=SSL", "confluent.rest.auth.propagate.method"},
		{"authentication.method=BASIC\nconfluent.rest.auth.propagate.method=JETTY_AUTH\nclient.security.protocol=PLAINTEXT", "JETTY_AUTH"},
		{"authentication.method=BASIC", "users file"},
		{"client.ssl.truststore.colour=blue", "client.ssl.truststore.colour"},
	} {
		path := writeFile(t, dir, "kafka-rest.properties", c.props)
		r := samsa(t, "", "rest-proxy", "--config", path, "--listen", "http://127.0.0.1:0")
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, %q", c.props, r.code, r.stderr)
		}
	}
}

// TestServerRestProxyMutualTLS: with rest.proxy.ssl.client.auth=required
// the https listener refuses a client without a certificate of the trust
// store's CA, and serves one with it (a JKS key store this time).
func TestServerRestProxyMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "Samsa REST Proxy mTLS CA")
	srv := servertest.Start(t)
	cfg, warnings, err := config.Load("", []string{"log.dirs=" + t.TempDir(),
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"rest.proxy.listeners=https://127.0.0.1:0",
		"rest.proxy.ssl.keystore.type=JKS",
		"rest.proxy.ssl.keystore.location=" + ca.Server(t, pkix.Name{CommonName: "localhost"}).WriteJKS(t, dir, "proxy.jks"),
		"rest.proxy.ssl.keystore.password=" + tlstest.Password,
		"rest.proxy.ssl.key.password=" + tlstest.Password,
		"rest.proxy.ssl.truststore.type=PEM",
		"rest.proxy.ssl.truststore.location=" + tlstest.WritePEMTrust(t, dir, "ca.pem", ca.Cert),
		"rest.proxy.ssl.client.auth=required"})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("config: %v %v", err, warnings)
	}
	logs := &lockedBuffer{}
	stop, err := startServerRestProxy(cfg, srv, false, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	url := waitFor(t, restProxyRE, logs.String)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	get := func(certs []tls.Certificate) (int, error) {
		hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
		resp, err := hc.Get(url + "/brokers")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if status, err := get(nil); err == nil {
		t.Errorf("without a client certificate: %d", status)
	}
	client := ca.Client(t, pkix.Name{CommonName: "alice"})
	pair, err := tls.X509KeyPair([]byte(tlstest.CertPEM(client.Cert)), []byte(client.KeyPEM(t)))
	if err != nil {
		t.Fatal(err)
	}
	if status, err := get([]tls.Certificate{pair}); err != nil || status != 200 {
		t.Errorf("with a client certificate: %d %v", status, err)
	}
}
