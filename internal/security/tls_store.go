package security

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Key stores and trust stores in the three formats Kafka reads (its
// DefaultSslEngineFactory): JKS, PKCS12 and PEM, from a file
// (ssl.keystore.location, ssl.truststore.location) or, for PEM, inline
// (ssl.keystore.certificate.chain with ssl.keystore.key,
// ssl.truststore.certificates). The checks of which keys may be combined
// are Kafka's; every error names the key to fix.

// Store types, as ssl.keystore.type and ssl.truststore.type spell them.
const (
	StoreJKS    = "JKS"
	StorePKCS12 = "PKCS12"
	StorePEM    = "PEM"
)

// keystore is a loaded key store: the certificate chain with its key.
type keystore struct {
	cert    tls.Certificate
	leaf    *x509.Certificate
	modTime time.Time // of the file; zero for inline PEM
}

// truststore is a loaded trust store.
type truststore struct {
	pool    *x509.CertPool
	certs   []*x509.Certificate
	modTime time.Time
}

// loadKeystore loads the key store s configures; nil when none is.
func loadKeystore(s *TLSSettings) (*keystore, error) {
	k := s.key
	typ := strings.ToUpper(strings.TrimSpace(s.KeystoreType))
	switch {
	case s.KeystoreKey != "":
		switch {
		case typ != StorePEM:
			return nil, fmt.Errorf("%s can be set only with %s=PEM, but the type is %s", k("ssl.keystore.key"), k("ssl.keystore.type"), s.KeystoreType)
		case s.KeystoreCertificateChain == "":
			return nil, fmt.Errorf("%s is set, but %s is not", k("ssl.keystore.key"), k("ssl.keystore.certificate.chain"))
		case s.KeystoreLocation != "":
			return nil, fmt.Errorf("both %s and %s are set: set one", k("ssl.keystore.location"), k("ssl.keystore.key"))
		case s.KeystorePassword != "":
			return nil, fmt.Errorf("%s cannot be set with a PEM key store; only %s may be", k("ssl.keystore.password"), k("ssl.key.password"))
		}
		ks, err := pemKeystore([]byte(s.KeystoreCertificateChain), []byte(s.KeystoreKey), s.KeyPassword)
		if err != nil {
			return nil, fmt.Errorf("%s and %s: %w", k("ssl.keystore.certificate.chain"), k("ssl.keystore.key"), err)
		}
		return ks, nil
	case s.KeystoreCertificateChain != "":
		return nil, fmt.Errorf("%s is set, but %s is not", k("ssl.keystore.certificate.chain"), k("ssl.keystore.key"))
	case s.KeystoreLocation == "" && s.KeystorePassword != "":
		return nil, fmt.Errorf("%s is set, but %s is not", k("ssl.keystore.password"), k("ssl.keystore.location"))
	case s.KeystoreLocation == "":
		return nil, nil
	case typ == StorePEM && s.KeystorePassword != "":
		return nil, fmt.Errorf("%s cannot be set with a PEM key store; only %s may be", k("ssl.keystore.password"), k("ssl.key.password"))
	case typ != StorePEM && s.KeystorePassword == "":
		return nil, fmt.Errorf("%s is set, but %s is not", k("ssl.keystore.location"), k("ssl.keystore.password"))
	}
	path := s.KeystoreLocation
	data, mod, err := readStore(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k("ssl.keystore.location"), err)
	}
	var ks *keystore
	switch typ {
	case StorePEM:
		ks, err = pemKeystore(data, data, s.KeyPassword)
	case StorePKCS12:
		ks, err = pkcs12Keystore(data, s.KeystorePassword, s.KeyPassword)
	case StoreJKS:
		ks, err = jksKeystore(data, s.KeystorePassword, s.KeyPassword)
	default:
		return nil, fmt.Errorf("invalid value %q for %s: want JKS, PKCS12 or PEM", s.KeystoreType, k("ssl.keystore.type"))
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s (%s=%s): %w", k("ssl.keystore.location"), path, k("ssl.keystore.type"), typ, err)
	}
	ks.modTime = mod
	return ks, nil
}

// loadTruststore loads the trust store s configures; nil when none is
// (then, as in Java, the system's trusted roots apply).
func loadTruststore(s *TLSSettings) (*truststore, error) {
	k := s.key
	typ := strings.ToUpper(strings.TrimSpace(s.TruststoreType))
	switch {
	case s.TruststoreCertificates != "":
		switch {
		case typ != StorePEM:
			return nil, fmt.Errorf("%s can be set only with %s=PEM, but the type is %s", k("ssl.truststore.certificates"), k("ssl.truststore.type"), s.TruststoreType)
		case s.TruststoreLocation != "":
			return nil, fmt.Errorf("both %s and %s are set: set one", k("ssl.truststore.location"), k("ssl.truststore.certificates"))
		case s.TruststorePassword != "":
			return nil, fmt.Errorf("%s cannot be set with a PEM trust store", k("ssl.truststore.password"))
		}
		ts, err := pemTruststore([]byte(s.TruststoreCertificates))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k("ssl.truststore.certificates"), err)
		}
		return ts, nil
	case s.TruststoreLocation == "" && s.TruststorePassword != "":
		return nil, fmt.Errorf("%s is set, but %s is not", k("ssl.truststore.password"), k("ssl.truststore.location"))
	case s.TruststoreLocation == "":
		return nil, nil
	case typ == StorePEM && s.TruststorePassword != "":
		return nil, fmt.Errorf("%s cannot be set with a PEM trust store", k("ssl.truststore.password"))
	}
	path := s.TruststoreLocation
	data, mod, err := readStore(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k("ssl.truststore.location"), err)
	}
	var ts *truststore
	switch typ {
	case StorePEM:
		ts, err = pemTruststore(data)
	case StorePKCS12:
		ts, err = pkcs12Truststore(data, s.TruststorePassword)
	case StoreJKS:
		if s.TruststorePassword == "" {
			// Java reads a JKS file without its password, skipping the
			// integrity check; we do not read a store we cannot check.
			return nil, fmt.Errorf("%s is a JKS trust store, which Samsa reads only with %s (to check its integrity)", k("ssl.truststore.location"), k("ssl.truststore.password"))
		}
		ts, err = jksTruststore(data, s.TruststorePassword)
	default:
		return nil, fmt.Errorf("invalid value %q for %s: want JKS, PKCS12 or PEM", s.TruststoreType, k("ssl.truststore.type"))
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s (%s=%s): %w", k("ssl.truststore.location"), path, k("ssl.truststore.type"), typ, err)
	}
	ts.modTime = mod
	return ts, nil
}

func readStore(path string) ([]byte, time.Time, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	return data, fi.ModTime(), nil
}

// modTime is the modification time of a store file; zero when it cannot
// be read (the reload then fails loudly on reading it).
func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// pemKeystore reads a certificate chain and one private key: PKCS#8,
// encrypted when keyPassword is set (as Kafka requires), or, without a
// password, also PKCS#1 or SEC 1.
func pemKeystore(chainPEM, keyPEM []byte, keyPassword string) (*keystore, error) {
	var chain [][]byte
	for _, e := range pemEntries(chainPEM, "CERTIFICATE") {
		chain = append(chain, e.der)
	}
	if len(chain) == 0 {
		return nil, errors.New("no CERTIFICATE in PEM")
	}
	keys := pemEntries(keyPEM, "PRIVATE KEY")
	switch len(keys) {
	case 0:
		return nil, errors.New("no PRIVATE KEY in PEM")
	case 1:
	default:
		return nil, fmt.Errorf("expected one private key, but found %d", len(keys))
	}
	key, err := parsePEMKey(keys[0], keyPassword)
	if err != nil {
		return nil, err
	}
	return newKeystore(chain, key)
}

func parsePEMKey(e pemEntry, password string) (crypto.PrivateKey, error) {
	der := e.der
	encrypted := strings.Contains(e.label, "ENCRYPTED")
	switch {
	case encrypted && password == "":
		return nil, errors.New("the private key is encrypted, but ssl.key.password is not set")
	case password != "":
		plain, err := decryptPKCS8(der, password)
		if err != nil {
			if !encrypted {
				return nil, fmt.Errorf("ssl.key.password is set, but the private key is not an encrypted PKCS#8 key (%w)", err)
			}
			return nil, err
		}
		der = plain
	}
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("the private key could not be parsed (want PKCS#8, PKCS#1 or SEC 1)")
}

// pemEntry is one PEM entry: the words of its BEGIN line and its bytes.
type pemEntry struct {
	label string
	der   []byte
}

// pemEntries finds the entries of one kind as Kafka's PemParser does,
// which is more forgiving than encoding/pem: an inline value in a
// .properties file often loses its line breaks (a continued line joins
// "-----BEGIN CERTIFICATE----- MIIB..."), and text around entries and
// header lines are skipped.
func pemEntries(data []byte, name string) []pemEntry {
	re := pemPatterns[name]
	var out []pemEntry
	for _, m := range re.FindAllSubmatch(append(slices.Clip(data), '\n'), -1) {
		b64 := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v' {
				return -1
			}
			return r
		}, string(m[2]))
		der, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		out = append(out, pemEntry{label: string(m[1]), der: der})
	}
	return out
}

// pemPatterns are Kafka's PemParser patterns for the two kinds of entry.
var pemPatterns = map[string]*regexp.Regexp{
	"CERTIFICATE": pemPattern("CERTIFICATE"),
	"PRIVATE KEY": pemPattern("PRIVATE KEY"),
}

func pemPattern(name string) *regexp.Regexp {
	spaced := strings.ReplaceAll(name, " ", `\s+`)
	// Lazy where Kafka's is greedy: on one line (line breaks lost), a
	// greedy .* would run on to the last entry and drop the others.
	begin := `-+BEGIN\s*(.*?` + spaced + `)[^-]*-+\s+`
	end := `-+END\s*.*` + spaced + `[^-]*-+\s+`
	params := `(?:\s*[^\r\n]*:[^\r\n]*[\r\n]+)*`
	return regexp.MustCompile(begin + params + `([a-zA-Z0-9/+=\s]*)` + end)
}

func pemTruststore(data []byte) (*truststore, error) {
	var certs []*x509.Certificate
	for _, e := range pemEntries(data, "CERTIFICATE") {
		c, err := x509.ParseCertificate(e.der)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	return newTruststore(certs)
}

func newTruststore(certs []*x509.Certificate) (*truststore, error) {
	if len(certs) == 0 {
		return nil, errors.New("no trusted certificate in it")
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return &truststore{pool: pool, certs: certs}, nil
}

// newKeystore checks that the key belongs to one of the certificates and
// puts that one first: stores do not always list the leaf first.
func newKeystore(chain [][]byte, key crypto.PrivateKey) (*keystore, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	certs := make([]*x509.Certificate, len(chain))
	leaf := -1
	for i, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", i+1, err)
		}
		certs[i] = c
		if leaf < 0 && pub.Equal(c.PublicKey) {
			leaf = i
		}
	}
	if leaf < 0 {
		return nil, errors.New("the private key does not belong to any certificate of the chain")
	}
	if leaf != 0 {
		chain = append([][]byte{chain[leaf]}, slices.Delete(slices.Clone(chain), leaf, leaf+1)...)
	}
	return &keystore{cert: tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: certs[leaf]}, leaf: certs[leaf]}, nil
}

func pkcs12Keystore(data []byte, password, keyPassword string) (*keystore, error) {
	key, leaf, cas, err := pkcs12.DecodeChain(data, password)
	if err != nil && keyPassword != "" && keyPassword != password {
		key, leaf, cas, err = pkcs12.DecodeChain(data, keyPassword)
	}
	if err != nil {
		return nil, describePKCS12Error(err)
	}
	chain := [][]byte{leaf.Raw}
	for _, c := range cas {
		chain = append(chain, c.Raw)
	}
	return newKeystore(chain, key)
}

func describePKCS12Error(err error) error {
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return errors.New("wrong password, or not a PKCS12 file")
	}
	return err
}

func pkcs12Truststore(data []byte, password string) (*truststore, error) {
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err != nil && strings.Contains(err.Error(), "not marked as trusted") {
		// A PKCS12 file of certificates written by openssl carries no
		// Java trust attribute; the certificates in it are what the
		// operator means to trust.
		certs, err = pkcs12Certificates(data, password)
	}
	if err != nil {
		return nil, describePKCS12Error(err)
	}
	return newTruststore(certs)
}

func pkcs12Certificates(data []byte, password string) ([]*x509.Certificate, error) {
	blocks, err := pkcs12.ToPEM(data, password)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, b := range blocks {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	return certs, nil
}

func jksKeystore(data []byte, password, keyPassword string) (*keystore, error) {
	ks := jks.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return nil, fmt.Errorf("%w (wrong password, or not a JKS file)", err)
	}
	var aliases []string
	for _, a := range ks.Aliases() {
		if ks.IsPrivateKeyEntry(a) {
			aliases = append(aliases, a)
		}
	}
	switch len(aliases) {
	case 0:
		return nil, errors.New("it holds no private key entry")
	case 1:
	default:
		return nil, fmt.Errorf("it holds %d private key entries (%s); Samsa needs exactly one", len(aliases), strings.Join(aliases, ", "))
	}
	if keyPassword == "" {
		keyPassword = password // Kafka's default for ssl.key.password
	}
	entry, err := ks.GetPrivateKeyEntry(aliases[0], []byte(keyPassword))
	if err != nil {
		return nil, fmt.Errorf("private key %q: %w (check ssl.key.password)", aliases[0], err)
	}
	key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("private key %q: %w", aliases[0], err)
	}
	var chain [][]byte
	for _, c := range entry.CertificateChain {
		chain = append(chain, c.Content)
	}
	return newKeystore(chain, key)
}

func jksTruststore(data []byte, password string) (*truststore, error) {
	ks := jks.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return nil, fmt.Errorf("%w (wrong password, or not a JKS file)", err)
	}
	var certs []*x509.Certificate
	for _, a := range ks.Aliases() {
		var raw [][]byte
		switch {
		case ks.IsTrustedCertificateEntry(a):
			e, err := ks.GetTrustedCertificateEntry(a)
			if err != nil {
				return nil, err
			}
			raw = append(raw, e.Certificate.Content)
		case ks.IsPrivateKeyEntry(a):
			// Java's trust manager trusts the certificates of key
			// entries of a trust store too.
			chain, err := ks.GetPrivateKeyEntryCertificateChain(a)
			if err != nil {
				return nil, err
			}
			if len(chain) > 0 {
				raw = append(raw, chain[0].Content)
			}
		}
		for _, der := range raw {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, fmt.Errorf("certificate %q: %w", a, err)
			}
			certs = append(certs, c)
		}
	}
	return newTruststore(certs)
}
