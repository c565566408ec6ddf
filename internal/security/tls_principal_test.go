package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"testing"
	"time"
)

// The cases of Kafka's SslPrincipalMapperTest, with its expected values.

func TestPrincipalMappingValidRules(t *testing.T) {
	for _, rules := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := ParsePrincipalMappingRules(rules); err != nil {
			t.Errorf("%s: %v", rules, err)
		}
	}
}

func TestPrincipalMappingInvalidRules(t *testing.T) {
	for _, rules := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		// Not Kafka's: what RE2 cannot run, and replacements Java's
		// replaceAll would throw on at the first client.
		"RULE:^CN=(?=x)(.*)$/$1/",
		"RULE:^CN=(.*)$/$x/",
		"RULE:^CN=.*$/$1/",
		"RULE:^CN=(.*)$/${nope}/",
	} {
		if m, err := ParsePrincipalMappingRules(rules); err == nil {
			t.Errorf("%s: accepted as %s", rules, m)
		}
	}
}

func TestPrincipalMapper(t *testing.T) {
	m, err := ParsePrincipalMappingRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, " +
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, " +
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, " +
		"DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.Name(dn); err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}
}

func TestPrincipalMappingRulesSplitting(t *testing.T) {
	for _, tc := range []struct{ want, rules string }{
		{"[]", ""},
		{"[DEFAULT]", "DEFAULT"},
		{"[RULE:/]", "RULE://"},
		{"[RULE:/.*]", "RULE:/.*/"},
		{"[RULE:/.*/L]", "RULE:/.*/L"},
		{"[RULE:/, DEFAULT]", "RULE://,DEFAULT"},
		{"[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "},
		{"[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "},
		{"[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "},
		{"[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "},
		// Empty rules are ignored.
		{"[]", ",   , , ,      , , ,   "},
		{"[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"},
		{"[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "},
		{"[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"},
		// Escape sequences.
		{`[RULE:\/\\\(\)\n\t/\/\/]`, `RULE:\/\\\(\)\n\t/\/\//`},
		{`[RULE:\**\/+/*/L, RULE:\/*\**/**]`, `RULE:\**\/+/*/L,RULE:\/*\**/**/`},
		// Rules rule.
		{`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			t.Errorf("%q: %v", tc.rules, err)
			continue
		}
		if got, want := m.String(), "SslPrincipalMapper(rules = "+tc.want+")"; got != want {
			t.Errorf("%q: %s, want %s", tc.rules, got, want)
		}
	}
}

func TestPrincipalMappingCommaWithWhitespace(t *testing.T) {
	m, err := ParsePrincipalMappingRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Fatalf("got %q, %v", got, err)
	}
}

// Replacements follow Java's replaceAll: a reference to a group the
// pattern lacks is a literal (Kafka's escapeLiteralBackReferences), \x is
// x, and a rule that matches no DN fails the client.
func TestPrincipalMappingReplacement(t *testing.T) {
	for _, tc := range []struct{ rules, dn, want string }{
		{`RULE:^CN=([a-z]+),O=(.*)$/$1@$3/`, "CN=bob,O=acme", "bob@$3"},
		{`RULE:^CN=([a-z]+),O=(.*)$/$12/`, "CN=bob,O=acme", "bob2"},
		{`RULE:^CN=([a-z]+),O=(.*)$/\$1-$2/`, "CN=bob,O=acme", "$1-acme"},
		{`RULE:^CN=(?P<user>[a-z]+),.*$/${user}/U`, "CN=bob,O=acme", "BOB"},
		{`RULE:^CN=([a-z]+),.*$/$0!/`, "CN=bob,O=acme", "CN=bob,O=acme!"},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			t.Errorf("%s: %v", tc.rules, err)
			continue
		}
		if got, err := m.Name(tc.dn); err != nil || got != tc.want {
			t.Errorf("%s on %s = %q, %v; want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
	m, _ := ParsePrincipalMappingRules(`RULE:^CN=([a-z]+)$/$1/`)
	if got, err := m.Name("CN=Bob"); err == nil {
		t.Errorf("no rule matches, but mapped to %q", got)
	}
}

// selfSigned returns a certificate with the given raw subject or name.
func selfSigned(t *testing.T, name pkix.Name, raw []byte) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: name, RawSubject: raw,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// The expected names were printed by Java 17's
// X509Certificate.getSubjectX500Principal().getName() for the same
// certificates: the string Kafka's mapping rules see.
func TestDistinguishedNameAsJavaPrintsIt(t *testing.T) {
	oid := func(ids ...int) asn1.ObjectIdentifier { return ids }
	marshal := func(v any) []byte {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bmp := marshal(asn1.RawValue{Tag: 30, Bytes: []byte{0, 'h', 0, 'i', 0, 0xe9}})
	for _, tc := range []struct {
		name pkix.Name
		raw  []byte
		want string
	}{
		{name: pkix.Name{CommonName: "Duke", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Org"}, Country: []string{"US"}},
			want: "CN=Duke,OU=ServiceUsers,O=Org,C=US"},
		{name: pkix.Name{CommonName: " lead,comma+plus=eq#hash;semi\"q\\bs<lt>gt trail ", Organization: []string{"#start"}},
			want: `CN=\ lead\,comma\+plus\=eq\#hash\;semi\"q\\bs\<lt\>gt trail\ ,O=\#start`},
		{name: pkix.Name{CommonName: "ünïcode é", SerialNumber: "1234", ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: oid(1, 2, 840, 113549, 1, 9, 1), Value: "a@b.c"},
			{Type: oid(0, 9, 2342, 19200300, 100, 1, 25), Value: "example"},
			{Type: oid(0, 9, 2342, 19200300, 100, 1, 1), Value: "uid1"},
			{Type: oid(2, 5, 4, 9), Value: "Main St"},
			{Type: oid(2, 5, 4, 17), Value: "12345"},
		}}, want: "2.5.4.17=#13053132333435,STREET=Main St,UID=uid1,DC=example,1.2.840.113549.1.9.1=#0c056140622e63,2.5.4.5=#130431323334,CN=ünïcode é"},
		{name: pkix.Name{CommonName: "nul\x00x", Locality: []string{"L1"}, Province: []string{"ST1"}},
			want: `CN=nul\00x,L=L1,ST=ST1`},
		{raw: marshal(pkix.RDNSequence{
			{{Type: oid(2, 5, 4, 6), Value: "US"}},
			{{Type: oid(2, 5, 4, 3), Value: "a"}, {Type: oid(2, 5, 4, 11), Value: "b"}},
		}), want: "CN=a+OU=b,C=US"},
		{raw: marshal(pkix.RDNSequence{{{Type: oid(2, 5, 4, 3), Value: asn1.RawValue{FullBytes: bmp}}}}),
			want: "CN=\\00h\\00i\\00\uFFFD"},
	} {
		cert := selfSigned(t, tc.name, tc.raw)
		got, err := DistinguishedName(cert.RawSubject)
		if err != nil || got != tc.want {
			t.Errorf("DistinguishedName = %q, %v; want %q", got, err, tc.want)
		}
	}
	if _, err := DistinguishedName([]byte{0x30, 0x03, 0x31}); err == nil {
		t.Error("malformed name accepted")
	}
}

func TestPrincipalFromCertificate(t *testing.T) {
	m, err := ParsePrincipalMappingRules("RULE:^CN=([^,]+),.*$/$1/L,DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := m.PrincipalFromCertificate(nil); err != nil || p != Anonymous {
		t.Errorf("no certificate: %v, %v; want User:ANONYMOUS", p, err)
	}
	cert := selfSigned(t, pkix.Name{CommonName: "Alice", Organization: []string{"Acme"}}, nil)
	if p, err := m.PrincipalFromCertificate(cert); err != nil || p.String() != "User:alice" {
		t.Errorf("got %v, %v; want User:alice", p, err)
	}
}
