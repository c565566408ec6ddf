package config

import "testing"

func TestRestProxyListeners(t *testing.T) {
	if got, err := Default().RestProxyListeners(); err != nil || len(got) != 1 || got[0] != "127.0.0.1:8082" {
		t.Errorf("embedded defaults: %v, %v", got, err)
	}
	if got, err := Default("rest.proxy.listeners=").RestProxyListeners(); err != nil || len(got) != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
	if _, err := Default("rest.proxy.listeners=https://h:1").RestProxyListeners(); err == nil {
		t.Error("https accepted")
	}
	for _, e := range Default().Describe() {
		if e.Name == "rest.proxy.listeners" {
			t.Error("rest.proxy.listeners is described as a Kafka broker key")
		}
	}
}
