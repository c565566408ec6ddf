package config

import "testing"

func TestRestProxyListeners(t *testing.T) {
	if got, err := Default().RestProxyListeners(); err != nil || len(got) != 1 || got[0].URL() != "http://127.0.0.1:8082" {
		t.Errorf("embedded defaults: %v, %v", got, err)
	}
	if got, err := Default("rest.proxy.listeners=").RestProxyListeners(); err != nil || len(got) != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
	if got, err := Default("rest.proxy.listeners=https://h:1").RestProxyListeners(); err != nil || len(got) != 1 || !got[0].TLS || got[0].Addr != "h:1" {
		t.Errorf("https: %v, %v", got, err)
	}
	if _, err := Default("rest.proxy.listeners=ftp://h:1").RestProxyListeners(); err == nil {
		t.Error("ftp accepted")
	}
	c := Default("rest.proxy.ssl.keystore.location=/k.pem", "ssl.keystore.location=/broker.pem", "ssl.truststore.location=/ca.pem",
		"rest.proxy.authentication.method=BASIC", "rest.proxy.authentication.users.file=/users",
		"rest.proxy.confluent.rest.auth.propagate.method=JETTY_AUTH",
		"rest.proxy.client.security.protocol=SASL_PLAINTEXT", "rest.proxy.client.sasl.mechanism=PLAIN")
	if s := c.RestProxySSL(); s.KeystoreLocation != "/k.pem" || s.TruststoreLocation != "/ca.pem" {
		t.Errorf("RestProxySSL: %+v", s)
	}
	if m, realm, roles, file, prop := c.RestProxyAuth(); m != "BASIC" || realm != "KafkaRest" || len(roles) != 1 || roles[0] != "*" || file != "/users" || !prop {
		t.Errorf("RestProxyAuth: %v %v %v %v %v", m, realm, roles, file, prop)
	}
	if p, m, j := c.RestProxyKafkaClient(); p != "SASL_PLAINTEXT" || m != "PLAIN" || j != "" {
		t.Errorf("RestProxyKafkaClient: %v %v %v", p, m, j)
	}
	if _, _, err := Load("", []string{"rest.proxy.authentication.method=DIGEST"}); err == nil {
		t.Error("authentication.method=DIGEST accepted")
	}
	for _, e := range Default().Describe() {
		if e.Name == "rest.proxy.listeners" {
			t.Error("rest.proxy.listeners is described as a Kafka broker key")
		}
	}
}
