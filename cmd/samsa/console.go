package main

import (
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/console"
	"github.com/samsa-io/samsa/internal/server"
)

// startServerConsole mounts the web console on the node's http.listeners,
// as a client of this node connected the way its registry is
// (registryClientOpts). Without http.listeners there is no console; a
// console that cannot connect is logged, and the node runs without it.
func startServerConsole(cfg *config.Config, srv *server.Server, logger *slog.Logger) (stop func()) {
	if srv.HTTPAddr() == "" || !cfg.HasRole("broker") {
		return func() {}
	}
	opts, err := registryClientOpts(cfg, srv)
	if err != nil {
		logger.Warn("console not started: it cannot connect to this node", "err", err)
		return func() {}
	}
	c, err := console.New(console.Config{ClientOpts: append(opts, kgo.ClientID("samsa-console")), Logger: logger})
	if err != nil {
		logger.Warn("console not started", "err", err)
		return func() {}
	}
	srv.SetConsole(c.Handler())
	logger.Info("serving the web console", "url", "http://"+srv.HTTPAddr()+"/")
	return c.Close
}
