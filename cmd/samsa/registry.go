package main

// `samsa registry` runs the Schema Registry alone, as a client of a
// cluster; `samsa server` runs the same registry beside the broker when
// schema.registry.listeners is set (serveRegistry).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/registry"
	"github.com/samsa-io/samsa/internal/server"
)

func runRegistry(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlagSet("registry", "--bootstrap host:port --listen http://host:port [--topic _schemas]", stderr)
	var cf clientFlags
	cf.register(fs)
	listen := fs.String("listen", "http://127.0.0.1:8081", "comma-separated `http://host:port` endpoints to serve the REST API on")
	topic := fs.String("topic", registry.DefaultTopic, "`topic` that stores the schemas (Confluent's kafkastore.topic)")
	url := fs.String("url", "", "`URL` other registry instances reach this one at, to forward writes to it when it leads (default: the first --listen address; the host name when it binds all interfaces)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	level := new(slog.LevelVar)
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "samsa registry: invalid --log-level %q\n", *logLevel)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	opts, err := cf.clientOpts()
	if err != nil {
		fmt.Fprintf(stderr, "samsa registry: %v\n", err)
		return exitUsage
	}
	var addrs []string
	for l := range strings.SplitSeq(*listen, ",") {
		addr, ok := strings.CutPrefix(strings.TrimSpace(l), "http://")
		if _, _, err := net.SplitHostPort(addr); !ok || err != nil {
			fmt.Fprintf(stderr, "samsa registry: --listen %q is not http://host:port\n", l)
			return exitUsage
		}
		addrs = append(addrs, addr)
	}
	ctx, stop := signalContext()
	defer stop()
	closeRegistry, err := serveRegistry(addrs, registry.Config{ClientOpts: opts, Topic: *topic, URL: *url, Logger: logger}, true)
	if err != nil {
		fmt.Fprintf(stderr, "samsa registry: %v\n", err)
		return exitFail
	}
	<-ctx.Done()
	logger.Info("shutting down", "cause", context.Cause(ctx).Error())
	closeRegistry()
	return exitOK
}

// serveRegistry binds every address and serves one registry on them; it
// returns the function that stops it. The registry joins the leader
// election with the URL of the first address unless cfg.URL is set. With
// eager it connects to the cluster at once; otherwise at the first
// request, so an unused registry neither creates _schemas nor joins a
// group.
func serveRegistry(addrs []string, cfg registry.Config, eager bool) (stop func(), err error) {
	var lns []net.Listener
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("schema registry: %w", err)
		}
		lns = append(lns, ln)
	}
	if cfg.URL == "" {
		cfg.URL = "http://" + reachableAddr(lns[0].Addr().(*net.TCPAddr))
	}
	reg := registry.New(cfg)
	var servers []*http.Server
	done := make(chan struct{}, len(lns))
	for _, ln := range lns {
		s := &http.Server{Handler: reg.Handler(), ReadHeaderTimeout: 30 * time.Second}
		servers = append(servers, s)
		go func() {
			defer func() { done <- struct{}{} }()
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cfg.Logger.Error("schema registry", "listener", ln.Addr().String(), "err", err)
			}
		}()
		cfg.Logger.Info("schema registry listening", "listener", "http://"+ln.Addr().String())
	}
	openCtx, cancelOpen := context.WithCancel(context.Background())
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		if !eager {
			return
		}
		if err := reg.Open(openCtx); err != nil && openCtx.Err() == nil {
			cfg.Logger.Warn("schema registry: connecting to the cluster (tried again at the next request)", "err", err)
		}
	}()
	return func() {
		cancelOpen()
		<-opened
		for _, s := range servers {
			s.Close()
		}
		for range servers {
			<-done
		}
		reg.Close()
	}, nil
}

// reachableAddr is host:port of a bound address as another host can use
// it: the host name instead of an unspecified address.
func reachableAddr(a *net.TCPAddr) string {
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// registryClientOpts are the options of the registry that `samsa
// server` runs: a client of this node's first PLAINTEXT broker listener.
// A node without one runs no registry (connecting with the node's own
// SASL or TLS credentials is not built yet).
func registryClientOpts(cfg *config.Config, srv *server.Server) ([]kgo.Opt, bool) {
	for _, l := range cfg.BrokerListeners() {
		if cfg.ListenerSecurityProtocolMap[l.Name] == "PLAINTEXT" {
			if a := srv.Addr(l.Name); a != "" {
				return []kgo.Opt{kgo.SeedBrokers(a), kgo.ClientID("samsa-schema-registry")}, true
			}
		}
	}
	return nil, false
}

// startServerRegistry starts the registry of `samsa server` when
// schema.registry.listeners is set. A port that is taken is fatal when the
// user set the key; when it comes from the embedded defaults the node runs
// without a registry and says so.
func startServerRegistry(cfg *config.Config, srv *server.Server, fromDefaults bool, logger *slog.Logger) (stop func(), err error) {
	addrs, err := cfg.SchemaRegistryListeners()
	if err != nil || len(addrs) == 0 {
		return func() {}, err
	}
	opts, ok := registryClientOpts(cfg, srv)
	if !ok {
		logger.Warn("schema registry not started: the node has no PLAINTEXT listener to connect to")
		return func() {}, nil
	}
	stop, err = serveRegistry(addrs, registry.Config{ClientOpts: opts, Logger: logger}, !fromDefaults)
	if err != nil && fromDefaults {
		logger.Warn("schema registry not started (set schema.registry.listeners to choose its port, or empty to turn it off)", "err", err)
		return func() {}, nil
	}
	return stop, err
}
