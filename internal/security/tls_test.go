package security_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/security/tlstest"
)

type pki struct {
	ca             *tlstest.CA
	server, client *tlstest.Identity
	dir            string
}

func newPKI(t *testing.T) *pki {
	ca := tlstest.NewCA(t, "Test CA")
	return &pki{ca: ca, dir: t.TempDir(),
		server: ca.Server(t, pkix.Name{CommonName: "broker", Organization: []string{"Samsa"}}),
		client: ca.Client(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"Users"}})}
}

// Every key store and trust store format loads, and a client presenting a
// certificate gets the principal its DN maps to.
func TestTLSStoreFormats(t *testing.T) {
	p := newPKI(t)
	trusts := map[string]security.TLSSettings{
		"PEM file":   {TruststoreType: "PEM", TruststoreLocation: tlstest.WritePEMTrust(t, p.dir, "t.pem", p.ca.Cert)},
		"PEM inline": {TruststoreType: "PEM", TruststoreCertificates: tlstest.CertPEM(p.ca.Cert)},
		"PKCS12":     {TruststoreType: "PKCS12", TruststoreLocation: tlstest.WritePKCS12Trust(t, p.dir, "t.p12", p.ca.Cert), TruststorePassword: tlstest.Password},
		"JKS":        {TruststoreType: "JKS", TruststoreLocation: tlstest.WriteJKSTrust(t, p.dir, "t.jks", p.ca.Cert), TruststorePassword: tlstest.Password},
	}
	keys := map[string]security.TLSSettings{
		"PEM file":   {KeystoreType: "PEM", KeystoreLocation: p.server.WritePEM(t, p.dir, "k.pem")},
		"PEM inline": {KeystoreType: "PEM", KeystoreCertificateChain: tlstest.CertPEM(p.server.Chain...), KeystoreKey: p.server.KeyPEM(t)},
		"PKCS12":     {KeystoreType: "PKCS12", KeystoreLocation: p.server.WritePKCS12(t, p.dir, "k.p12"), KeystorePassword: tlstest.Password},
		"JKS":        {KeystoreType: "JKS", KeystoreLocation: p.server.WriteJKS(t, p.dir, "k.jks"), KeystorePassword: tlstest.Password},
	}
	for kname, ks := range keys {
		for tname, ts := range trusts {
			s := ks
			s.TruststoreType, s.TruststoreLocation, s.TruststorePassword, s.TruststoreCertificates =
				ts.TruststoreType, ts.TruststoreLocation, ts.TruststorePassword, ts.TruststoreCertificates
			s.ClientAuth = "required"
			s.PrincipalMappingRules = "RULE:^CN=([^,]+),.*$/$1/"
			srv, err := security.NewTLSServer(s)
			if err != nil {
				t.Errorf("key store %s, trust store %s: %v", kname, tname, err)
				continue
			}
			if got := srv.Certificate().Subject.CommonName; got != "broker" {
				t.Errorf("key store %s: serves %q", kname, got)
			}
			principal, err := handshake(t, srv, p.client, p.ca)
			if err != nil || principal.String() != "User:alice" {
				t.Errorf("key store %s, trust store %s: principal %v, %v", kname, tname, principal, err)
			}
		}
	}
}

// handshake connects a client with id (nil: no certificate) trusting ca
// and returns the principal the server gives it.
func handshake(t *testing.T, srv *security.TLSServer, id *tlstest.Identity, ca *tlstest.CA) (security.Principal, error) {
	t.Helper()
	cs, ss := net.Pipe()
	defer cs.Close()
	defer ss.Close()
	ccfg := &tls.Config{ServerName: "localhost", RootCAs: poolOf(ca)}
	if id != nil {
		// Sent whatever CAs the server names, as a misconfigured or
		// hostile client would.
		cert := &tls.Certificate{Certificate: [][]byte{id.Cert.Raw}, PrivateKey: id.Key}
		ccfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	errc := make(chan error, 1)
	go func() {
		c := tls.Client(cs, ccfg)
		err := c.Handshake()
		if err == nil {
			// TLS 1.3 reports a refused client certificate on the first read.
			c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			var b [1]byte
			if _, rerr := c.Read(b[:]); rerr != nil && !isTimeout(rerr) {
				err = rerr
			}
		}
		errc <- err
	}()
	sc := tls.Server(ss, srv.Config())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sc.HandshakeContext(ctx); err != nil {
		<-errc
		return security.Principal{}, err
	}
	if err := <-errc; err != nil {
		return security.Principal{}, err
	}
	return srv.Principal(sc.ConnectionState())
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func poolOf(ca *tlstest.CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// ssl.client.auth: required refuses a client without a certificate or
// with one from another CA; requested lets a client without one in as
// User:ANONYMOUS; none never asks.
func TestTLSClientAuth(t *testing.T) {
	p := newPKI(t)
	other := tlstest.NewCA(t, "Other CA")
	stranger := other.Client(t, pkix.Name{CommonName: "mallory"})
	base := security.TLSSettings{
		KeystoreType: "PEM", KeystoreCertificateChain: tlstest.CertPEM(p.server.Chain...), KeystoreKey: p.server.KeyPEM(t),
		TruststoreType: "PEM", TruststoreCertificates: tlstest.CertPEM(p.ca.Cert),
	}
	for _, tc := range []struct {
		auth string
		id   *tlstest.Identity
		want string // principal, or "" for refused
	}{
		{"required", p.client, "User:CN=alice,OU=Users"},
		{"required", nil, ""},
		{"required", stranger, ""},
		{"requested", nil, "User:ANONYMOUS"},
		{"requested", p.client, "User:CN=alice,OU=Users"},
		{"requested", stranger, ""},
		{"none", p.client, "User:ANONYMOUS"},
		{"none", nil, "User:ANONYMOUS"},
	} {
		s := base
		s.ClientAuth = tc.auth
		srv, err := security.NewTLSServer(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := handshake(t, srv, tc.id, p.ca)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("ssl.client.auth=%s: client %v accepted as %v", tc.auth, tc.id != nil, got)
		case tc.want != "" && (err != nil || got.String() != tc.want):
			t.Errorf("ssl.client.auth=%s: got %v, %v; want %s", tc.auth, got, err, tc.want)
		}
	}
}

// Every inconsistent or broken setting is refused with the key named.
func TestTLSSettingsFailClosed(t *testing.T) {
	p := newPKI(t)
	jksPath := p.server.WriteJKS(t, p.dir, "k.jks")
	p12Path := p.server.WritePKCS12(t, p.dir, "k.p12")
	chain, key := tlstest.CertPEM(p.server.Chain...), p.server.KeyPEM(t)
	otherKey := p.client.KeyPEM(t)
	garbage := filepath.Join(p.dir, "garbage")
	os.WriteFile(garbage, []byte("not a key store"), 0o600)
	prefixed := func(base string) string { return "listener.name.ssl." + base }
	for _, tc := range []struct {
		s    security.TLSSettings
		want string
	}{
		{security.TLSSettings{}, "needs a key store"},
		{security.TLSSettings{KeystoreType: "JKS", KeystoreLocation: jksPath}, "ssl.keystore.password"},
		{security.TLSSettings{KeystoreType: "JKS", KeystoreLocation: jksPath, KeystorePassword: "wrong"}, "ssl.keystore.location"},
		{security.TLSSettings{KeystoreType: "PKCS12", KeystoreLocation: p12Path, KeystorePassword: "wrong"}, "wrong password"},
		{security.TLSSettings{KeystoreType: "PKCS12", KeystoreLocation: garbage, KeystorePassword: "x"}, "ssl.keystore.location"},
		{security.TLSSettings{KeystoreType: "JKS", KeystoreLocation: filepath.Join(p.dir, "missing.jks"), KeystorePassword: "x"}, "no such file"},
		{security.TLSSettings{KeystoreType: "BKS", KeystoreLocation: jksPath, KeystorePassword: "x"}, "ssl.keystore.type"},
		{security.TLSSettings{KeystoreType: "JKS", KeystoreCertificateChain: chain, KeystoreKey: key}, "ssl.keystore.type=PEM"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreKey: key}, "ssl.keystore.certificate.chain"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain}, "ssl.keystore.key"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: otherKey}, "does not belong"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, KeystorePassword: "x"}, "ssl.keystore.password"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, KeyPassword: "x"}, "not an encrypted"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: "junk", KeystoreKey: key}, "no CERTIFICATE"},
		{security.TLSSettings{KeystorePassword: "x"}, "ssl.keystore.location"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, TruststoreType: "JKS", TruststoreCertificates: chain}, "ssl.truststore.type=PEM"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, TruststorePassword: "x"}, "ssl.truststore.location"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, TruststoreType: "JKS", TruststoreLocation: jksPath}, "ssl.truststore.password"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, TruststoreType: "PEM", TruststoreCertificates: "none here"}, "ssl.truststore.certificates"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, ClientAuth: "always"}, "ssl.client.auth"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, EnabledProtocols: []string{"TLSv1.1"}}, "ssl.enabled.protocols"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, Protocol: "SSLv3"}, "ssl.protocol"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, Protocol: "TLSv1.2", EnabledProtocols: []string{"TLSv1.3"}}, "no protocol"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, CipherSuites: []string{"TLS_NOPE"}}, "ssl.cipher.suites"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, CipherSuites: []string{"TLS_RSA_WITH_RC4_128_SHA"}}, "RC4"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, CipherSuites: []string{"TLS_AES_256_GCM_SHA384"}}, "all TLS 1.3 suites"},
		{security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: chain, KeystoreKey: key, PrincipalMappingRules: "RULE:(?!x)/y/"}, "ssl.principal.mapping.rules"},
		{security.TLSSettings{KeyName: prefixed, KeystoreType: "JKS", KeystoreLocation: jksPath}, "listener.name.ssl.ssl.keystore.password"},
	} {
		_, err := security.NewTLSServer(tc.s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.s, err, tc.want)
		}
	}
}

// Protocols and cipher suites resolve to what Go can honour exactly.
func TestTLSProtocolsAndSuites(t *testing.T) {
	p := newPKI(t)
	base := security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: tlstest.CertPEM(p.server.Chain...), KeystoreKey: p.server.KeyPEM(t)}
	for _, tc := range []struct {
		protocols, suites []string
		protocol          string
		min, max          uint16
		nSuites           int
	}{
		{nil, nil, "", tls.VersionTLS12, tls.VersionTLS13, 0},
		{[]string{"TLSv1.2"}, nil, "", tls.VersionTLS12, tls.VersionTLS12, 0},
		{[]string{"TLSv1.3"}, nil, "", tls.VersionTLS13, tls.VersionTLS13, 0},
		{nil, nil, "TLSv1.2", tls.VersionTLS12, tls.VersionTLS12, 0},
		{nil, []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "SSL_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, "", tls.VersionTLS12, tls.VersionTLS12, 2},
		{nil, []string{"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"}, "", tls.VersionTLS12, tls.VersionTLS12, 1},
		{nil, []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}, "", tls.VersionTLS13, tls.VersionTLS13, 0},
		{nil, []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}, "", tls.VersionTLS12, tls.VersionTLS13, 1},
	} {
		s := base
		s.EnabledProtocols, s.CipherSuites, s.Protocol = tc.protocols, tc.suites, tc.protocol
		srv, err := security.NewTLSServer(s)
		if err != nil {
			t.Errorf("%v %v %s: %v", tc.protocols, tc.suites, tc.protocol, err)
			continue
		}
		cfg, _ := srv.Config().GetConfigForClient(nil)
		if cfg.MinVersion != tc.min || cfg.MaxVersion != tc.max || len(cfg.CipherSuites) != tc.nSuites {
			t.Errorf("%v %v %s: versions %x-%x, %d suites; want %x-%x, %d", tc.protocols, tc.suites, tc.protocol,
				cfg.MinVersion, cfg.MaxVersion, len(cfg.CipherSuites), tc.min, tc.max, tc.nSuites)
		}
	}
}

// A PEM key encrypted with openssl's PBES2 defaults loads with
// ssl.key.password, and not without it or with a wrong one.
func TestTLSEncryptedPKCS8(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl")
	}
	p := newPKI(t)
	plain := filepath.Join(p.dir, "key.pem")
	os.WriteFile(plain, []byte(p.server.KeyPEM(t)), 0o600)
	for _, args := range [][]string{
		{"-v2", "aes-256-cbc"},
		{"-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"},
		{"-v2", "des3"},
	} {
		enc := filepath.Join(p.dir, "enc.pem")
		cmd := exec.Command("openssl", append([]string{"pkcs8", "-topk8", "-in", plain, "-out", enc, "-passout", "pass:s3cret"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
		keyPEM, _ := os.ReadFile(enc)
		s := security.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: tlstest.CertPEM(p.server.Chain...), KeystoreKey: string(keyPEM), KeyPassword: "s3cret"}
		if _, err := security.NewTLSServer(s); err != nil {
			t.Errorf("openssl %v: %v", args, err)
		}
		s.KeyPassword = "wrong"
		if _, err := security.NewTLSServer(s); err == nil {
			t.Errorf("openssl %v: wrong password accepted", args)
		}
		s.KeyPassword = ""
		if _, err := security.NewTLSServer(s); err == nil || !strings.Contains(err.Error(), "ssl.key.password") {
			t.Errorf("openssl %v: no password: %v", args, err)
		}
	}
}

// A reload swaps the certificate for the next handshakes when the file
// changed; a certificate for another subject is refused unless
// ssl.allow.dn.changes is set; a broken file keeps the old material.
func TestTLSReload(t *testing.T) {
	p := newPKI(t)
	path := p.server.WritePKCS12(t, p.dir, "k.p12")
	s := security.TLSSettings{KeystoreType: "PKCS12", KeystoreLocation: path, KeystorePassword: tlstest.Password}
	srv, err := security.NewTLSServer(s)
	if err != nil {
		t.Fatal(err)
	}
	first := srv.Certificate()
	if ok, err := srv.Reload(s); ok || err != nil {
		t.Fatalf("unchanged settings and file: reloaded=%v, %v", ok, err)
	}
	renewed := p.ca.Server(t, pkix.Name{CommonName: "broker", Organization: []string{"Samsa"}})
	renewed.WritePKCS12(t, p.dir, "k.p12")
	touch(t, path)
	if ok, err := srv.Reload(s); !ok || err != nil {
		t.Fatalf("renewed file: reloaded=%v, %v", ok, err)
	}
	if srv.Certificate().SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("still serving the old certificate")
	}
	other := p.ca.Server(t, pkix.Name{CommonName: "someone-else"})
	other.WritePKCS12(t, p.dir, "k.p12")
	touch(t, path)
	if _, err := srv.Reload(s); err == nil || !strings.Contains(err.Error(), "ssl.allow.dn.changes") {
		t.Fatalf("other subject: %v", err)
	}
	s.AllowDNChanges = true
	if ok, err := srv.Reload(s); !ok || err != nil {
		t.Fatalf("other subject allowed: reloaded=%v, %v", ok, err)
	}
	os.WriteFile(path, []byte("broken"), 0o600)
	touch(t, path)
	if _, err := srv.Reload(s); err == nil {
		t.Fatal("broken key store reloaded")
	}
	if srv.Certificate().Subject.CommonName != "someone-else" {
		t.Fatal("a failed reload changed the certificate")
	}
}

// touch moves a file's modification time forward, as a rewrite a second
// later would.
func touch(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	next := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(path, next, next); err != nil {
		t.Fatal(err)
	}
}
