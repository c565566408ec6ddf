package server

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

// newConnectionQuotas returns the connection quotas the broker's client
// listeners share (network.ConnectionQuotas), with cfg's limits and the
// per-IP connection_creation_rate of the node's client quotas.
func (s *Server) newConnectionQuotas() *network.ConnectionQuotas {
	return network.NewConnectionQuotas(network.ConnectionQuotasConfig{
		Limits:              connectionLimits(s.cfg, s.logger),
		IPRates:             s.quotas,
		InterBrokerListener: s.cfg.InterBrokerListenerName,
		Window:              s.cfg.QuotaWindowSize,
		Samples:             s.cfg.QuotaWindowNum,
	})
}

// connectionLimits is cfg's connection limits for the network layer. The
// host names of max.connections.per.ip.overrides are resolved, as Kafka
// resolves them when the config is set (InetAddress.getByName); one that
// does not resolve is logged and skipped.
func connectionLimits(cfg *config.Config, logger *slog.Logger) network.ConnectionLimits {
	l, err := cfg.ConnectionLimits()
	if err != nil {
		// Validated at start-up and by the controller; a value that
		// fails here applies as far as it parsed.
		logger.Warn("invalid connection limits", "err", err)
	}
	out := network.ConnectionLimits{
		MaxConnections:            l.MaxConnections,
		MaxConnectionsPerIP:       l.MaxConnectionsPerIP,
		MaxConnectionCreationRate: l.MaxConnectionCreationRate,
		PerIPOverrides:            map[netip.Addr]int{},
		Listeners:                 map[string]network.ListenerLimits{},
	}
	for name, ll := range l.Listeners {
		out.Listeners[name] = network.ListenerLimits{MaxConnections: ll.MaxConnections, MaxConnectionCreationRate: ll.MaxConnectionCreationRate}
	}
	for host, n := range l.PerIPOverrides {
		if a, err := netip.ParseAddr(host); err == nil {
			out.PerIPOverrides[a.Unmap()] = n
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		cancel()
		if err != nil {
			logger.Warn("max.connections.per.ip.overrides: host does not resolve; its override is ignored", "host", host, "err", err)
			continue
		}
		for _, a := range addrs {
			out.PerIPOverrides[a.Unmap()] = n
		}
	}
	return out
}

// connectionLimitsPublisher applies dynamic changes of the connection
// limits (AlterConfigs on max.connections, max.connections.per.ip,
// max.connections.per.ip.overrides, max.connection.creation.rate and
// their listener.name.<l>. forms) to the listeners' quotas.
type connectionLimitsPublisher struct {
	static *config.Config
	nodeID int32
	quotas *network.ConnectionQuotas
	logger *slog.Logger
}

// Publish implements metadata.Publisher.
func (p *connectionLimitsPublisher) Publish(d *metadata.Delta, img *metadata.Image) {
	if !brokerConfigsChanged(d, p.nodeID) {
		return
	}
	eff, err := p.static.WithDynamic(img.Configs(metadata.ResourceBroker, config.BrokerResourceName(p.nodeID)), img.Configs(metadata.ResourceBroker, ""))
	if err != nil {
		p.logger.Warn("ignoring invalid dynamic broker configs", "err", err)
	}
	p.quotas.SetLimits(connectionLimits(eff, p.logger))
}

// brokerConfigsChanged reports whether d touched the dynamic configs of
// node nodeID or the cluster defaults (every change, for a full delta).
func brokerConfigsChanged(d *metadata.Delta, nodeID int32) bool {
	if d.Full {
		return true
	}
	self := config.BrokerResourceName(nodeID)
	return slices.ContainsFunc(d.ChangedConfigs, func(c metadata.ConfigResource) bool {
		return c.Type == metadata.ResourceBroker && (c.Name == "" || c.Name == self)
	})
}
