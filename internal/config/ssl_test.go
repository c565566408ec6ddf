package config

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A listener-prefixed key wins over the plain one for its listener only,
// and KeyName names what set the value.
func TestListenerSSL(t *testing.T) {
	c, warnings, err := Load("", []string{
		"listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
		"ssl.keystore.location=/base.jks",
		"ssl.keystore.password=base",
		"ssl.client.auth=requested",
		"listener.name.ssl.ssl.keystore.location=/ssl.p12",
		"listener.name.ssl.ssl.keystore.type=PKCS12",
		"listener.name.ssl.ssl.enabled.protocols=TLSv1.3",
		"listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=(.*?),.*$/$1/,DEFAULT",
	})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("load: %v, warnings %v", err, warnings)
	}
	s := c.ListenerSSL("SSL")
	if s.KeystoreLocation != "/ssl.p12" || s.KeystoreType != "PKCS12" || s.KeystorePassword != "base" || s.ClientAuth != "requested" ||
		strings.Join(s.EnabledProtocols, ",") != "TLSv1.3" || s.PrincipalMappingRules != "RULE:^CN=(.*?),.*$/$1/,DEFAULT" {
		t.Errorf("SSL listener: %+v", s)
	}
	if got := s.KeyName("ssl.keystore.location"); got != "listener.name.ssl.ssl.keystore.location" {
		t.Errorf("KeyName(ssl.keystore.location) = %s", got)
	}
	if got := s.KeyName("ssl.keystore.password"); got != "ssl.keystore.password" {
		t.Errorf("KeyName(ssl.keystore.password) = %s", got)
	}
	p := c.ListenerSSL("PLAINTEXT")
	if p.KeystoreLocation != "/base.jks" || p.KeystoreType != "JKS" || p.Protocol != "TLSv1.3" || strings.Join(p.EnabledProtocols, ",") != "TLSv1.2,TLSv1.3" {
		t.Errorf("PLAINTEXT listener: %+v", p)
	}
}

// A bad prefixed value stops start-up naming the prefixed key; prefixes
// Kafka would ignore are warned about.
func TestListenerKeysValidated(t *testing.T) {
	_, _, err := Load("", []string{"listener.name.ssl.ssl.client.auth=always"})
	if err == nil || !strings.Contains(err.Error(), "listener.name.ssl.ssl.client.auth") {
		t.Fatalf("bad prefixed value: %v", err)
	}
	_, warnings, err := Load("", []string{"listener.name.SSL.ssl.keystore.location=/x", "listener.name.nope.ssl.keystore.location=/y"})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(warnings, "\n")
	if !strings.Contains(joined, "listener.name.SSL.ssl.keystore.location ignored: listener prefixes are lower case") ||
		!strings.Contains(joined, "listener.name.nope.ssl.keystore.location ignored: no listener NOPE") {
		t.Errorf("warnings: %v", warnings)
	}
}

// Kafka's rules for dynamic security configs: key and trust stores only
// with the listener prefix, prefixed keys per broker only.
func TestDynamicListenerKeys(t *testing.T) {
	for _, tc := range []struct {
		configs        map[string]string
		clusterDefault bool
		want           string // "" accepted
	}{
		{map[string]string{"listener.name.ssl.ssl.keystore.location": "/new.jks"}, false, ""},
		{map[string]string{"ssl.keystore.location": "/new.jks"}, false, "only per-listener using the listener prefix: [ssl.keystore.location]"},
		{map[string]string{"listener.name.ssl.ssl.keystore.location": "/new.jks"}, true, "broker id must be specified"},
		{map[string]string{"listener.name.ssl.ssl.principal.mapping.rules": "DEFAULT"}, false, "Cannot update these configs dynamically"},
		{map[string]string{"listener.name.ssl.ssl.client.auth": "sometimes"}, false, "listener.name.ssl.ssl.client.auth"},
		{map[string]string{"listener.name.ssl.nonsense": "1"}, false, "Unknown broker configs"},
		{map[string]string{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, false, ""},
	} {
		err := ValidateDynamicBrokerConfigs(tc.configs, tc.clusterDefault)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.configs, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v (default=%v): %v, want %q", tc.configs, tc.clusterDefault, err, tc.want)
		}
	}
	c := Default("listeners=SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093", "inter.broker.listener.name=SSL",
		"listener.name.ssl.ssl.keystore.location=/static.jks")
	d, err := c.WithDynamic(map[string]string{"listener.name.ssl.ssl.keystore.location": "/dynamic.jks"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ListenerSSL("SSL").KeystoreLocation; got != "/dynamic.jks" {
		t.Errorf("dynamic prefixed value not in effect: %s", got)
	}
	e := byName(t, d.Describe(), "listener.name.ssl.ssl.keystore.location")
	if val(e) != "/dynamic.jks" || e.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(e.Synonyms) < 2 ||
		e.Synonyms[1].Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("describe: %+v", e)
	}
	if e := byName(t, c.Describe(), "listener.name.ssl.ssl.keystore.location"); e.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("static describe: %+v", e)
	}
}
