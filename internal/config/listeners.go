package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Listener is one endpoint of listeners or advertised.listeners.
type Listener struct {
	Name string // upper case, as Kafka normalises listener names
	Host string // "" binds every interface
	Port int
}

// Addr is the host:port to listen on or connect to.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// String renders the listener in the NAME://host:port form it is written in.
func (l Listener) String() string {
	if strings.Contains(l.Host, ":") {
		return fmt.Sprintf("%s://[%s]:%d", l.Name, l.Host, l.Port)
	}
	return fmt.Sprintf("%s://%s:%d", l.Name, l.Host, l.Port)
}

// Voter is one entry of controller.quorum.voters.
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Addr is the voter's host:port.
func (v Voter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

// parseListeners parses "NAME://host:port,..." (the host may be empty or a
// bracketed IPv6 address).
func parseListeners(key, raw string) ([]Listener, error) {
	bad := &ValueError{Key: key, Value: raw, Want: "a comma-separated list of NAME://host:port"}
	var out []Listener
	for _, item := range splitList(raw) {
		name, rest, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, bad
		}
		host, port, err := splitHostPort(rest)
		if err != nil {
			return nil, bad
		}
		out = append(out, Listener{Name: strings.ToUpper(name), Host: host, Port: port})
	}
	return out, nil
}

// splitHostPort splits host:port, allowing an empty host and [v6]:port.
func splitHostPort(s string) (string, int, error) {
	var host, port string
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]:")
		if end < 0 {
			return "", 0, fmt.Errorf("bad address %q", s)
		}
		host, port = s[1:end], s[end+2:]
	} else {
		i := strings.LastIndex(s, ":")
		if i < 0 {
			return "", 0, fmt.Errorf("bad address %q", s)
		}
		host, port = s[:i], s[i+1:]
		if strings.Contains(host, ":") {
			return "", 0, fmt.Errorf("IPv6 host must be in brackets: %q", s)
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", s)
	}
	return host, n, nil
}

// parseProtocolMap parses "NAME:PROTOCOL,..." into a map keyed by upper-case
// listener name.
func parseProtocolMap(raw string) (map[string]string, error) {
	m := map[string]string{}
	for _, item := range splitList(raw) {
		name, proto, ok := strings.Cut(item, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || !securityProtocols.valid(proto) {
			return nil, &ValueError{Key: "listener.security.protocol.map", Value: raw,
				Want: "a comma-separated list of NAME:PROTOCOL with PROTOCOL one of " + strings.Join(securityProtocols, ", ")}
		}
		if _, dup := m[name]; dup {
			return nil, &ValueError{Key: "listener.security.protocol.map", Value: raw, Want: "each listener name once, but " + name + " repeats"}
		}
		m[name] = proto
	}
	return m, nil
}

// parseVoters parses controller.quorum.voters: "id@host:port,...".
func parseVoters(list []string) ([]Voter, error) {
	raw := strings.Join(list, ",")
	var out []Voter
	seen := map[int32]bool{}
	for _, item := range list {
		bad := &ValueError{Key: "controller.quorum.voters", Value: raw, Want: "a comma-separated list of id@host:port"}
		id, addr, ok := strings.Cut(item, "@")
		if !ok {
			return nil, bad
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return nil, bad
		}
		host, port, err := splitHostPort(addr)
		if err != nil || host == "" {
			return nil, bad
		}
		if seen[int32(n)] {
			return nil, &ValueError{Key: "controller.quorum.voters", Value: raw, Want: "each voter id once, but " + id + " repeats"}
		}
		seen[int32(n)] = true
		out = append(out, Voter{ID: int32(n), Host: host, Port: port})
	}
	return out, nil
}

func validateHostPorts(key string, list []string) error {
	for _, item := range list {
		if host, _, err := splitHostPort(item); err != nil || host == "" {
			return &ValueError{Key: key, Value: strings.Join(list, ","), Want: "a comma-separated list of host:port"}
		}
	}
	return nil
}
