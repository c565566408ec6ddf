package config

import (
	"fmt"
	"net"
	"strings"
)

// RestProxyListeners returns the host:port addresses of
// rest.proxy.listeners (each written http://host:port), or an error
// naming the first that is not. Only http is served.
func (c *Config) RestProxyListeners() ([]string, error) {
	v, _ := c.Value("rest.proxy.listeners")
	list, _ := v.([]string)
	var out []string
	for _, l := range list {
		addr, ok := strings.CutPrefix(strings.TrimSpace(l), "http://")
		if _, _, err := net.SplitHostPort(addr); !ok || err != nil {
			return nil, fmt.Errorf("rest.proxy.listeners: %q is not http://host:port", l)
		}
		out = append(out, addr)
	}
	return out, nil
}
