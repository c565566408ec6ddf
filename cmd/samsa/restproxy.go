package main

// `samsa rest-proxy` runs the REST Proxy alone, as a client of a cluster;
// `samsa server` runs the same proxy beside the broker when
// rest.proxy.listeners is set (startServerRestProxy).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/restproxy"
	"github.com/samsa-io/samsa/internal/server"
)

func runRestProxy(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlagSet("rest-proxy", "--bootstrap host:port --listen http://host:port", stderr)
	var cf clientFlags
	cf.register(fs)
	listen := fs.String("listen", "http://127.0.0.1:8082", "comma-separated `http://host:port` endpoints to serve the REST Proxy on")
	registryURL := fs.String("schema-registry-url", "", "Schema Registry `URL` for the avro, jsonschema and protobuf embedded formats (Confluent's schema.registry.url); empty refuses their data")
	idle := fs.Duration("consumer-instance-timeout", restproxy.DefaultConsumerInstanceTimeout, "close a v2 consumer instance after this long without a request (Confluent's consumer.instance.timeout.ms)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	level := new(slog.LevelVar)
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "samsa rest-proxy: invalid --log-level %q\n", *logLevel)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	opts, err := cf.clientOpts()
	if err != nil {
		fmt.Fprintf(stderr, "samsa rest-proxy: %v\n", err)
		return exitUsage
	}
	var addrs []string
	for l := range strings.SplitSeq(*listen, ",") {
		addr, ok := strings.CutPrefix(strings.TrimSpace(l), "http://")
		if _, _, err := net.SplitHostPort(addr); !ok || err != nil {
			fmt.Fprintf(stderr, "samsa rest-proxy: --listen %q is not http://host:port\n", l)
			return exitUsage
		}
		addrs = append(addrs, addr)
	}
	ctx, stop := signalContext()
	defer stop()
	closeProxy, err := serveRestProxy(addrs, restproxy.Config{ClientOpts: opts, SchemaRegistryURL: *registryURL, ConsumerInstanceTimeout: *idle, Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "samsa rest-proxy: %v\n", err)
		return exitFail
	}
	<-ctx.Done()
	logger.Info("shutting down", "cause", context.Cause(ctx).Error())
	closeProxy()
	return exitOK
}

// serveRestProxy binds every address and serves one proxy on them; it
// returns the function that stops it. The proxy connects to the cluster
// at its first request.
func serveRestProxy(addrs []string, cfg restproxy.Config) (stop func(), err error) {
	var lns []net.Listener
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("rest proxy: %w", err)
		}
		lns = append(lns, ln)
	}
	p, err := restproxy.New(cfg)
	if err != nil {
		for _, l := range lns {
			l.Close()
		}
		return nil, err
	}
	var servers []*http.Server
	done := make(chan struct{}, len(lns))
	for _, ln := range lns {
		s := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 30 * time.Second}
		servers = append(servers, s)
		go func() {
			defer func() { done <- struct{}{} }()
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cfg.Logger.Error("rest proxy", "listener", ln.Addr().String(), "err", err)
			}
		}()
		cfg.Logger.Info("rest proxy listening", "listener", "http://"+ln.Addr().String())
	}
	return func() {
		for _, s := range servers {
			s.Close()
		}
		for range servers {
			<-done
		}
		p.Close()
	}, nil
}

// serverRegistryURL is the URL of the registry `samsa server` runs, for
// the proxy's schema formats (avro, jsonschema, protobuf): its first http
// listener, unless that one has a kernel-chosen port or the registry asks
// for basic authentication, which the proxy has no credentials for (then
// the proxy runs without them).
func serverRegistryURL(cfg *config.Config) string {
	addrs, err := cfg.SchemaRegistryListeners()
	if method, _, _, _ := cfg.SchemaRegistryAuth(); err != nil || method != "NONE" {
		return ""
	}
	for _, l := range addrs {
		if l.TLS {
			continue
		}
		host, port, _ := net.SplitHostPort(l.Addr)
		if port == "0" {
			return ""
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		return "http://" + net.JoinHostPort(host, port)
	}
	return ""
}

// startServerRestProxy starts the REST Proxy of `samsa server` when
// rest.proxy.listeners is set, as a client of this node connected the way
// its registry is (registryClientOpts: PLAINTEXT first, else SSL or SASL
// with the registry's login). A port that is taken is fatal when the user set the key; when
// it comes from the embedded defaults the node runs without a proxy and
// says so.
func startServerRestProxy(cfg *config.Config, srv *server.Server, fromDefaults bool, logger *slog.Logger) (stop func(), err error) {
	addrs, err := cfg.RestProxyListeners()
	if err != nil || len(addrs) == 0 {
		return func() {}, err
	}
	opts, err := registryClientOpts(cfg, srv)
	if err != nil {
		if fromDefaults {
			logger.Warn("rest proxy not started: it cannot connect to this node", "err", err)
			return func() {}, nil
		}
		return nil, fmt.Errorf("rest.proxy.listeners: %w", err)
	}
	stop, err = serveRestProxy(addrs, restproxy.Config{ClientOpts: opts, SchemaRegistryURL: serverRegistryURL(cfg), Logger: logger})
	if err != nil && fromDefaults {
		logger.Warn("rest proxy not started (set rest.proxy.listeners to choose its port, or empty to turn it off)", "err", err)
		return func() {}, nil
	}
	return stop, err
}
