package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ConnectionLimits are the limits Kafka's SocketServer (ConnectionQuotas)
// puts on the connections a broker accepts. Counts and rates at their
// default (2147483647) mean no limit.
type ConnectionLimits struct {
	// MaxConnections is max.connections: connections to the broker at
	// once, over every listener but the inter-broker one when there are
	// others; a new one waits to be accepted until one closes.
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip, and PerIPOverrides
	// max.connections.per.ip.overrides (host or address → count): a
	// connection from an address at its limit is closed at once.
	MaxConnectionsPerIP int
	PerIPOverrides      map[string]int
	// MaxConnectionCreationRate is max.connection.creation.rate: new
	// connections per second over the broker (the inter-broker listener
	// excepted when there are others); faster ones wait to be accepted.
	MaxConnectionCreationRate int
	// Listeners are each listener's own max.connections and
	// max.connection.creation.rate (listener.name.<l>.<key>, else the
	// broker-wide value, as Kafka resolves them).
	Listeners map[string]ListenerConnectionLimits
}

// ListenerConnectionLimits are one listener's connection limits.
type ListenerConnectionLimits struct {
	MaxConnections            int
	MaxConnectionCreationRate int
}

// ConnectionLimits resolves the connection limits of the broker's
// listeners (the controller listeners are not limited).
func (c *Config) ConnectionLimits() (ConnectionLimits, error) {
	out := ConnectionLimits{
		MaxConnections:            int(c.i32("max.connections")),
		MaxConnectionsPerIP:       int(c.i32("max.connections.per.ip")),
		MaxConnectionCreationRate: int(c.i32("max.connection.creation.rate")),
		Listeners:                 map[string]ListenerConnectionLimits{},
	}
	var err error
	if out.PerIPOverrides, err = parseHostCounts(c.str("max.connections.per.ip.overrides")); err != nil {
		return out, &ValueError{Key: "max.connections.per.ip.overrides", Value: c.str("max.connections.per.ip.overrides"), Want: hostCounts{}.want()}
	}
	for _, l := range c.Listeners {
		if c.IsControllerListener(l.Name) {
			continue
		}
		var ll ListenerConnectionLimits
		for _, k := range []struct {
			base string
			into *int
		}{{"max.connections", &ll.MaxConnections}, {"max.connection.creation.rate", &ll.MaxConnectionCreationRate}} {
			v, _, err := c.listenerValue(ListenerPrefix(l.Name), k.base)
			if err != nil {
				return out, err
			}
			*k.into = int(v.(int32))
		}
		out.Listeners[l.Name] = ll
	}
	return out, nil
}

// validateConnectionLimits is Kafka's rule that no address may connect
// without an override saying so.
func (c *Config) validateConnectionLimits() error {
	if c.i32("max.connections.per.ip") == 0 && strings.TrimSpace(c.str("max.connections.per.ip.overrides")) == "" {
		return fmt.Errorf("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set")
	}
	_, err := c.ConnectionLimits()
	return err
}

// hostCounts validates max.connections.per.ip.overrides: comma-separated
// host:count pairs, each count a non-negative int (Kafka's getMap).
type hostCounts struct{}

func (hostCounts) valid(v any) bool {
	s, _ := v.(string)
	_, err := parseHostCounts(s)
	return err == nil
}
func (hostCounts) want() string {
	return "comma-separated host:count pairs, e.g. 127.0.0.1:200,broker-1:100"
}

// parseHostCounts parses host:count pairs; an IPv6 address keeps its
// colons (the count follows the last one).
func parseHostCounts(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, pair := range splitList(s) {
		i := strings.LastIndexByte(pair, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%q is not host:count", pair)
		}
		host := strings.TrimSpace(pair[:i])
		n, err := strconv.Atoi(strings.TrimSpace(pair[i+1:]))
		if err != nil || n < 0 || host == "" {
			return nil, fmt.Errorf("%q is not host:count", pair)
		}
		out[strings.Trim(host, "[]")] = n
	}
	return out, nil
}
