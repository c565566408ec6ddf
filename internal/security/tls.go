package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// TLSSettings are the ssl.* settings of one listener, resolved by the
// config package (a listener.name.<listener>.ssl.* key over the plain
// ssl.* key). Empty strings are unset keys. The field comments name the
// keys; Kafka's DefaultSslEngineFactory gives their meaning.
type TLSSettings struct {
	KeystoreType             string // ssl.keystore.type: JKS, PKCS12 or PEM
	KeystoreLocation         string // ssl.keystore.location
	KeystorePassword         string // ssl.keystore.password
	KeyPassword              string // ssl.key.password
	KeystoreKey              string // ssl.keystore.key: inline PEM key
	KeystoreCertificateChain string // ssl.keystore.certificate.chain: inline PEM chain

	TruststoreType         string // ssl.truststore.type: JKS, PKCS12 or PEM
	TruststoreLocation     string // ssl.truststore.location
	TruststorePassword     string // ssl.truststore.password
	TruststoreCertificates string // ssl.truststore.certificates: inline PEM

	ClientAuth       string   // ssl.client.auth: none, requested or required
	Protocol         string   // ssl.protocol: TLSv1.3 (default), TLSv1.2 or TLS
	EnabledProtocols []string // ssl.enabled.protocols
	CipherSuites     []string // ssl.cipher.suites; empty: Go's defaults
	// EndpointIdentificationAlgorithm is
	// ssl.endpoint.identification.algorithm: "https" makes a client check
	// the server's host name; empty skips that check (the chain is still
	// verified). Servers ignore it.
	EndpointIdentificationAlgorithm string
	PrincipalMappingRules           string // ssl.principal.mapping.rules
	// AllowDNChanges and AllowSANChanges are ssl.allow.dn.changes and
	// ssl.allow.san.changes: whether a reloaded key store may carry a
	// certificate with another subject or other alternative names.
	AllowDNChanges, AllowSANChanges bool

	// KeyName maps Kafka's key name (ssl.keystore.location) to the name
	// the value was set under (listener.name.ssl.ssl.keystore.location),
	// so errors name what the operator wrote. Nil names the plain key.
	KeyName func(base string) string
}

func (s *TLSSettings) key(base string) string {
	if s.KeyName == nil {
		return base
	}
	return s.KeyName(base)
}

// equal reports whether two settings configure the same thing.
func (s *TLSSettings) equal(o *TLSSettings) bool {
	a, b := s, o
	return slices.Equal(s.EnabledProtocols, o.EnabledProtocols) && slices.Equal(s.CipherSuites, o.CipherSuites) &&
		a.KeystoreType == b.KeystoreType && a.KeystoreLocation == b.KeystoreLocation && a.KeystorePassword == b.KeystorePassword &&
		a.KeyPassword == b.KeyPassword && a.KeystoreKey == b.KeystoreKey && a.KeystoreCertificateChain == b.KeystoreCertificateChain &&
		a.TruststoreType == b.TruststoreType && a.TruststoreLocation == b.TruststoreLocation &&
		a.TruststorePassword == b.TruststorePassword && a.TruststoreCertificates == b.TruststoreCertificates &&
		a.ClientAuth == b.ClientAuth && a.Protocol == b.Protocol &&
		a.EndpointIdentificationAlgorithm == b.EndpointIdentificationAlgorithm && a.PrincipalMappingRules == b.PrincipalMappingRules &&
		a.AllowDNChanges == b.AllowDNChanges && a.AllowSANChanges == b.AllowSANChanges
}

// versions resolves ssl.enabled.protocols, capped by ssl.protocol, into
// Go's version range. Go supports TLS 1.2 and 1.3 here; older versions
// are refused, as Java's default jdk.tls.disabledAlgorithms refuses them.
func (s *TLSSettings) versions() (lo, hi uint16, err error) {
	var ceiling uint16
	switch strings.TrimSpace(s.Protocol) {
	case "", "TLSv1.3", "TLS":
		ceiling = tls.VersionTLS13
	case "TLSv1.2":
		ceiling = tls.VersionTLS12
	default:
		return 0, 0, fmt.Errorf("invalid value %q for %s: want TLSv1.3, TLSv1.2 or TLS (older protocols are not supported)", s.Protocol, s.key("ssl.protocol"))
	}
	enabled := s.EnabledProtocols
	if len(enabled) == 0 {
		enabled = []string{"TLSv1.2", "TLSv1.3"}
	}
	var v12, v13 bool
	for _, p := range enabled {
		switch p {
		case "TLSv1.2":
			v12 = true
		case "TLSv1.3":
			v13 = ceiling == tls.VersionTLS13
		default:
			return 0, 0, fmt.Errorf("invalid value %q for %s: %s is not supported; want TLSv1.2 and/or TLSv1.3", strings.Join(s.EnabledProtocols, ","), s.key("ssl.enabled.protocols"), p)
		}
	}
	switch {
	case v12 && v13:
		return tls.VersionTLS12, tls.VersionTLS13, nil
	case v12:
		return tls.VersionTLS12, tls.VersionTLS12, nil
	case v13:
		return tls.VersionTLS13, tls.VersionTLS13, nil
	}
	return 0, 0, fmt.Errorf("%s=%s with %s=%s leaves no protocol to use", s.key("ssl.enabled.protocols"), strings.Join(enabled, ","), s.key("ssl.protocol"), s.Protocol)
}

// tls13Suites are the TLS 1.3 cipher suites. Go always enables all three
// when TLS 1.3 is used and cannot restrict them.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// cipherSuites resolves ssl.cipher.suites (IANA names, as Java writes
// them; Java's legacy SSL_ prefix is accepted) into Go's TLS 1.2 suite
// ids, and narrows the version range so that what is negotiated is what
// the list allows:
//   - a list of TLS 1.2 suites only disables TLS 1.3, as in Java, where a
//     TLS 1.3 handshake then has no suite;
//   - a list of the TLS 1.3 suites only disables TLS 1.2;
//   - a list that names some but not all TLS 1.3 suites is refused: Go
//     cannot restrict them, and serving suites the operator left out
//     would be less than the configuration says.
//
// Suites Go does not implement, and RC4 and 3DES suites (disabled by
// Java's defaults as well), are refused with the key named.
func (s *TLSSettings) cipherSuites(lo, hi uint16) ([]uint16, uint16, uint16, error) {
	if len(s.CipherSuites) == 0 {
		return nil, lo, hi, nil
	}
	byName := map[string]*tls.CipherSuite{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[cs.Name] = cs
	}
	var ids []uint16
	var named13, unknown []string
	for _, name := range s.CipherSuites {
		n := strings.TrimSpace(name)
		if strings.HasPrefix(n, "SSL_") {
			n = "TLS_" + n[len("SSL_"):]
		}
		if slices.Contains(tls13Suites, n) {
			if !slices.Contains(named13, n) {
				named13 = append(named13, n)
			}
			continue
		}
		cs, ok := byName[n]
		if !ok {
			// Go names the ChaCha20 suites without _SHA256, IANA with it.
			cs, ok = byName[strings.TrimSuffix(n, "_SHA256")]
		}
		if !ok || strings.Contains(n, "_RC4_") || strings.Contains(n, "_3DES_") {
			unknown = append(unknown, name)
			continue
		}
		ids = append(ids, cs.ID)
	}
	key := s.key("ssl.cipher.suites")
	if len(unknown) > 0 {
		return nil, 0, 0, fmt.Errorf("%s: unsupported cipher suites %s (want IANA names of suites Go implements, e.g. TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384; RC4 and 3DES are not allowed)", key, strings.Join(unknown, ", "))
	}
	if len(named13) > 0 && len(named13) < len(tls13Suites) {
		return nil, 0, 0, fmt.Errorf("%s names %s but not all TLS 1.3 suites: Go always enables all of %s with TLS 1.3 and cannot restrict them; list all three, or none and disable TLSv1.3 in ssl.enabled.protocols",
			key, strings.Join(named13, ", "), strings.Join(tls13Suites, ", "))
	}
	if len(named13) == 0 {
		hi = min(hi, tls.VersionTLS12)
	}
	if len(ids) == 0 {
		lo = max(lo, tls.VersionTLS13)
	}
	if lo > hi {
		return nil, 0, 0, fmt.Errorf("%s=%s allows no suite of the protocols enabled by ssl.enabled.protocols", key, strings.Join(s.CipherSuites, ","))
	}
	return ids, lo, hi, nil
}

// material is one build of a listener's TLS settings: the loaded stores
// and the tls.Config made from them. It never changes; a reload builds a
// new one.
type material struct {
	settings TLSSettings
	keystore *keystore
	trust    *truststore
	mapper   *PrincipalMapper
	config   *tls.Config
}

func buildMaterial(s TLSSettings, server bool) (*material, error) {
	s.EnabledProtocols = slices.Clone(s.EnabledProtocols)
	s.CipherSuites = slices.Clone(s.CipherSuites)
	m := &material{settings: s}
	var err error
	lo, hi, err := s.versions()
	if err != nil {
		return nil, err
	}
	suites, lo, hi, err := s.cipherSuites(lo, hi)
	if err != nil {
		return nil, err
	}
	if m.keystore, err = loadKeystore(&s); err != nil {
		return nil, err
	}
	if m.trust, err = loadTruststore(&s); err != nil {
		return nil, err
	}
	rules := s.PrincipalMappingRules
	if strings.TrimSpace(rules) == "" {
		rules = DefaultPrincipalMappingRules
	}
	if m.mapper, err = ParsePrincipalMappingRules(rules); err != nil {
		return nil, fmt.Errorf("%s: %w", s.key("ssl.principal.mapping.rules"), err)
	}
	cfg := &tls.Config{MinVersion: lo, MaxVersion: hi, CipherSuites: suites}
	if m.trust != nil {
		cfg.ClientCAs, cfg.RootCAs = m.trust.pool, m.trust.pool
	}
	if m.keystore != nil {
		cfg.Certificates = []tls.Certificate{m.keystore.cert}
	}
	if server {
		if m.keystore == nil {
			return nil, fmt.Errorf("an SSL listener needs a key store: set %s (with %s) or %s and %s",
				s.key("ssl.keystore.location"), s.key("ssl.keystore.password"), s.key("ssl.keystore.certificate.chain"), s.key("ssl.keystore.key"))
		}
		switch strings.ToLower(strings.TrimSpace(s.ClientAuth)) {
		case "", "none":
			cfg.ClientAuth = tls.NoClientCert
		case "requested":
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		case "required":
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		default:
			return nil, fmt.Errorf("invalid value %q for %s: want none, requested or required", s.ClientAuth, s.key("ssl.client.auth"))
		}
	}
	m.config = cfg
	return m, nil
}

// modified reports whether a store file changed since it was loaded
// (Kafka's SecurityStore.modified).
func (m *material) modified() bool {
	if m.keystore != nil && !m.keystore.modTime.IsZero() && !modTime(m.settings.KeystoreLocation).Equal(m.keystore.modTime) {
		return true
	}
	return m.trust != nil && !m.trust.modTime.IsZero() && !modTime(m.settings.TruststoreLocation).Equal(m.trust.modTime)
}

// TLSServer is the TLS side of one SSL listener. Its Config serves every
// handshake with the material current at that moment, so Reload swaps
// the certificate (and trust store) of a running listener without
// touching connections already made.
type TLSServer struct {
	cur  atomic.Pointer[material]
	root *tls.Config
}

// NewTLSServer loads the stores s names and checks every setting; the
// error names the key at fault.
func NewTLSServer(s TLSSettings) (*TLSServer, error) {
	m, err := buildMaterial(s, true)
	if err != nil {
		return nil, err
	}
	srv := &TLSServer{}
	srv.cur.Store(m)
	srv.root = &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return srv.cur.Load().config, nil },
	}
	return srv, nil
}

// Config is the tls.Config to serve with: it hands each handshake the
// current material.
func (s *TLSServer) Config() *tls.Config { return s.root }

// Certificate is the certificate served now.
func (s *TLSServer) Certificate() *x509.Certificate { return s.cur.Load().keystore.leaf }

// Principal is the principal of a connection after its handshake: the
// mapped subject of the client's certificate, or User:ANONYMOUS when the
// client sent none. An error (no mapping rule matched) should close the
// connection, as Kafka fails such an authentication.
func (s *TLSServer) Principal(st tls.ConnectionState) (Principal, error) {
	var leaf *x509.Certificate
	if len(st.PeerCertificates) > 0 {
		leaf = st.PeerCertificates[0]
	}
	return s.cur.Load().mapper.PrincipalFromCertificate(leaf)
}

// Reload builds the listener's TLS material again when the settings
// changed or a store file was modified since it was loaded, as Kafka
// does on a dynamic update of listener.name.<l>.ssl.* keys. The new
// certificate must keep the subject and alternative names of the old one
// unless ssl.allow.dn.changes / ssl.allow.san.changes allow it (Kafka's
// SslFactory check). On error the listener keeps what it had. reloaded
// says whether anything was swapped.
func (s *TLSServer) Reload(settings TLSSettings) (reloaded bool, err error) {
	old := s.cur.Load()
	if old.settings.equal(&settings) && !old.modified() {
		return false, nil
	}
	m, err := buildMaterial(settings, true)
	if err != nil {
		return false, err
	}
	if err := checkSameIdentity(old.keystore.leaf, m.keystore.leaf, &settings); err != nil {
		return false, err
	}
	s.cur.Store(m)
	return true, nil
}

func checkSameIdentity(old, cur *x509.Certificate, s *TLSSettings) error {
	if !s.AllowDNChanges {
		a, _ := DistinguishedName(old.RawSubject)
		b, _ := DistinguishedName(cur.RawSubject)
		if a != b {
			return fmt.Errorf("the new key store's certificate has subject %q, not %q; set %s=true to allow that", b, a, s.key("ssl.allow.dn.changes"))
		}
	}
	if !s.AllowSANChanges && !sameSANs(old, cur) {
		return fmt.Errorf("the new key store's certificate has other subject alternative names; set %s=true to allow that", s.key("ssl.allow.san.changes"))
	}
	return nil
}

func sameSANs(a, b *x509.Certificate) bool {
	ips := func(c *x509.Certificate) []string {
		var out []string
		for _, ip := range c.IPAddresses {
			out = append(out, ip.String())
		}
		slices.Sort(out)
		return out
	}
	uris := func(c *x509.Certificate) []string {
		var out []string
		for _, u := range c.URIs {
			out = append(out, u.String())
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	return slices.Equal(sorted(a.DNSNames), sorted(b.DNSNames)) && slices.Equal(sorted(a.EmailAddresses), sorted(b.EmailAddresses)) &&
		slices.Equal(ips(a), ips(b)) && slices.Equal(uris(a), uris(b))
}

// TLSClient dials TLS with one listener's settings: another node's
// inter-broker or controller listener, with this node's trust store to
// verify it and key store to present (mTLS).
type TLSClient struct {
	cur atomic.Pointer[material]
}

// NewTLSClient loads the stores s names; a client needs no key store
// unless the server requires client authentication.
func NewTLSClient(s TLSSettings) (*TLSClient, error) {
	m, err := buildMaterial(s, false)
	if err != nil {
		return nil, err
	}
	c := &TLSClient{}
	c.cur.Store(m)
	return c, nil
}

// Reload is TLSServer.Reload for the client side.
func (c *TLSClient) Reload(settings TLSSettings) (bool, error) {
	old := c.cur.Load()
	if old.settings.equal(&settings) && !old.modified() {
		return false, nil
	}
	m, err := buildMaterial(settings, false)
	if err != nil {
		return false, err
	}
	c.cur.Store(m)
	return true, nil
}

// Config is the tls.Config for dialing addr (host:port) with the current
// material. With ssl.endpoint.identification.algorithm=https (the
// default) the server's certificate must name the host; with it empty
// only the chain is verified, as in Kafka.
func (c *TLSClient) Config(addr string) *tls.Config {
	m := c.cur.Load()
	cfg := m.config.Clone()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	cfg.ServerName = host
	switch strings.ToLower(strings.TrimSpace(m.settings.EndpointIdentificationAlgorithm)) {
	case "https":
	default:
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true // the chain is verified below, only the name is not
		cfg.VerifyConnection = func(st tls.ConnectionState) error {
			if len(st.PeerCertificates) == 0 {
				return errors.New("tls: server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, ic := range st.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err := st.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
				CurrentTime: time.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			return err
		}
	}
	return cfg
}

// DialContext dials addr over TLS and completes the handshake.
func (c *TLSClient) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := tls.Dialer{Config: c.Config(addr)}
	return d.DialContext(ctx, network, addr)
}
