package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/httpapi"
	"github.com/samsa-io/samsa/internal/httpauth"
	"github.com/samsa-io/samsa/internal/metrics"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/security"
)

// probe is what /readyz reads of the node, published by the parts as
// they start (the HTTP listener's goroutines read it while Start runs).
type probe struct {
	raft     *raft.Node       // a voter's quorum
	replicas *replica.Manager // a broker's partitions
	ready    bool             // every part started
}

// startHTTP serves http.listeners (internal/httpapi) from the start of
// the node on, so that /readyz answers 503 while it starts; the metrics
// the other parts count exist only then. A taken port fails the start,
// except for the default endpoint of `samsa server` without a config
// file (config.HTTPDefault), where the node runs without it and says so.
func (s *Server) startHTTP(context.Context) error {
	listeners, err := s.cfg.HTTPListeners()
	if err != nil || len(listeners) == 0 {
		return err
	}
	hcfg := httpapi.Config{Listeners: listeners, Ready: s.readiness, Logger: s.logger}
	if slices.ContainsFunc(listeners, func(l config.RegistryListener) bool { return l.TLS }) {
		if hcfg.TLS, err = httpTLS(s.cfg); err != nil {
			return err
		}
	}
	if hcfg.Auth, err = httpAuth(s.cfg); err != nil {
		return err
	}
	reg := metrics.New()
	hcfg.Metrics = reg.Handler()
	srv, err := httpapi.Listen(hcfg)
	if err != nil && s.cfg.HTTPDefault {
		s.logger.Warn("serving no /metrics, /healthz or /readyz (set http.listeners to choose the port, or empty to turn it off)", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	s.metrics, s.http = reg, srv
	return nil
}

func (s *Server) closeHTTP() error {
	if s.http == nil {
		return nil
	}
	return s.http.Close()
}

// SetConsole mounts the web console on http.listeners; without them it
// does nothing and reports false.
func (s *Server) SetConsole(h http.Handler) bool {
	if s.http == nil {
		return false
	}
	s.http.SetConsole(h)
	return true
}

// HTTPAddr is the bound address of the first endpoint of http.listeners,
// "" when none is served.
func (s *Server) HTTPAddr() string {
	if s.http == nil {
		return ""
	}
	return s.http.Addrs()[0].String()
}

// httpTLS is the TLS of the https endpoints of http.listeners, from the
// http.ssl.* keys over ssl.*.
func httpTLS(cfg *config.Config) (*tls.Config, error) {
	settings, err := TLSSettings(cfg.HTTPSSL())
	if err != nil {
		return nil, fmt.Errorf("https endpoint of http.listeners: %w", err)
	}
	ts, err := security.NewTLSServer(settings)
	if err != nil {
		return nil, fmt.Errorf("https endpoint of http.listeners: %w", err)
	}
	return ts.Config(), nil
}

// httpAuth is the basic authentication http.authentication.* asks for,
// nil for NONE.
func httpAuth(cfg *config.Config) (*httpauth.BasicAuth, error) {
	method, realm, roles, usersFile := cfg.HTTPAuth()
	if method != "BASIC" {
		return nil, nil
	}
	if usersFile == "" {
		return nil, errors.New("http.authentication.method=BASIC needs http.authentication.users.file")
	}
	users, err := httpauth.LoadUsers(usersFile)
	if err != nil {
		return nil, fmt.Errorf("http.authentication.users.file: %w", err)
	}
	return &httpauth.BasicAuth{Realm: realm, Users: users, Roles: roles}, nil
}

// observeMetrics registers the scrape-time collectors of the parts
// started so far and publishes them to /readyz. It runs once the
// broker (or, on a controller-only node, the controller) exists.
func (s *Server) observeMetrics(context.Context) error {
	p := &probe{raft: s.raft, replicas: s.replicas}
	s.probe.Store(p)
	if s.metrics == nil {
		return nil
	}
	applied := func() uint64 { return s.loader.Image().Offset }
	rc := metrics.NewRaftCollector(nil, nil, applied)
	if s.ctrl != nil {
		if err := s.metrics.Register(metrics.NewControllerCollector(s.loader.Image, s.raft.IsLeader)); err != nil {
			return err
		}
		rc = metrics.NewRaftCollector(s.raft.Leader, s.raft.Term, applied)
	}
	if err := s.metrics.Register(rc); err != nil {
		return err
	}
	if s.broker == nil {
		return nil
	}
	if err := s.metrics.Register(metrics.NewBrokerCollector(metrics.BrokerSource{NodeID: s.cfg.NodeID, Image: s.loader.Image, Replicas: s.replicas})); err != nil {
		return err
	}
	if err := s.metrics.Register(metrics.NewGroupLagCollector(s.groups, s.replicas)); err != nil {
		return err
	}
	return s.loader.Register(s.metrics.Publisher(s.cfg.NodeID))
}

// markReady tells /readyz that every part has started.
func (s *Server) markReady(context.Context) error {
	p := *s.probe.Load()
	p.ready = true
	s.probe.Store(&p)
	return nil
}

// readiness is /readyz: nil when the node serves, else why it does not.
// A controller needs a quorum with a leader; a broker must be registered
// and unfenced in this node's metadata image (which the controller
// unfences only once it has caught up), and not have fenced itself for
// heartbeats the controller left unanswered.
func (s *Server) readiness() error {
	p := s.probe.Load()
	if p == nil {
		return errors.New("starting: recovering the logs and joining the metadata quorum")
	}
	if p.raft != nil && p.raft.Leader() == 0 {
		return errors.New("the metadata quorum has no leader")
	}
	if s.cfg.HasRole("broker") {
		b, ok := s.loader.Image().Broker(s.cfg.NodeID)
		switch {
		case !ok:
			return fmt.Errorf("broker %d is not registered with the controller yet", s.cfg.NodeID)
		case b.Fenced:
			return fmt.Errorf("broker %d is fenced", s.cfg.NodeID)
		case p.replicas != nil && p.replicas.Fenced():
			return fmt.Errorf("broker %d fenced itself: the controller has not answered its heartbeats within broker.session.timeout.ms", s.cfg.NodeID)
		}
	}
	if !p.ready {
		return errors.New("starting")
	}
	return nil
}
