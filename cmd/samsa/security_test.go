package main

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/security/tlstest"
	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// The client tools over SASL and TLS, with flags and with a Kafka client
// properties file (--command-config), against real listeners.

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// startSASL starts a node with a PLAINTEXT listener and a SASL_PLAINTEXT
// one enabling PLAIN (users admin and alice) and both SCRAM mechanisms.
func startSASL(t *testing.T, extra ...string) *server.Server {
	t.Helper()
	return servertest.Start(t, append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainJAAS,
		"connection.failed.authentication.delay.ms=50",
	}, extra...)...)
}

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// roundTrip creates topic, produces two records and consumes them back,
// all with the connection flags conn, and checks what came back.
func roundTrip(t *testing.T, topic string, conn ...string) {
	t.Helper()
	with := func(args ...string) []string { return append(args, conn...) }
	mustRun(t, "", with("topic", "create", topic, "--partitions", "1")...)
	mustRun(t, "k1:one\nk2:two\n", with("produce", topic, "--key-separator", ":")...)
	r := mustRun(t, "", with("consume", topic, "--from", "beginning", "--num", "2", "--format", "%k=%v\n")...)
	if r.stdout != "k1=one\nk2=two\n" {
		t.Errorf("%s: consumed %q, want k1=one and k2=two", topic, r.stdout)
	}
}

// failsWith runs the CLI, expecting exit 1 and stderr containing want.
func failsWith(t *testing.T, want string, args ...string) {
	t.Helper()
	failsWithInput(t, "", want, args...)
}

// failsWithInput is failsWith with stdin.
func failsWithInput(t *testing.T, stdin, want string, args ...string) {
	t.Helper()
	r := samsa(t, stdin, args...)
	if r.code != exitFail || !strings.Contains(r.stderr, want) {
		t.Errorf("samsa %s: exit %d, stderr %q; want 1 and %q", strings.Join(args, " "), r.code, r.stderr, want)
	}
}

func TestSASLPlainFlags(t *testing.T) {
	srv := startSASL(t)
	b := srv.Addr("SASL_PLAINTEXT")
	roundTrip(t, "plain", "--bootstrap", b, "--sasl-mechanism", "PLAIN", "--user", "alice", "--password", "alice-secret")

	failsWith(t, "samsa: cannot log in to "+b+": SASL_AUTHENTICATION_FAILED", "topic", "list", "--bootstrap", b, "--timeout", "3s",
		"--sasl-mechanism", "PLAIN", "--user", "alice", "--password", "wrong")
	failsWith(t, "SASL is required but not provided", "topic", "list", "--bootstrap", b, "--timeout", "3s")
	failsWith(t, "--user \"alice\" is given but no SASL mechanism", "topic", "list", "--bootstrap", b, "--user", "alice")
	failsWith(t, "unsupported SASL mechanism \"GSSAPI\"", "topic", "list", "--bootstrap", b,
		"--sasl-mechanism", "GSSAPI", "--user", "alice", "--password", "x")

	// The password from the environment, so it is not on the command line.
	t.Setenv(passwordEnv, "alice-secret")
	r := mustRun(t, "", "topic", "list", "--bootstrap", b, "--sasl-mechanism", "plain", "--user", "alice")
	if !strings.Contains(r.stdout, "plain") {
		t.Errorf("topic list with $%s: %q does not list topic plain", passwordEnv, r.stdout)
	}
}

func TestSASLScramFlagsAndCommandConfig(t *testing.T) {
	srv := startSASL(t)
	b := srv.Addr("SASL_PLAINTEXT")
	admin := []string{"--bootstrap", b, "--sasl-mechanism", "PLAIN", "--sasl-user", "admin", "--sasl-password", "admin-secret"}
	mustRun(t, "", append([]string{"user", "create", "bob", "--mechanism", "SCRAM-SHA-256", "--password", "bob-256"}, admin...)...)
	mustRun(t, "", append([]string{"user", "create", "bob", "--mechanism", "SCRAM-SHA-512", "--password", "bob-512"}, admin...)...)

	roundTrip(t, "scram256", "--bootstrap", b, "--sasl-mechanism", "SCRAM-SHA-256", "--user", "bob", "--password", "bob-256")

	dir := t.TempDir()
	props := writeFile(t, dir, "client.properties", `# as kafka-topics.sh --command-config reads it
security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="bob" password="bob-512";
`)
	// $SAMSA_PASSWORD does not override the file's password.
	t.Setenv(passwordEnv, "not-bob-512")
	roundTrip(t, "scram512", "--bootstrap", b, "--command-config", props)
	// Commands whose --user names an entity log in the same way.
	mustRun(t, "", "quota", "set", "--user", "bob", "--producer-byte-rate", "1000", "--bootstrap", b, "--command-config", props)
	r := mustRun(t, "", "quota", "list", "--bootstrap", b, "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "bob", "--sasl-password", "bob-256")
	if got := fields(r.stdout); len(got) != 2 || got[1][0] != "user=bob" {
		t.Errorf("quota list over SCRAM printed %q", got)
	}
	// Flags win over the file: the same file with the wrong user's password
	// overridden works, and a wrong password flag fails.
	mustRun(t, "", "topic", "list", "--bootstrap", b, "--command-config", props,
		"--sasl-mechanism", "SCRAM-SHA-256", "--password", "bob-256")
	failsWith(t, "SASL_AUTHENTICATION_FAILED", "topic", "list", "--bootstrap", b, "--timeout", "3s",
		"--command-config", props, "--password", "bob-256")

	bad := writeFile(t, dir, "bad.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"bob\" password=\"x\";\n")
	failsWith(t, "sasl.jaas.config: JAAS config names login module org.apache.kafka.common.security.scram.ScramLoginModule, want org.apache.kafka.common.security.plain.PlainLoginModule",
		"topic", "list", "--bootstrap", b, "--command-config", bad)
	unknown := writeFile(t, dir, "unknown.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.login.class=x.Y\n")
	failsWith(t, "line 3: sasl.login.class: not supported", "topic", "list", "--bootstrap", b, "--command-config", unknown)
	gssapi := writeFile(t, dir, "gssapi.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n")
	failsWith(t, "sasl.mechanism: unsupported mechanism \"GSSAPI\"", "topic", "list", "--bootstrap", b, "--command-config", gssapi)
	proto := writeFile(t, dir, "proto.properties", "security.protocol=SASL\n")
	failsWith(t, "security.protocol: invalid value \"SASL\"", "topic", "list", "--bootstrap", b, "--command-config", proto)
}

// tlsNode starts a node whose SSL listener serves a certificate for
// localhost and 127.0.0.1 signed by a test CA; clientAuth is
// ssl.client.auth. It returns the node, the CA and a directory for files.
func tlsNode(t *testing.T, clientAuth string) (*server.Server, *tlstest.CA, string) {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "Samsa CLI test CA")
	broker := ca.Server(t, pkix.Name{CommonName: "localhost"})
	srv := servertest.Start(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.name.ssl.ssl.keystore.type=PEM",
		"listener.name.ssl.ssl.keystore.location="+broker.WritePEM(t, dir, "broker.pem"),
		"listener.name.ssl.ssl.truststore.type=PEM",
		"listener.name.ssl.ssl.truststore.location="+tlstest.WritePEMTrust(t, dir, "ca.pem", ca.Cert),
		"listener.name.ssl.ssl.client.auth="+clientAuth)
	return srv, ca, dir
}

func TestTLSFlagsAndCommandConfig(t *testing.T) {
	srv, ca, dir := tlsNode(t, "none")
	b := srv.Addr("SSL")
	caPEM := filepath.Join(dir, "ca.pem")
	roundTrip(t, "tls", "--bootstrap", b, "--tls-ca", caPEM)

	// The system's roots do not know the test CA.
	failsWith(t, "certificate signed by unknown authority", "topic", "list", "--bootstrap", b, "--tls", "--timeout", "3s")
	// The certificate names localhost and 127.0.0.1, not this.
	failsWith(t, "not broker.example.com", "topic", "list", "--bootstrap", b, "--tls-ca", caPEM,
		"--tls-server-name", "broker.example.com", "--timeout", "3s")
	mustRun(t, "", "topic", "list", "--bootstrap", b, "--tls-ca", caPEM, "--tls-server-name", "localhost")

	// A PKCS12 trust store through a Kafka client properties file.
	trust := tlstest.WritePKCS12Trust(t, dir, "trust.p12", ca.Cert)
	props := writeFile(t, dir, "ssl.properties", "security.protocol=SSL\nssl.truststore.type=PKCS12\n"+
		"ssl.truststore.location="+trust+"\nssl.truststore.password="+tlstest.Password+"\n"+
		"ssl.trustmanager.algorithm=PKIX\n")
	roundTrip(t, "tls-props", "--bootstrap", b, "--command-config", props)
	wrong := writeFile(t, dir, "wrong.properties", "security.protocol=SSL\nssl.truststore.type=PKCS12\n"+
		"ssl.truststore.location="+trust+"\nssl.truststore.password=nope\n")
	failsWith(t, "ssl.truststore.location "+trust, "topic", "list", "--bootstrap", b, "--command-config", wrong)
}

func TestMutualTLS(t *testing.T) {
	srv, ca, dir := tlsNode(t, "required")
	b := srv.Addr("SSL")
	caPEM := filepath.Join(dir, "ca.pem")
	client := ca.Client(t, pkix.Name{CommonName: "alice"})
	cert := tlstest.WritePEMTrust(t, dir, "alice.crt", client.Chain...)
	key := writeFile(t, dir, "alice.key", client.KeyPEM(t))
	roundTrip(t, "mtls", "--bootstrap", b, "--tls-ca", caPEM, "--tls-cert", cert, "--tls-key", key)

	r := samsa(t, "", "topic", "list", "--bootstrap", b, "--tls-ca", caPEM, "--timeout", "3s")
	if r.code != exitFail {
		t.Errorf("without a client certificate: exit %d, stderr %q; want 1", r.code, r.stderr)
	}
	failsWith(t, "--tls-cert and --tls-key go together", "topic", "list", "--bootstrap", b, "--tls-cert", cert)

	// PKCS12 key store and trust store from a properties file, as a Java
	// client would have them.
	props := writeFile(t, dir, "mtls.properties", strings.Join([]string{
		"security.protocol=SSL",
		"ssl.truststore.type=PKCS12",
		"ssl.truststore.location=" + tlstest.WritePKCS12Trust(t, dir, "trust.p12", ca.Cert),
		"ssl.truststore.password=" + tlstest.Password,
		"ssl.keystore.type=PKCS12",
		"ssl.keystore.location=" + client.WritePKCS12(t, dir, "alice.p12"),
		"ssl.keystore.password=" + tlstest.Password,
		"",
	}, "\n"))
	roundTrip(t, "mtls-props", "--bootstrap", b, "--command-config", props)
}

// TestSASLOverTLSCommandConfig: SASL_SSL, SCRAM inside TLS, from one file.
func TestSASLOverTLSCommandConfig(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "Samsa CLI test CA")
	broker := ca.Server(t, pkix.Name{CommonName: "localhost"})
	srv := servertest.Start(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.sasl_ssl.ssl.keystore.type=PEM",
		"listener.name.sasl_ssl.ssl.keystore.location="+broker.WritePEM(t, dir, "broker.pem"))
	mustRun(t, "", "user", "create", "carol", "--mechanism", "SCRAM-SHA-512", "--password", "carol-pw",
		"--bootstrap", servertest.Addr(srv))
	props := writeFile(t, dir, "sasl-ssl.properties", strings.Join([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-512",
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="carol" password="carol-pw";`,
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + tlstest.WritePEMTrust(t, dir, "ca.pem", ca.Cert),
		"",
	}, "\n"))
	roundTrip(t, "sasl-ssl", "--bootstrap", srv.Addr("SASL_SSL"), "--command-config", props)
}
