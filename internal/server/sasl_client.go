package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/security"
)

// SASL between Samsa's own nodes, the client side: when the inter-broker
// or the controller listener is SASL_PLAINTEXT or SASL_SSL, every
// connection this node dials to it authenticates with the mechanism of
// sasl.mechanism.inter.broker.protocol or sasl.mechanism.controller.protocol,
// as the user named by the username and password options of that
// listener's and mechanism's JAAS config
// (listener.name.<l>.<mechanism>.sasl.jaas.config), which is where
// Kafka's brokers take their own client credentials from.

// saslClient is how this node logs in to other nodes' SASL listener.
type saslClient struct {
	listener  string
	mechanism string
	user      string
	// jaasKey names the key the credentials came from, for errors.
	jaasKey string
	newMech func() sasl.Mechanism
}

// newSASLClient builds the client credentials for dialing listener, nil
// when it is not a SASL listener. mechKey is the key that chose
// mechanism. Anything Samsa cannot honour fails, naming the key.
func newSASLClient(cfg *config.Config, listener, mechKey, mechanism string, controller bool) (*saslClient, error) {
	if !isSASL(cfg.ListenerSecurityProtocolMap[listener]) {
		return nil, nil
	}
	role := "inter-broker listener " + listener + " (inter.broker.listener.name)"
	if controller {
		role = "controller listener " + listener + " (controller.listener.names)"
	}
	switch mechanism {
	case security.MechanismPlain, security.MechanismScramSHA256, security.MechanismScramSHA512:
	default:
		return nil, fmt.Errorf("%s uses %s, so this node authenticates to it with %s=%s, which Samsa does not support: set %s to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
			role, cfg.ListenerSecurityProtocolMap[listener], mechKey, mechanism, mechKey)
	}
	if controller && mechanism != security.MechanismPlain {
		// The controllers must reach each other before the metadata log,
		// where SCRAM credentials live, can be read: Kafka supports SCRAM
		// on broker listeners only (KAFKA-15513).
		return nil, fmt.Errorf("%s=%s: SCRAM cannot authenticate on the controller listener, whose quorum must form before the SCRAM credentials in the metadata log can be read (as in Kafka, KAFKA-15513): use PLAIN for the controller listener",
			mechKey, mechanism)
	}
	if slices.ContainsFunc(cfg.Listeners, func(l config.Listener) bool { return l.Name == listener }) {
		// Kafka's rule: the mechanism this node dials with must be one
		// its own listener accepts.
		l, err := cfg.SASLListener(listener)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(l.Mechanisms, mechanism) {
			return nil, fmt.Errorf("%s=%s must be enabled on %s: add it to %s (now %s)", mechKey, mechanism, role, l.MechanismsKey, strings.Join(l.Mechanisms, ","))
		}
	}
	key := config.JAASKey(listener, mechanism)
	jaas, ok := cfg.ListenerJAAS(listener, mechanism)
	if !ok {
		return nil, fmt.Errorf("%s uses SASL %s (%s), so this node needs its own credentials in %s: set its username and password options", role, mechanism, mechKey, key)
	}
	module := security.ScramLoginModule
	if mechanism == security.MechanismPlain {
		module = security.PlainLoginModule
	}
	m, err := security.ParseJAASModule(jaas, module)
	if err != nil {
		return nil, fmt.Errorf("invalid %s: %w", key, err)
	}
	user, hasUser := m.Options["username"]
	pass, hasPass := m.Options["password"]
	if !hasUser || !hasPass || user == "" {
		return nil, fmt.Errorf("%s has no username and password options: this node authenticates to the %s with them", key, role)
	}
	c := &saslClient{listener: listener, mechanism: mechanism, user: user, jaasKey: key}
	switch mechanism {
	case security.MechanismPlain:
		c.newMech = func() sasl.Mechanism { return plain.Auth{User: user, Pass: pass}.AsMechanism() }
	case security.MechanismScramSHA256:
		c.newMech = func() sasl.Mechanism { return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism() }
	case security.MechanismScramSHA512:
		c.newMech = func() sasl.Mechanism { return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism() }
	}
	return c, nil
}

// hint says which credentials were used, so the log of a node whose
// login is refused says what to fix.
func (c *saslClient) hint() string {
	return fmt.Sprintf("this node logs in to listener %s as %q with %s: check %s", c.listener, c.user, c.mechanism, c.jaasKey)
}

// explain adds the hint to a refused login.
func (c *saslClient) explain(err error) error {
	if c == nil || !errors.Is(err, kclient.ErrAuthentication) {
		return err
	}
	return fmt.Errorf("%w (%s)", err, c.hint())
}

// interNodeDialer dials another node's listener: TLS when tc is set, then
// SASL when sc is.
type interNodeDialer struct {
	tc *security.TLSClient
	sc *saslClient
}

// plain reports whether the dialer is plain TCP, the inter-node
// clients' default.
func (d interNodeDialer) plain() bool { return d.tc == nil && d.sc == nil }

// kclient is the dialer of Kafka-protocol connections.
func (d interNodeDialer) kclient() kclient.Dialer {
	out := dialer(d.tc)
	if d.sc != nil {
		out.SASL, out.SASLHint = d.sc.newMech, d.sc.hint()
	}
	return out
}

// dial connects with kclient.
func (d interNodeDialer) dial(ctx context.Context, addr, clientID string) (*kclient.Conn, error) {
	return d.kclient().Dial(ctx, addr, clientID)
}

// raw is the dial of the raft transport: the connection is
// authenticated before the transport's own hello (splitListener runs the
// server side before it tells the protocols apart).
func (d interNodeDialer) raw() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.sc == nil {
		return rawDial(d.tc)
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var nc net.Conn
		var err error
		if d.tc != nil {
			nc, err = d.tc.DialContext(ctx, network, addr)
		} else {
			var nd net.Dialer
			nc, err = nd.DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		// The magic first, so the listener knows this is the transport
		// and authenticates it itself (splitListener.authenticateRaft).
		if _, err := nc.Write([]byte(raftMagic)); err != nil {
			nc.Close()
			return nil, err
		}
		if err := kclient.AuthenticateRaw(ctx, nc, d.sc.newMech()); err != nil {
			nc.Close()
			return nil, d.sc.explain(err)
		}
		return nc, nil
	}
}

// dialsOthers reports whether this node dials other nodes' listeners: a
// single combined node is its own quorum and only broker, and never does.
// A controller of a dynamic quorum does unless it is its own only
// bootstrap server.
func dialsOthers(cfg *config.Config) bool {
	return len(cfg.ControllerQuorumVoters) > 1 || !cfg.HasRole("controller") ||
		(len(cfg.ControllerQuorumVoters) == 0 && !bootstrapsItself(cfg))
}

// nodeDialers are how this node dials the others: the inter-broker
// listener (replica fetchers, transaction markers) and the controller
// listener (registration, heartbeats, forwarding, the metadata log, the
// raft transport), each with TLS and SASL as its security protocol says.
type nodeDialers struct {
	interBroker, controller interNodeDialer
}

// newNodeDialers adds the SASL credentials of the inter-broker and
// controller listeners to their TLS clients.
func newNodeDialers(cfg *config.Config, t *nodeTLS) (nodeDialers, error) {
	d := nodeDialers{interBroker: interNodeDialer{tc: t.interBroker}, controller: interNodeDialer{tc: t.controller}}
	if !dialsOthers(cfg) {
		return d, nil
	}
	var err error
	if cfg.HasRole("broker") {
		d.interBroker.sc, err = newSASLClient(cfg, cfg.InterBrokerListenerName, "sasl.mechanism.inter.broker.protocol", cfg.SASLMechanismInterBrokerProtocol, false)
		if err != nil {
			return d, err
		}
	}
	if len(cfg.ControllerListenerNames) > 0 {
		d.controller.sc, err = newSASLClient(cfg, cfg.ControllerListenerNames[0], "sasl.mechanism.controller.protocol", cfg.SASLMechanismControllerProtocol, true)
	}
	return d, err
}
