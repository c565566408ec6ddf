package clustertest

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/devcluster"
	"github.com/samsa-io/samsa/internal/security/tlstest"
)

// SASLSSL secures every listener of a devcluster with SASL inside TLS,
// as docs/security.md (Between Samsa's nodes) describes a production
// cluster:
//
//   - the client listener, which is also the inter-broker listener, is
//     SASL_SSL with SCRAM-SHA-512: clients and the nodes' own user log in
//     with credentials written into the metadata log when it is created
//     (--add-scram);
//   - the CONTROLLER listener is SASL_SSL with PLAIN (the only mechanism
//     Kafka and Samsa take there, because the controllers must reach each
//     other before SCRAM credentials can be read), whose only user is
//     the nodes' own, and it requires the nodes' client certificates too;
//   - one CA signs a certificate per node for the node's host, and the
//     nodes check each other's host names (Kafka's default
//     ssl.endpoint.identification.algorithm=https).
//
// No listener is PLAINTEXT. The nodes' principal on both listeners is
// NodePrincipal; authorization is the caller's (super.users, ACLs).
type SASLSSL struct {
	CA *tlstest.CA
	// NodeUser is the nodes' own SASL user on both listeners.
	NodeUser, NodePassword string
	// Users are the SCRAM-SHA-512 users besides NodeUser created with the
	// metadata log: name to password.
	Users map[string]string

	t   testing.TB
	dir string
}

// NewSASLSSL makes the CA and the users' credentials; Configure applies
// them to a cluster.
func NewSASLSSL(t testing.TB, users map[string]string) *SASLSSL {
	t.Helper()
	return &SASLSSL{
		CA:       tlstest.NewCA(t, "Samsa cluster test CA"),
		NodeUser: "node", NodePassword: "node-secret",
		Users: users,
		t:     t, dir: t.TempDir(),
	}
}

// NodePrincipal is the principal the nodes authenticate as to each
// other: name it in super.users.
func (s *SASLSSL) NodePrincipal() string { return "User:" + s.NodeUser }

// Configure makes cfg's listeners SASL_SSL and adds the keys, each
// node's key store (for its devcluster host) and the --add-scram
// arguments. Call it before devcluster.Start; properties cfg already has
// are kept and win over these.
func (s *SASLSSL) Configure(cfg *devcluster.Config) {
	s.t.Helper()
	cfg.ClientProtocol, cfg.ControllerProtocol = "SASL_SSL", "SASL_SSL"
	trust := tlstest.WritePEMTrust(s.t, s.dir, "ca.pem", s.CA.Cert)
	const scram = "org.apache.kafka.common.security.scram.ScramLoginModule required"
	const plain = "org.apache.kafka.common.security.plain.PlainLoginModule required"
	cfg.Properties = append([]string{
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + trust,
		"listener.name.controller.ssl.client.auth=required",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		"sasl.mechanism.controller.protocol=PLAIN",
		fmt.Sprintf(`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=%s username="%s" password="%s";`, scram, s.NodeUser, s.NodePassword),
		fmt.Sprintf(`listener.name.controller.plain.sasl.jaas.config=%s username="%s" password="%s" user_%s="%s";`,
			plain, s.NodeUser, s.NodePassword, s.NodeUser, s.NodePassword),
	}, cfg.Properties...)

	host, more := cfg.Host, cfg.NodeProperties
	cfg.NodeProperties = func(id int32) []string {
		h := "127.0.0.1"
		if host != nil {
			h = host(id)
		}
		cert := s.CA.ServerFor(s.t, pkix.Name{CommonName: fmt.Sprintf("node-%d", id), Organization: []string{"Samsa"}}, h)
		keys := cert.WritePEM(s.t, s.dir, fmt.Sprintf("node-%d.pem", id))
		props := []string{"ssl.keystore.type=PEM", "ssl.keystore.location=" + keys}
		if more != nil {
			props = append(props, more(id)...)
		}
		return props
	}

	cfg.AddScram = append(cfg.AddScram, scramArg(s.NodeUser, s.NodePassword))
	for _, user := range slices.Sorted(maps.Keys(s.Users)) {
		cfg.AddScram = append(cfg.AddScram, scramArg(user, s.Users[user]))
	}
}

func scramArg(user, pass string) string {
	return fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", user, pass)
}

// TLS is a client's TLS configuration: it trusts the cluster's CA and
// presents no certificate.
func (s *SASLSSL) TLS() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(s.CA.Cert)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// Login is a client's options to log in as user with password over
// TLS, with SCRAM-SHA-512.
func (s *SASLSSL) Login(user, password string) []kgo.Opt {
	auth := scram.Auth{User: user, Pass: password}
	return []kgo.Opt{kgo.DialTLSConfig(s.TLS()), kgo.SASL(auth.AsSha512Mechanism())}
}
