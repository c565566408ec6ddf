package main

// How the client subcommands authenticate and encrypt: the --sasl-*,
// --user/--password and --tls* flags, and --command-config, a Kafka client
// properties file (what kafka-topics.sh --command-config reads). Both are
// resolved into one securityConfig; a flag wins over the file. TLS stores
// are loaded by internal/security, the code the broker's own clients use,
// so a client reads the same JKS, PKCS12 and PEM stores a broker does.

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/security"
)

// passwordEnv holds the SASL password when --password is not given, so that
// it need not appear on the command line (or in the shell's history).
const passwordEnv = "SAMSA_PASSWORD"

// The SASL mechanisms a client can use; Samsa serves these three.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// Login module classes of sasl.jaas.config, by mechanism family.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// securityFlags are the flags of every client subcommand that say how to
// authenticate and whether to use TLS.
type securityFlags struct {
	commandConfig string
	mechanism     string
	user          string
	password      string
	tls           bool
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string
}

// register adds the flags to fs. loginAliases adds --user and --password
// as short names of --sasl-user and --sasl-password; commands where those
// names mean something else (the user a quota or a credential is for)
// pass false.
func (s *securityFlags) register(fs *flag.FlagSet, loginAliases bool) {
	fs.StringVar(&s.commandConfig, "command-config", "",
		"Kafka client properties `file` (security.protocol, sasl.*, ssl.*); flags win over it")
	fs.StringVar(&s.mechanism, "sasl-mechanism", "", "authenticate with SASL `mechanism`: "+strings.Join(saslMechanisms, ", "))
	fs.StringVar(&s.user, "sasl-user", "", "SASL user `name`")
	fs.StringVar(&s.password, "sasl-password", "", "SASL `password` (default: $"+passwordEnv+")")
	if loginAliases {
		fs.StringVar(&s.user, "user", "", "SASL user `name` (same as --sasl-user)")
		fs.StringVar(&s.password, "password", "", "SASL `password` (same as --sasl-password; default: $"+passwordEnv+")")
	}
	fs.BoolVar(&s.tls, "tls", false, "connect with TLS, trusting the system's roots unless --tls-ca is given")
	fs.StringVar(&s.tlsCA, "tls-ca", "", "PEM `file` of the CA certificates to trust (implies --tls)")
	fs.StringVar(&s.tlsCert, "tls-cert", "", "PEM `file` of the client certificate chain for mutual TLS (with --tls-key)")
	fs.StringVar(&s.tlsKey, "tls-key", "", "PEM `file` of the client certificate's private key (with --tls-cert)")
	fs.StringVar(&s.tlsServerName, "tls-server-name", "", "`name` the broker certificates must carry (default: the host dialed)")
}

// securityConfig is what the flags and the properties file resolve to.
type securityConfig struct {
	useTLS     bool
	tls        security.TLSSettings
	serverName string
	mechanism  string // "" for no SASL
	user       string
	password   string
	clientID   string // client.id from the file
}

// resolve reads --command-config, applies the flags over it and checks the
// result.
func (s *securityFlags) resolve() (*securityConfig, error) {
	sc := &securityConfig{tls: security.TLSSettings{EndpointIdentificationAlgorithm: "https"}}
	if s.commandConfig != "" {
		if err := sc.readProperties(s.commandConfig); err != nil {
			return nil, err
		}
	}
	if s.tls || s.tlsCA != "" || s.tlsCert != "" || s.tlsKey != "" || s.tlsServerName != "" {
		sc.useTLS = true
	}
	if s.tlsCA != "" {
		sc.tls.TruststoreType, sc.tls.TruststoreLocation = security.StorePEM, s.tlsCA
		sc.tls.TruststorePassword, sc.tls.TruststoreCertificates = "", ""
	}
	switch {
	case (s.tlsCert == "") != (s.tlsKey == ""):
		return nil, errors.New("--tls-cert and --tls-key go together: give both or neither")
	case s.tlsCert != "":
		chain, err := os.ReadFile(s.tlsCert)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert: %w", err)
		}
		key, err := os.ReadFile(s.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-key: %w", err)
		}
		// Inline PEM is internal/security's form for a chain and a key
		// that come from two places.
		sc.tls.KeystoreType = security.StorePEM
		sc.tls.KeystoreCertificateChain, sc.tls.KeystoreKey = string(chain), string(key)
		sc.tls.KeystoreLocation, sc.tls.KeystorePassword = "", ""
	}
	if s.tlsServerName != "" {
		sc.serverName = s.tlsServerName
	}
	if s.mechanism != "" {
		sc.mechanism = s.mechanism
	}
	if s.user != "" {
		sc.user = s.user
	}
	// The environment stands in for --password, below what a file names
	// (a variable left set in a shell must not override a file chosen for
	// this command).
	switch {
	case s.password != "":
		sc.password = s.password
	case sc.password == "":
		sc.password = os.Getenv(passwordEnv)
	}
	return sc, sc.check()
}

// check validates the SASL part: a known mechanism, with a user and a
// password.
func (sc *securityConfig) check() error {
	if sc.mechanism == "" {
		if sc.user != "" {
			return fmt.Errorf("--user %q is given but no SASL mechanism: add --sasl-mechanism %s", sc.user, strings.Join(saslMechanisms, "|"))
		}
		return nil
	}
	m := strings.ToUpper(strings.TrimSpace(sc.mechanism))
	switch m {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return fmt.Errorf("unsupported SASL mechanism %q: want %s", sc.mechanism, strings.Join(saslMechanisms, ", "))
	}
	sc.mechanism = m
	if sc.user == "" {
		return fmt.Errorf("SASL %s needs a user: give --user (or username in sasl.jaas.config)", m)
	}
	if sc.password == "" {
		return fmt.Errorf("SASL %s needs a password: give --password, set $%s, or put password in sasl.jaas.config", m, passwordEnv)
	}
	return nil
}

// opts are the franz-go options for the resolved settings; timeout bounds
// each dial (and with TLS, its handshake).
func (sc *securityConfig) opts(timeout time.Duration) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if sc.clientID != "" {
		opts = append(opts, kgo.ClientID(sc.clientID))
	}
	if sc.useTLS {
		tc, err := security.NewTLSClient(sc.tls)
		if err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
		serverName := sc.serverName
		opts = append(opts, kgo.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
			cfg := tc.Config(addr)
			if serverName != "" {
				cfg.ServerName = serverName
			}
			d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
			return d.DialContext(ctx, network, addr)
		}))
	}
	if sc.mechanism != "" {
		var m sasl.Mechanism
		switch sc.mechanism {
		case "PLAIN":
			m = plain.Auth{User: sc.user, Pass: sc.password}.AsMechanism()
		case "SCRAM-SHA-256":
			m = scram.Auth{User: sc.user, Pass: sc.password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			m = scram.Auth{User: sc.user, Pass: sc.password}.AsSha512Mechanism()
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// ignoredClientKeys are Java internals of the client's TLS engine: they
// mean nothing to a Go client and are accepted so that a properties file
// written for Kafka's tools works unchanged (the broker ignores them too).
var ignoredClientKeys = map[string]bool{
	"ssl.keymanager.algorithm":         true,
	"ssl.trustmanager.algorithm":       true,
	"ssl.secure.random.implementation": true,
}

// readProperties applies a Kafka client properties file. Every key it does
// not know is an error naming the key: a setting silently dropped could
// mean sending a password in clear or trusting what should not be.
func (sc *securityConfig) readProperties(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--command-config: %w", err)
	}
	props, err := config.ParseProperties(string(data))
	if err != nil {
		return fmt.Errorf("--command-config %s: %w", path, err)
	}
	protocol, jaas := "PLAINTEXT", ""
	for _, p := range props {
		v := strings.TrimSpace(p.Value)
		switch p.Key {
		case "security.protocol":
			protocol = strings.ToUpper(v)
			switch protocol {
			case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
			default:
				return fmt.Errorf("--command-config %s line %d: security.protocol: invalid value %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
					path, p.Line, p.Value)
			}
		case "sasl.mechanism":
			sc.mechanism = v
		case "sasl.jaas.config":
			jaas = p.Value
		case "client.id":
			sc.clientID = v
		default:
			if !setSSLProperty(&sc.tls, p.Key, p.Value) && !ignoredClientKeys[p.Key] {
				return fmt.Errorf("--command-config %s line %d: %s: not supported by samsa's client tools (they read security.protocol, "+
					"sasl.mechanism, sasl.jaas.config, client.id, ssl.keystore.*, ssl.truststore.*, ssl.key.password, ssl.protocol, "+
					"ssl.enabled.protocols, ssl.cipher.suites and ssl.endpoint.identification.algorithm)", path, p.Line, p.Key)
			}
		}
	}
	// Kafka's client defaults: JKS stores.
	if sc.tls.TruststoreType == "" {
		sc.tls.TruststoreType = security.StoreJKS
	}
	if sc.tls.KeystoreType == "" {
		sc.tls.KeystoreType = security.StoreJKS
	}
	sc.useTLS = protocol == "SSL" || protocol == "SASL_SSL"
	if err := sc.saslProperties(protocol, jaas); err != nil {
		return fmt.Errorf("--command-config %s: %w", path, err)
	}
	return nil
}

// setSSLProperty sets the ssl.* key of a client properties file in t and
// reports whether it is one a client uses.
func setSSLProperty(t *security.TLSSettings, key, value string) bool {
	v := strings.TrimSpace(value)
	switch key {
	case "ssl.truststore.type":
		t.TruststoreType = v
	case "ssl.truststore.location":
		t.TruststoreLocation = v
	case "ssl.truststore.password":
		t.TruststorePassword = value
	case "ssl.truststore.certificates":
		t.TruststoreCertificates = value
	case "ssl.keystore.type":
		t.KeystoreType = v
	case "ssl.keystore.location":
		t.KeystoreLocation = v
	case "ssl.keystore.password":
		t.KeystorePassword = value
	case "ssl.key.password":
		t.KeyPassword = value
	case "ssl.keystore.key":
		t.KeystoreKey = value
	case "ssl.keystore.certificate.chain":
		t.KeystoreCertificateChain = value
	case "ssl.endpoint.identification.algorithm":
		t.EndpointIdentificationAlgorithm = v
	case "ssl.protocol":
		t.Protocol = v
	case "ssl.enabled.protocols":
		t.EnabledProtocols = splitList(v)
	case "ssl.cipher.suites":
		t.CipherSuites = splitList(v)
	default:
		return false
	}
	return true
}

// saslProperties checks sasl.mechanism against security.protocol and takes
// the user and password from sasl.jaas.config, whose login module must be
// the mechanism's.
func (sc *securityConfig) saslProperties(protocol, jaas string) error {
	sasled := protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL"
	switch {
	case sasled && sc.mechanism == "":
		// Kafka's default is GSSAPI, which Samsa does not serve.
		return fmt.Errorf("security.protocol=%s needs sasl.mechanism (%s; Kafka's default GSSAPI is not supported)",
			protocol, strings.Join(saslMechanisms, ", "))
	case !sasled && (sc.mechanism != "" || jaas != ""):
		return fmt.Errorf("sasl.mechanism and sasl.jaas.config need security.protocol=SASL_PLAINTEXT or SASL_SSL, not %s", protocol)
	case !sasled:
		return nil
	}
	want := plainLoginModule
	switch strings.ToUpper(sc.mechanism) {
	case "PLAIN":
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		want = scramLoginModule
	default:
		return fmt.Errorf("sasl.mechanism: unsupported mechanism %q: want %s", sc.mechanism, strings.Join(saslMechanisms, ", "))
	}
	if jaas == "" {
		return nil // the user and password may come from the flags
	}
	mod, err := security.ParseJAASModule(jaas, want)
	if err != nil {
		return fmt.Errorf("sasl.jaas.config: %w", err)
	}
	sc.user, sc.password = mod.Options["username"], mod.Options["password"]
	return nil
}

func splitList(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
