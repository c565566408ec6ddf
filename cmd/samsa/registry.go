package main

// `samsa registry` runs the Schema Registry alone, as a client of a
// cluster; `samsa server` runs the same registry beside the broker when
// schema.registry.listeners is set (serveRegistry).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/registry"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/server"
)

func runRegistry(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlagSet("registry", "--bootstrap host:port --listen http://host:port [--topic _schemas]", stderr)
	var cf clientFlags
	cf.register(fs)
	listen := fs.String("listen", "http://127.0.0.1:8081", "comma-separated `http://host:port` or https://host:port endpoints to serve the REST API on")
	topic := fs.String("topic", registry.DefaultTopic, "`topic` that stores the schemas (Confluent's kafkastore.topic)")
	url := fs.String("url", "", "`URL` other registry instances reach this one at, to forward writes to it when it leads (default: the first --listen address; the host name when it binds all interfaces)")
	httpsCert := fs.String("https-cert", "", "PEM `file` of the certificate chain the https:// listeners serve (with --https-key)")
	httpsKey := fs.String("https-key", "", "PEM `file` of the private key of --https-cert")
	httpsCA := fs.String("https-ca", "", "PEM `file` of the CA certificates trusted when forwarding writes to another instance's https URL (default: the system's roots)")
	usersFile := fs.String("users-file", "", "require HTTP basic authentication of the users in this `file`: one `name: password[,role ...]` a line, as Confluent's PropertyFileLoginModule reads")
	realm := fs.String("realm", registry.DefaultRealm, "`realm` of the basic authentication challenge")
	roles := fs.String("roles", "*", "comma-separated `roles` a user must hold one of; * allows any")
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
	var listeners []config.RegistryListener
	for l := range strings.SplitSeq(*listen, ",") {
		rl, err := config.ParseRegistryListener(l)
		if err != nil {
			fmt.Fprintf(stderr, "samsa registry: --listen %v\n", err)
			return exitUsage
		}
		listeners = append(listeners, rl)
	}
	rcfg := registry.Config{ClientOpts: opts, Topic: *topic, URL: *url, Logger: logger}
	var serverTLS *tls.Config
	if (*httpsCert == "") != (*httpsKey == "") {
		fmt.Fprintln(stderr, "samsa registry: --https-cert and --https-key go together")
		return exitUsage
	}
	if *httpsCert != "" {
		cert, err := tls.LoadX509KeyPair(*httpsCert, *httpsKey)
		if err != nil {
			fmt.Fprintf(stderr, "samsa registry: --https-cert/--https-key: %v\n", err)
			return exitUsage
		}
		serverTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if slices.ContainsFunc(listeners, func(l config.RegistryListener) bool { return l.TLS }) && serverTLS == nil {
		fmt.Fprintln(stderr, "samsa registry: an https:// listener needs --https-cert and --https-key")
		return exitUsage
	}
	if *httpsCA != "" {
		pem, err := os.ReadFile(*httpsCA)
		pool := x509.NewCertPool()
		if err == nil && !pool.AppendCertsFromPEM(pem) {
			err = errors.New("no PEM certificate in it")
		}
		if err != nil {
			fmt.Fprintf(stderr, "samsa registry: --https-ca: %v\n", err)
			return exitUsage
		}
		rcfg.ForwardClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	if *usersFile != "" {
		users, err := registry.LoadUsers(*usersFile)
		if err != nil {
			fmt.Fprintf(stderr, "samsa registry: --users-file: %v\n", err)
			return exitUsage
		}
		rcfg.Auth = &registry.BasicAuth{Realm: *realm, Users: users, Roles: splitList(*roles)}
	}
	ctx, stop := signalContext()
	defer stop()
	closeRegistry, err := serveRegistry(listeners, serverTLS, rcfg, true)
	if err != nil {
		fmt.Fprintf(stderr, "samsa registry: %v\n", err)
		return exitFail
	}
	<-ctx.Done()
	logger.Info("shutting down", "cause", context.Cause(ctx).Error())
	closeRegistry()
	return exitOK
}

// serveRegistry binds every listener and serves one registry on them
// (https ones with serverTLS); it returns the function that stops it. The
// registry joins the leader election with the URL of the first listener
// unless cfg.URL is set. With eager it connects to the cluster at once;
// otherwise at the first request, so an unused registry neither creates
// _schemas nor joins a group.
func serveRegistry(listeners []config.RegistryListener, serverTLS *tls.Config, cfg registry.Config, eager bool) (stop func(), err error) {
	var lns []net.Listener
	for _, l := range listeners {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("schema registry: %w", err)
		}
		if l.TLS {
			ln = tls.NewListener(ln, serverTLS)
		}
		lns = append(lns, ln)
	}
	scheme := func(i int) string { return strings.TrimSuffix(listeners[i].URL(), listeners[i].Addr) }
	if cfg.URL == "" {
		cfg.URL = scheme(0) + reachableAddr(lns[0].Addr().(*net.TCPAddr))
	}
	reg := registry.New(cfg)
	var servers []*http.Server
	done := make(chan struct{}, len(lns))
	for i, ln := range lns {
		s := &http.Server{Handler: reg.Handler(), ReadHeaderTimeout: 30 * time.Second}
		servers = append(servers, s)
		go func() {
			defer func() { done <- struct{}{} }()
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cfg.Logger.Error("schema registry", "listener", ln.Addr().String(), "err", err)
			}
		}()
		cfg.Logger.Info("schema registry listening", "listener", scheme(i)+ln.Addr().String())
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
// server` runs: a client of this node's first PLAINTEXT broker listener,
// or else of its first SSL, SASL_PLAINTEXT or SASL_SSL one, with that
// listener's TLS settings (its trust store, and its key store for mutual
// TLS) and a SASL login (registrySASL). The error says why no listener
// can be used.
func registryClientOpts(cfg *config.Config, srv *server.Server) ([]kgo.Opt, error) {
	listeners := cfg.BrokerListeners()
	rank := map[string]int{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
	slices.SortStableFunc(listeners, func(a, b config.Listener) int {
		return rank[cfg.ListenerSecurityProtocolMap[a.Name]] - rank[cfg.ListenerSecurityProtocolMap[b.Name]]
	})
	for _, l := range listeners {
		addr := srv.Addr(l.Name)
		if addr == "" {
			continue
		}
		protocol := cfg.ListenerSecurityProtocolMap[l.Name]
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("samsa-schema-registry")}
		if protocol == "SSL" || protocol == "SASL_SSL" {
			settings, err := server.TLSSettings(cfg.ListenerSSL(l.Name))
			if err != nil {
				return nil, err
			}
			tc, err := security.NewTLSClient(settings)
			if err != nil {
				return nil, fmt.Errorf("dialing listener %s: %w", l.Name, err)
			}
			opts = append(opts, kgo.Dialer(tc.DialContext))
		}
		if protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" {
			m, err := registrySASL(cfg, l.Name)
			if err != nil {
				return nil, err
			}
			opts = append(opts, kgo.SASL(m))
		}
		return opts, nil
	}
	return nil, errors.New("the node has no broker listener")
}

// registrySASL is the login of the registry's client on a SASL listener:
// schema.registry.kafkastore.sasl.* when set, else the node's own
// credentials there (its inter-broker mechanism if the listener enables
// it, else the first PLAIN or SCRAM mechanism it enables, with the
// username and password of that mechanism's JAAS config).
func registrySASL(cfg *config.Config, listener string) (sasl.Mechanism, error) {
	mechanism, jaas := cfg.SchemaRegistryKafkaLogin()
	if mechanism == "" {
		var err error
		if mechanism, err = nodeMechanism(cfg, listener, "schema.registry.kafkastore.sasl.mechanism"); err != nil {
			return nil, err
		}
	}
	user, pass, err := nodeCredentials(cfg, listener, mechanism, jaas, "schema.registry.kafkastore.sasl.jaas.config", "the registry")
	if err != nil {
		return nil, err
	}
	m, err := saslLogin(mechanism, user, pass)
	if err != nil {
		return nil, fmt.Errorf("schema.registry.kafkastore.sasl.mechanism=%s: want %s", mechanism, strings.Join(saslMechanisms, ", "))
	}
	return m, nil
}

// startServerRegistry starts the registry of `samsa server` when
// schema.registry.listeners is set. A port that is taken is fatal when the
// user set the key; when it comes from the embedded defaults the node runs
// without a registry and says so.
func startServerRegistry(cfg *config.Config, srv *server.Server, fromDefaults bool, logger *slog.Logger) (stop func(), err error) {
	listeners, err := cfg.SchemaRegistryListeners()
	if err != nil || len(listeners) == 0 {
		return func() {}, err
	}
	rcfg := registry.Config{Logger: logger}
	var serverTLS *tls.Config
	if slices.ContainsFunc(listeners, func(l config.RegistryListener) bool { return l.TLS }) {
		if serverTLS, rcfg.ForwardClient, err = registryTLS(cfg); err != nil {
			return nil, err
		}
	}
	if rcfg.Auth, err = registryAuth(cfg); err != nil {
		return nil, err
	}
	opts, err := registryClientOpts(cfg, srv)
	if err != nil && fromDefaults {
		logger.Warn("schema registry not started: it cannot connect to this node", "err", err)
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schema registry: connecting to this node: %w", err)
	}
	rcfg.ClientOpts = opts
	stop, err = serveRegistry(listeners, serverTLS, rcfg, !fromDefaults)
	if err != nil && fromDefaults {
		logger.Warn("schema registry not started (set schema.registry.listeners to choose its port, or empty to turn it off)", "err", err)
		return func() {}, nil
	}
	return stop, err
}

// registryTLS is the TLS of the registry's https listeners and of the
// client forwarding writes to other instances' https URLs, from the
// schema.registry.ssl.* keys (over ssl.*).
func registryTLS(cfg *config.Config) (*tls.Config, *http.Client, error) {
	settings, err := server.TLSSettings(cfg.SchemaRegistrySSL())
	if err != nil {
		return nil, nil, fmt.Errorf("schema registry https listener: %w", err)
	}
	ts, err := security.NewTLSServer(settings)
	if err != nil {
		return nil, nil, fmt.Errorf("schema registry https listener: %w", err)
	}
	settings.ClientAuth = ""
	tc, err := security.NewTLSClient(settings)
	if err != nil {
		return nil, nil, fmt.Errorf("schema registry https listener: %w", err)
	}
	forward := &http.Client{Transport: &http.Transport{DialTLSContext: tc.DialContext}}
	return ts.Config(), forward, nil
}

// registryAuth is the basic authentication the schema.registry.authentication.*
// keys ask for, nil for NONE.
func registryAuth(cfg *config.Config) (*registry.BasicAuth, error) {
	method, realm, roles, usersFile := cfg.SchemaRegistryAuth()
	if method != "BASIC" {
		return nil, nil
	}
	if usersFile == "" {
		return nil, errors.New("schema.registry.authentication.method=BASIC needs schema.registry.authentication.users.file")
	}
	users, err := registry.LoadUsers(usersFile)
	if err != nil {
		return nil, fmt.Errorf("schema.registry.authentication.users.file: %w", err)
	}
	return &registry.BasicAuth{Realm: realm, Users: users, Roles: roles}, nil
}
