// Package tlstest makes certificates for tests: a CA, server and client
// certificates signed by it, and the key and trust stores Kafka's ssl.*
// keys read, written as PEM, PKCS12 and JKS files.
package tlstest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Password protects every store this package writes.
const Password = "test-password"

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// Identity is a certificate with its key and the chain up to its CA.
type Identity struct {
	Cert  *x509.Certificate
	Key   *ecdsa.PrivateKey
	Chain []*x509.Certificate // Cert first, then the CA
}

var serial = big.NewInt(time.Now().UnixNano())

func nextSerial() *big.Int { serial = new(big.Int).Add(serial, big.NewInt(1)); return serial }

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// NewCA makes a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn, Organization: []string{"Samsa tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key}
}

// Server issues a server certificate for localhost and 127.0.0.1 with
// subject sub (and client auth usage too: a broker presents it when it
// dials another broker).
func (ca *CA) Server(t testing.TB, sub pkix.Name) *Identity {
	return ca.ServerFor(t, sub, "localhost", "127.0.0.1", "::1")
}

// ServerFor is Server for other hosts: each is an IP address or a DNS
// name the certificate names.
func (ca *CA) ServerFor(t testing.TB, sub pkix.Name, hosts ...string) *Identity {
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	return ca.issue(t, sub, dns, ips)
}

// Client issues a client certificate with subject sub.
func (ca *CA) Client(t testing.TB, sub pkix.Name) *Identity {
	return ca.issue(t, sub, nil, nil)
}

func (ca *CA) issue(t testing.TB, sub pkix.Name, dns []string, ips []net.IP) *Identity {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: sub, DNSNames: dns, IPAddresses: ips,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &Identity{Cert: cert, Key: key, Chain: []*x509.Certificate{cert, ca.Cert}}
}

// CertPEM is the PEM of certificates.
func CertPEM(certs ...*x509.Certificate) string {
	var b bytes.Buffer
	for _, c := range certs {
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.String()
}

// KeyPEM is the unencrypted PKCS#8 PEM of the identity's key.
func (id *Identity) KeyPEM(t testing.TB) string {
	der, err := x509.MarshalPKCS8PrivateKey(id.Key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// WritePEM writes the chain and the key into one PEM file (a PEM key
// store for ssl.keystore.location) and returns its path.
func (id *Identity) WritePEM(t testing.TB, dir, name string) string {
	return write(t, dir, name, []byte(CertPEM(id.Chain...)+id.KeyPEM(t)))
}

// WritePKCS12 writes a PKCS12 key store protected by Password.
func (id *Identity) WritePKCS12(t testing.TB, dir, name string) string {
	t.Helper()
	data, err := pkcs12.Modern.Encode(id.Key, id.Cert, id.Chain[1:], Password)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, data)
}

// WriteJKS writes a JKS key store whose store and key password are
// Password.
func (id *Identity) WriteJKS(t testing.TB, dir, name string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(id.Key)
	if err != nil {
		t.Fatal(err)
	}
	ks := jks.New()
	var chain []jks.Certificate
	for _, c := range id.Chain {
		chain = append(chain, jks.Certificate{Type: "X509", Content: c.Raw})
	}
	if err := ks.SetPrivateKeyEntry("samsa", jks.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: der, CertificateChain: chain}, []byte(Password)); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(Password)); err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, b.Bytes())
}

// WritePEMTrust writes a PEM trust store of certs.
func WritePEMTrust(t testing.TB, dir, name string, certs ...*x509.Certificate) string {
	return write(t, dir, name, []byte(CertPEM(certs...)))
}

// WritePKCS12Trust writes a PKCS12 trust store (Java's trusted
// certificate entries) protected by Password.
func WritePKCS12Trust(t testing.TB, dir, name string, certs ...*x509.Certificate) string {
	t.Helper()
	data, err := pkcs12.Modern.EncodeTrustStore(certs, Password)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, data)
}

// WriteJKSTrust writes a JKS trust store protected by Password.
func WriteJKSTrust(t testing.TB, dir, name string, certs ...*x509.Certificate) string {
	t.Helper()
	ks := jks.New()
	for i, c := range certs {
		if err := ks.SetTrustedCertificateEntry("ca"+string(rune('0'+i)), jks.TrustedCertificateEntry{
			CreationTime: time.Now(), Certificate: jks.Certificate{Type: "X509", Content: c.Raw}}); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(Password)); err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, b.Bytes())
}
