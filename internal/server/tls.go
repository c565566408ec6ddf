package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/security"
)

// nodeTLS is the TLS of a node: the material of each of its SSL and
// SASL_SSL listeners, and the clients it dials other nodes' SSL listeners with —
// the inter-broker listener (replica fetchers, transaction markers) and
// the controller listener (registration, heartbeats, forwarding, the
// metadata log, the raft transport). Each is built from that listener's
// ssl.* settings (listener.name.<l>.ssl.* over ssl.*), as Kafka builds
// its server and client channels.
type nodeTLS struct {
	servers     map[string]*security.TLSServer // by listener name
	interBroker *security.TLSClient            // nil: the inter-broker listener is not SSL or SASL_SSL
	controller  *security.TLSClient            // nil: the controller listener is not SSL or SASL_SSL
}

// newNodeTLS loads every store the node's SSL listeners need. Any
// missing or invalid material stops start-up with an error naming the
// key: an SSL listener is never served without TLS.
func newNodeTLS(cfg *config.Config) (*nodeTLS, error) {
	n := &nodeTLS{servers: map[string]*security.TLSServer{}}
	for _, l := range cfg.Listeners {
		p := cfg.ListenerSecurityProtocolMap[l.Name]
		if p != "SSL" && p != "SASL_SSL" {
			continue
		}
		st, err := tlsSettings(cfg.ListenerSSL(l.Name))
		if err == nil {
			n.servers[l.Name], err = security.NewTLSServer(st)
		}
		if err != nil {
			return nil, fmt.Errorf("%s listener %s: %w", p, l.Name, err)
		}
	}
	var err error
	if cfg.HasRole("broker") {
		if n.interBroker, err = tlsClient(cfg, cfg.InterBrokerListenerName); err != nil {
			return nil, err
		}
	}
	if len(cfg.ControllerListenerNames) > 0 {
		if n.controller, err = tlsClient(cfg, cfg.ControllerListenerNames[0]); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// tlsClient is the client for dialing other nodes' listener name, nil
// when it is not an SSL or SASL_SSL listener.
func tlsClient(cfg *config.Config, listener string) (*security.TLSClient, error) {
	if p := cfg.ListenerSecurityProtocolMap[listener]; p != "SSL" && p != "SASL_SSL" {
		return nil, nil
	}
	st, err := tlsSettings(cfg.ListenerSSL(listener))
	if err != nil {
		return nil, fmt.Errorf("dialing SSL listener %s of other nodes: %w", listener, err)
	}
	c, err := security.NewTLSClient(st)
	if err != nil {
		return nil, fmt.Errorf("dialing SSL listener %s of other nodes: %w", listener, err)
	}
	return c, nil
}

// TLSSettings maps an ssl.* configuration onto the security package's
// settings (the Schema Registry's https listeners use it too).
func TLSSettings(s config.SSL) (security.TLSSettings, error) { return tlsSettings(s) }

// tlsSettings maps a listener's ssl.* configuration onto the security
// package's settings, refusing the Java plug-ins Samsa cannot load.
func tlsSettings(s config.SSL) (security.TLSSettings, error) {
	if s.Provider != "" {
		return security.TLSSettings{}, fmt.Errorf("%s=%s: Samsa uses Go's TLS and cannot load a Java security provider; remove the key", s.KeyName("ssl.provider"), s.Provider)
	}
	if s.EngineFactoryClass != "" {
		return security.TLSSettings{}, fmt.Errorf("%s=%s: Samsa cannot load Java classes; remove the key", s.KeyName("ssl.engine.factory.class"), s.EngineFactoryClass)
	}
	return security.TLSSettings{
		KeystoreType: s.KeystoreType, KeystoreLocation: s.KeystoreLocation, KeystorePassword: s.KeystorePassword,
		KeyPassword: s.KeyPassword, KeystoreKey: s.KeystoreKey, KeystoreCertificateChain: s.KeystoreCertificateChain,
		TruststoreType: s.TruststoreType, TruststoreLocation: s.TruststoreLocation, TruststorePassword: s.TruststorePassword,
		TruststoreCertificates: s.TruststoreCertificates,
		ClientAuth:             s.ClientAuth, Protocol: s.Protocol, EnabledProtocols: s.EnabledProtocols, CipherSuites: s.CipherSuites,
		EndpointIdentificationAlgorithm: s.EndpointIdentificationAlgorithm,
		PrincipalMappingRules:           s.PrincipalMappingRules,
		AllowDNChanges:                  s.AllowDNChanges, AllowSANChanges: s.AllowSANChanges,
		KeyName: s.KeyName,
	}, nil
}

// dialer is the kclient dialer for a listener's client (plain TCP when
// c is nil).
func dialer(c *security.TLSClient) kclient.Dialer {
	if c == nil {
		return kclient.Dialer{}
	}
	return kclient.Dialer{TLS: c.Config}
}

// rawDial is a net dial through c, plain TCP when c is nil.
func rawDial(c *security.TLSClient) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if c == nil {
		return nil
	}
	return c.DialContext
}

// tlsReloader applies dynamic changes of listener ssl.* keys (Kafka's
// AlterConfigs on listener.name.<l>.ssl.keystore.location and friends):
// whenever this broker's dynamic configs (or the cluster defaults)
// change, each SSL listener's settings are resolved again and its
// material rebuilt if they or its store files changed (a file rewritten
// in place is picked up too, as Kafka's reload does). The clients of the
// inter-broker and controller listeners follow the same way. A reload
// that fails is logged and the listener keeps serving what it had.
type tlsReloader struct {
	static *config.Config
	nodeID int32
	tls    *nodeTLS
	logger *slog.Logger
}

// Publish implements metadata.Publisher.
func (r *tlsReloader) Publish(d *metadata.Delta, img *metadata.Image) {
	if !brokerConfigsChanged(d, r.nodeID) {
		return
	}
	eff, err := r.static.WithDynamic(img.Configs(metadata.ResourceBroker, config.BrokerResourceName(r.nodeID)), img.Configs(metadata.ResourceBroker, ""))
	if err != nil {
		r.logger.Warn("ignoring invalid dynamic broker configs", "err", err)
	}
	names := make([]string, 0, len(r.tls.servers))
	for name := range r.tls.servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		st, err := tlsSettings(eff.ListenerSSL(name))
		var reloaded bool
		if err == nil {
			reloaded, err = r.tls.servers[name].Reload(st)
		}
		r.report(name, "listener", reloaded, err)
	}
	for _, c := range []struct {
		listener string
		client   *security.TLSClient
	}{{eff.InterBrokerListenerName, r.tls.interBroker}, {firstOr(eff.ControllerListenerNames), r.tls.controller}} {
		if c.client == nil {
			continue
		}
		st, err := tlsSettings(eff.ListenerSSL(c.listener))
		var reloaded bool
		if err == nil {
			reloaded, err = c.client.Reload(st)
		}
		r.report(c.listener, "client of listener", reloaded, err)
	}
}

func (r *tlsReloader) report(listener, what string, reloaded bool, err error) {
	switch {
	case err != nil:
		r.logger.Error("TLS reload failed; keeping the current key and trust stores", "listener", listener, "of", what, "err", err)
	case reloaded:
		r.logger.Info("TLS key and trust stores reloaded", "listener", listener, "of", what)
	}
}

func firstOr(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
