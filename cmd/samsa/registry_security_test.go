package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/security/tlstest"
	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// startRegistryProc runs `samsa registry` with args and returns the URL
// it logs it listens on; the process is stopped with SIGTERM at cleanup,
// and must exit cleanly.
func startRegistryProc(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"registry"}, args...)...)
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
				t.Errorf("samsa registry exit: %v\n%s", err, out.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("samsa registry did not stop on SIGTERM:\n%s", out.String())
		}
	})
	return waitFor(t, registryRE, out.String)
}

// srClient is a franz-go sr client of url with opts, patient enough for
// the first write's leader election on a loaded machine.
func srClient(t *testing.T, url string, opts ...sr.ClientOpt) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(url), sr.HTTPClient(&http.Client{Timeout: 60 * time.Second})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestRegistryHTTPSBasicAuth serves the registry of `samsa server` on an
// https listener with basic authentication (schema.registry.* keys), and a
// `samsa registry` on the same cluster with the same users (flags): sr
// clients need the CA and a user's credentials, and writes through either
// instance succeed, so the follower forwarded its write over https with
// the client's credentials.
func TestRegistryHTTPSBasicAuth(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "Samsa registry test CA")
	id := ca.Server(t, pkix.Name{CommonName: "localhost"})
	keystore := id.WritePEM(t, dir, "registry.pem")
	caPEM := tlstest.WritePEMTrust(t, dir, "ca.pem", ca.Cert)
	users := writeFile(t, dir, "users.properties", "alice: alice-secret,developer\nguest: guest-secret,guest\n")
	srv := startServerProc(t, t.TempDir(),
		"--override", "schema.registry.listeners=https://127.0.0.1:0",
		"--override", "schema.registry.ssl.keystore.type=PEM",
		"--override", "schema.registry.ssl.keystore.location="+keystore,
		"--override", "schema.registry.ssl.truststore.type=PEM",
		"--override", "schema.registry.ssl.truststore.location="+caPEM,
		"--override", "schema.registry.authentication.method=BASIC",
		"--override", "schema.registry.authentication.users.file="+users,
		"--override", "schema.registry.authentication.roles=developer")
	url1 := waitFor(t, registryRE, srv.stderr.String)
	if !strings.HasPrefix(url1, "https://127.0.0.1:") {
		t.Fatalf("registry listens on %s", url1)
	}
	url2 := startRegistryProc(t, "--bootstrap", srv.addr, "--listen", "https://127.0.0.1:0",
		"--https-cert", keystore, "--https-key", keystore, "--https-ca", caPEM,
		"--users-file", users, "--roles", "developer,admin")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	trusted := sr.DialTLSConfig(&tls.Config{RootCAs: pool})
	const v1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	const v2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int","default":0}]}`
	for _, url := range []string{url1, url2} {
		// Not trusting the CA: the handshake fails.
		if _, err := srClient(t, url, sr.BasicAuth("alice", "alice-secret")).Subjects(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s without the CA: %v", url, err)
		}
		for name, opt := range map[string]sr.ClientOpt{
			"no credentials": sr.BasicAuth("", ""), "wrong password": sr.BasicAuth("alice", "nope"), "no permitted role": sr.BasicAuth("guest", "guest-secret"),
		} {
			var re *sr.ResponseError
			_, err := srClient(t, url, trusted, opt).CreateSchema(ctx, "r-value", sr.Schema{Schema: v1})
			if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized || re.ErrorCode != 401 {
				t.Errorf("%s, %s: %v", url, name, err)
			}
		}
	}
	// One write through each: one of the two instances is a follower and
	// forwards it to the leader.
	cl1 := srClient(t, url1, trusted, sr.BasicAuth("alice", "alice-secret"))
	cl2 := srClient(t, url2, trusted, sr.BasicAuth("alice", "alice-secret"))
	s1, err := cl1.CreateSchema(ctx, "r-value", sr.Schema{Schema: v1})
	if err != nil {
		t.Fatalf("register through samsa server: %v", err)
	}
	s2, err := cl2.CreateSchema(ctx, "r-value", sr.Schema{Schema: v2})
	if err != nil {
		t.Fatalf("register through samsa registry: %v", err)
	}
	if s1.Version != 1 || s2.Version != 2 || s1.ID == s2.ID {
		t.Errorf("versions %+v, %+v", s1, s2)
	}
	// samsa schema with --registry-ca and --registry-user.
	if out := mustRun(t, "", "schema", "list", "r-value", "--registry", url2, "--registry-ca", caPEM, "--registry-user", "alice", "--registry-password", "alice-secret").stdout; out != "1\n2\n" {
		t.Errorf("schema list r-value: %q", out)
	}
	if r := samsa(t, "", "schema", "list", "--registry", url1, "--registry-ca", caPEM); r.code != exitFail || !strings.Contains(r.stderr, "Unauthorized") {
		t.Errorf("schema list without credentials: exit %d, %q", r.code, r.stderr)
	}
	t.Setenv(registryPasswordEnv, "alice-secret")
	if out := mustRun(t, "", "schema", "list", "--registry", url1, "--registry-ca", caPEM, "--registry-user", "alice").stdout; out != "r-value\n" {
		t.Errorf("schema list with $%s: %q", registryPasswordEnv, out)
	}
	for i, cl := range []*sr.Client{cl1, cl2} {
		if got, err := cl.SchemaByVersion(ctx, "r-value", 2); err != nil || got.Schema.Schema != v2 || got.ID != s2.ID {
			t.Errorf("instance %d: r-value 2 = %+v, %v", i+1, got, err)
		}
	}
}

// TestServerRegistryOnSASLListener runs the registry of a node whose only
// broker listener is SASL_PLAINTEXT: it logs in with the node's own PLAIN
// credentials of that listener, or with schema.registry.kafkastore.*;
// `samsa registry` logs in with --sasl-* flags.
func TestServerRegistryOnSASLListener(t *testing.T) {
	base := []string{
		"log.dirs=" + t.TempDir(),
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainJAAS,
		"connection.failed.authentication.delay.ms=50",
		"schema.registry.listeners=http://127.0.0.1:0",
	}
	load := func(extra ...string) *config.Config {
		cfg, warnings, err := config.Load("", append(slices.Clone(base), extra...))
		if err != nil || len(warnings) > 0 {
			t.Fatalf("config: %v %v", err, warnings)
		}
		return cfg
	}
	srv, err := server.Start(load(), servertest.Logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// start runs the node's registry on cfg; it returns an sr client of it.
	start := func(cfg *config.Config) *sr.Client {
		t.Helper()
		logs := &lockedBuffer{}
		stop, err := startServerRegistry(cfg, srv, false, slog.New(slog.NewTextHandler(logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return srClient(t, waitFor(t, registryRE, logs.String))
	}

	const v1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	own := start(load())
	s1, err := own.CreateSchema(ctx, "r-value", sr.Schema{Schema: v1})
	if err != nil {
		t.Fatalf("register through the registry logged in as the node: %v", err)
	}

	// Confluent's kafkastore keys: alice's PLAIN login.
	alice := start(load("schema.registry.kafkastore.sasl.mechanism=PLAIN",
		`schema.registry.kafkastore.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`))
	if got, err := alice.SchemaByID(ctx, s1.ID); err != nil || got.Schema != v1 {
		t.Errorf("schema %d through the registry logged in as alice: %+v, %v", s1.ID, got, err)
	}

	// samsa registry with the client tools' SASL flags.
	proc := srClient(t, startRegistryProc(t, "--bootstrap", srv.Addr("SASL_PLAINTEXT"), "--listen", "http://127.0.0.1:0",
		"--sasl-mechanism", "PLAIN", "--user", "alice", "--password", "alice-secret"))
	if got, err := proc.SchemaByID(ctx, s1.ID); err != nil || got.Schema != v1 {
		t.Errorf("schema %d through samsa registry --sasl-mechanism PLAIN: %+v, %v", s1.ID, got, err)
	}

	// A login the registry cannot make stops the node's start-up.
	for _, bad := range [][]string{
		{"schema.registry.kafkastore.sasl.mechanism=GSSAPI"},
		{"schema.registry.kafkastore.sasl.mechanism=SCRAM-SHA-256"}, // no JAAS config for it
		{`schema.registry.kafkastore.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice";`},
	} {
		if _, err := startServerRegistry(load(bad...), srv, false, servertest.Logger()); err == nil {
			t.Errorf("%v: started", bad)
		}
	}
}

// TestServerRegistryOnSSLListener runs the registry of a node whose only
// broker listener is SSL with required client certificates: it dials it
// with the listener's own trust store and key store.
func TestServerRegistryOnSSLListener(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "Samsa registry test CA")
	id := ca.Server(t, pkix.Name{CommonName: "localhost"})
	cfg, warnings, err := config.Load("", []string{
		"log.dirs=" + t.TempDir(),
		"listeners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"inter.broker.listener.name=SSL",
		"listener.name.ssl.ssl.keystore.type=PEM",
		"listener.name.ssl.ssl.keystore.location=" + id.WritePEM(t, dir, "node.pem"),
		"listener.name.ssl.ssl.truststore.type=PEM",
		"listener.name.ssl.ssl.truststore.location=" + tlstest.WritePEMTrust(t, dir, "ca.pem", ca.Cert),
		"listener.name.ssl.ssl.client.auth=required",
		"schema.registry.listeners=http://127.0.0.1:0",
	})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("config: %v %v", err, warnings)
	}
	srv, err := server.Start(cfg, servertest.Logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	logs := &lockedBuffer{}
	stop, err := startServerRegistry(cfg, srv, false, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := srClient(t, waitFor(t, registryRE, logs.String))
	const v1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	s1, err := cl.CreateSchema(ctx, "r-value", sr.Schema{Schema: v1})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if got, err := cl.SchemaByID(ctx, s1.ID); err != nil || got.Schema != v1 {
		t.Errorf("schema %d: %+v, %v", s1.ID, got, err)
	}
}
