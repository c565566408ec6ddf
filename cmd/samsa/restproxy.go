package main

// `samsa rest-proxy` runs the REST Proxy alone, as a client of a cluster;
// `samsa server` runs the same proxy beside the broker when
// rest.proxy.listeners is set (startServerRestProxy).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/registry"
	"github.com/samsa-io/samsa/internal/restproxy"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/server"
)

func runRestProxy(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlagSet("rest-proxy", "--bootstrap host:port --listen http://host:port", stderr)
	var cf clientFlags
	cf.register(fs)
	listen := fs.String("listen", "http://127.0.0.1:8082", "comma-separated `http://host:port` or https://host:port endpoints to serve the REST Proxy on")
	registryURL := fs.String("schema-registry-url", "", "Schema Registry `URL` for the avro, jsonschema and protobuf embedded formats (Confluent's schema.registry.url); empty refuses their data")
	registryUser := fs.String("schema-registry-user-info", "", "`user:password` of the Schema Registry's basic authentication (Confluent's schema.registry.basic.auth.user.info)")
	registryCA := fs.String("schema-registry-ca", "", "PEM `file` of the CA certificates trusted for an https Schema Registry (default: the system's roots)")
	idle := fs.Duration("consumer-instance-timeout", restproxy.DefaultConsumerInstanceTimeout, "close a v2 consumer instance after this long without a request (Confluent's consumer.instance.timeout.ms)")
	httpsCert := fs.String("https-cert", "", "PEM `file` of the certificate chain the https:// listeners serve (with --https-key)")
	httpsKey := fs.String("https-key", "", "PEM `file` of the private key of --https-cert")
	usersFile := fs.String("users-file", "", "require HTTP basic authentication of the users in this `file`: one `name: password[,role ...]` a line, as Confluent's PropertyFileLoginModule reads")
	realm := fs.String("realm", restproxy.DefaultRealm, "`realm` of the basic authentication challenge")
	roles := fs.String("roles", "*", "comma-separated `roles` a user must hold one of; * allows any")
	propagate := fs.String("propagate-principal", "", "principal propagation: each user of --users-file reaches the cluster as itself, logging in with SASL `mechanism` ("+strings.Join(saslMechanisms, ", ")+") and its own name and password (instead of --sasl-*)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	configFile := fs.String("config", "", "Confluent REST Proxy properties `file` (kafka-rest.properties: bootstrap.servers, listeners, ssl.*, authentication.*, client.*, schema.registry.*, consumer.instance.timeout.ms, confluent.rest.auth.propagate.method); flags win over it")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	level := new(slog.LevelVar)
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "samsa rest-proxy: invalid --log-level %q\n", *logLevel)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	var file *restProxyFile
	if *configFile != "" {
		var err error
		if file, err = readRestProxyFile(*configFile); err == nil {
			err = file.apply(fs)
		}
		if err != nil {
			fmt.Fprintf(stderr, "samsa rest-proxy: %v\n", err)
			return exitUsage
		}
		if len(file.ignored) > 0 {
			logger.Warn("rest proxy: keys of the config file not used", "keys", strings.Join(file.ignored, ","))
		}
	}
	opts, err := restProxyClientOpts(fs, &cf, file)
	if err != nil {
		fmt.Fprintf(stderr, "samsa rest-proxy: %v\n", err)
		return exitUsage
	}
	var listeners []config.RegistryListener
	for l := range strings.SplitSeq(*listen, ",") {
		rl, err := config.ParseRegistryListener(l)
		if err != nil {
			fmt.Fprintf(stderr, "samsa rest-proxy: --listen %v\n", err)
			return exitUsage
		}
		listeners = append(listeners, rl)
	}
	pcfg := restproxy.Config{ClientOpts: opts, SchemaRegistryURL: *registryURL, ConsumerInstanceTimeout: *idle, Logger: logger}
	if pcfg.SchemaRegistryOpts, err = registryClientFlags(*registryUser, *registryCA); err != nil {
		fmt.Fprintf(stderr, "samsa rest-proxy: %v\n", err)
		return exitUsage
	}
	serverTLS, err := restProxyFlagsTLS(listeners, *httpsCert, *httpsKey)
	if err != nil && *httpsCert == "" && file != nil && file.listenerTLS != nil {
		var ts *security.TLSServer
		if ts, err = security.NewTLSServer(*file.listenerTLS); err == nil {
			serverTLS = ts.Config()
		} else {
			err = fmt.Errorf("--config: ssl.*: %w", err)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "samsa rest-proxy: %v\n", err)
		return exitUsage
	}
	if *usersFile != "" {
		if pcfg.Auth, err = restProxyUsers(*usersFile, *realm, splitList(*roles)); err != nil {
			fmt.Fprintf(stderr, "samsa rest-proxy: --users-file: %v\n", err)
			return exitUsage
		}
	}
	if *propagate != "" {
		if pcfg.Auth == nil || cf.security.mechanism != "" {
			fmt.Fprintln(stderr, "samsa rest-proxy: --propagate-principal needs --users-file, and replaces --sasl-mechanism")
			return exitUsage
		}
		if pcfg.UserClientOpts, err = userLogin(*propagate); err != nil {
			fmt.Fprintf(stderr, "samsa rest-proxy: --propagate-principal: %v\n", err)
			return exitUsage
		}
	}
	ctx, stop := signalContext()
	defer stop()
	closeProxy, err := serveRestProxy(listeners, serverTLS, pcfg)
	if err != nil {
		fmt.Fprintf(stderr, "samsa rest-proxy: %v\n", err)
		return exitFail
	}
	<-ctx.Done()
	logger.Info("shutting down", "cause", context.Cause(ctx).Error())
	closeProxy()
	return exitOK
}

// restProxyClientOpts are the cluster client options of `samsa
// rest-proxy`: the connection flags, or when none of their security flags
// is given, the client.* keys of its --config file.
func restProxyClientOpts(fs *flag.FlagSet, cf *clientFlags, file *restProxyFile) ([]kgo.Opt, error) {
	flagged := false
	fs.Visit(func(f *flag.Flag) {
		flagged = flagged || strings.HasPrefix(f.Name, "sasl-") || strings.HasPrefix(f.Name, "tls") ||
			f.Name == "command-config" || f.Name == "user" || f.Name == "password"
	})
	if file == nil || file.client == nil || flagged {
		return cf.clientOpts()
	}
	seeds := cf.seeds()
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap is empty")
	}
	sec, err := file.client.opts(cf.timeout)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("samsa-rest-proxy")}
	if !file.client.useTLS {
		opts = append(opts, kgo.DialTimeout(cf.timeout))
	}
	return append(opts, sec...), nil
}

// registryClientFlags are the registry client options of
// --schema-registry-user-info and --schema-registry-ca.
func registryClientFlags(userInfo, caFile string) ([]sr.ClientOpt, error) {
	var opts []sr.ClientOpt
	if userInfo != "" {
		user, pass, ok := strings.Cut(userInfo, ":")
		if !ok {
			return nil, errors.New("--schema-registry-user-info wants user:password")
		}
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		pool := x509.NewCertPool()
		if err == nil && !pool.AppendCertsFromPEM(pem) {
			err = errors.New("no PEM certificate in it")
		}
		if err != nil {
			return nil, fmt.Errorf("--schema-registry-ca: %w", err)
		}
		opts = append(opts, sr.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	return opts, nil
}

// restProxyFlagsTLS is the TLS of `samsa rest-proxy`'s https listeners,
// from --https-cert and --https-key; nil without https listeners.
func restProxyFlagsTLS(listeners []config.RegistryListener, cert, key string) (*tls.Config, error) {
	if (cert == "") != (key == "") {
		return nil, errors.New("--https-cert and --https-key go together")
	}
	if !slices.ContainsFunc(listeners, func(l config.RegistryListener) bool { return l.TLS }) {
		return nil, nil
	}
	if cert == "" {
		return nil, errors.New("an https:// listener needs --https-cert and --https-key")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("--https-cert/--https-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// restProxyUsers reads a users file (the registry's format, read by its
// LoadUsers) into the proxy's basic authentication.
func restProxyUsers(path, realm string, roles []string) (*restproxy.BasicAuth, error) {
	users, err := registry.LoadUsers(path)
	if err != nil {
		return nil, err
	}
	a := &restproxy.BasicAuth{Realm: realm, Roles: roles, Users: map[string]restproxy.User{}}
	for name, u := range users {
		a.Users[name] = restproxy.User{Password: u.Password, Roles: u.Roles}
	}
	return a, nil
}

// userLogin is the login of principal propagation: SASL mechanism with
// each user's own name and password.
func userLogin(mechanism string) (func(user, password string) []kgo.Opt, error) {
	m := strings.ToUpper(strings.TrimSpace(mechanism))
	if _, err := saslLogin(m, "u", "p"); err != nil {
		return nil, err
	}
	return func(user, password string) []kgo.Opt {
		login, _ := saslLogin(m, user, password)
		return []kgo.Opt{kgo.SASL(login)}
	}, nil
}

// saslLogin is a franz-go SASL login of user with mechanism.
func saslLogin(mechanism, user, password string) (sasl.Mechanism, error) {
	switch mechanism {
	case security.MechanismPlain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case security.MechanismScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case security.MechanismScramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q: want %s", mechanism, strings.Join(saslMechanisms, ", "))
}

// serveRestProxy binds every listener and serves one proxy on them (https
// ones with serverTLS); it returns the function that stops it. The proxy
// connects to the cluster at its first request.
func serveRestProxy(listeners []config.RegistryListener, serverTLS *tls.Config, cfg restproxy.Config) (stop func(), err error) {
	var lns []net.Listener
	for _, l := range listeners {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("rest proxy: %w", err)
		}
		if l.TLS {
			ln = tls.NewListener(ln, serverTLS)
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
	for i, ln := range lns {
		s := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 30 * time.Second}
		servers = append(servers, s)
		go func() {
			defer func() { done <- struct{}{} }()
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cfg.Logger.Error("rest proxy", "listener", ln.Addr().String(), "err", err)
			}
		}()
		bound := config.RegistryListener{Addr: ln.Addr().String(), TLS: listeners[i].TLS}
		cfg.Logger.Info("rest proxy listening", "listener", bound.URL())
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

// serverRegistry is the registry `samsa server` runs, for the proxy's
// schema formats (avro, jsonschema, protobuf): its first http listener,
// else its first https one, unless that has a kernel-chosen port. An https one is reached with the
// registry's own TLS settings (schema.registry.ssl.*, whose trust store
// must hold its certificate's CA); one asking for basic authentication
// with rest.proxy.schema.registry.basic.auth.user.info. Without them the
// proxy runs without a registry ("").
func serverRegistry(cfg *config.Config) (string, []sr.ClientOpt) {
	listeners, err := cfg.SchemaRegistryListeners()
	if err != nil || len(listeners) == 0 {
		return "", nil
	}
	var opts []sr.ClientOpt
	if method, _, _, _ := cfg.SchemaRegistryAuth(); method != "NONE" {
		user, pass, ok := strings.Cut(cfg.RestProxyRegistryUserInfo(), ":")
		if !ok {
			return "", nil
		}
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	l := listeners[0]
	if i := slices.IndexFunc(listeners, func(l config.RegistryListener) bool { return !l.TLS }); i >= 0 {
		l = listeners[i]
	}
	host, port, _ := net.SplitHostPort(l.Addr)
	if port == "0" {
		return "", nil
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	if l.TLS {
		_, client, err := registryTLS(cfg)
		if err != nil {
			return "", nil
		}
		opts = append(opts, sr.HTTPClient(client))
	}
	return config.RegistryListener{Addr: net.JoinHostPort(host, port), TLS: l.TLS}.URL(), opts
}

// startServerRestProxy starts the REST Proxy of `samsa server` when
// rest.proxy.listeners is set: https listeners with rest.proxy.ssl.*
// (over ssl.*), basic authentication and principal propagation with
// rest.proxy.authentication.* and
// rest.proxy.confluent.rest.auth.propagate.method, and a client of this
// node (restProxyNodeOpts). A port that is taken is fatal when the user
// set the key; when it comes from the embedded defaults the node runs
// without a proxy and says so.
func startServerRestProxy(cfg *config.Config, srv *server.Server, fromDefaults bool, logger *slog.Logger) (stop func(), err error) {
	listeners, err := cfg.RestProxyListeners()
	if err != nil || len(listeners) == 0 {
		return func() {}, err
	}
	pcfg := restproxy.Config{Logger: logger}
	pcfg.SchemaRegistryURL, pcfg.SchemaRegistryOpts = serverRegistry(cfg)
	var serverTLS *tls.Config
	if slices.ContainsFunc(listeners, func(l config.RegistryListener) bool { return l.TLS }) {
		settings, err := server.TLSSettings(cfg.RestProxySSL())
		if err != nil {
			return nil, fmt.Errorf("rest proxy https listener: %w", err)
		}
		ts, err := security.NewTLSServer(settings)
		if err != nil {
			return nil, fmt.Errorf("rest proxy https listener: %w", err)
		}
		serverTLS = ts.Config()
	}
	method, realm, roles, usersFile, propagate := cfg.RestProxyAuth()
	if method == "BASIC" {
		if usersFile == "" {
			return nil, errors.New("rest.proxy.authentication.method=BASIC needs rest.proxy.authentication.users.file")
		}
		if pcfg.Auth, err = restProxyUsers(usersFile, realm, roles); err != nil {
			return nil, fmt.Errorf("rest.proxy.authentication.users.file: %w", err)
		}
	} else if propagate {
		return nil, errors.New("rest.proxy.confluent.rest.auth.propagate.method=JETTY_AUTH needs rest.proxy.authentication.method=BASIC")
	}
	pcfg.ClientOpts, pcfg.UserClientOpts, err = restProxyNodeOpts(cfg, srv, propagate)
	if err != nil {
		if fromDefaults {
			logger.Warn("rest proxy not started: it cannot connect to this node", "err", err)
			return func() {}, nil
		}
		return nil, fmt.Errorf("rest proxy: connecting to this node: %w", err)
	}
	stop, err = serveRestProxy(listeners, serverTLS, pcfg)
	if err != nil && fromDefaults {
		logger.Warn("rest proxy not started (set rest.proxy.listeners to choose its port, or empty to turn it off)", "err", err)
		return func() {}, nil
	}
	return stop, err
}

// restProxyNodeOpts are the client options of the proxy of `samsa
// server`: a client of this node's first broker listener of
// rest.proxy.client.security.protocol, or when unset of its first
// PLAINTEXT, else SSL, SASL_PLAINTEXT, SASL_SSL listener (only SASL ones
// with propagation), with the listener's TLS settings. On a SASL listener
// the proxy logs in with rest.proxy.client.sasl.* or the node's own
// credentials; with propagation each user logs in as itself instead
// (user).
func restProxyNodeOpts(cfg *config.Config, srv *server.Server, propagate bool) (base []kgo.Opt, user func(string, string) []kgo.Opt, err error) {
	want, mechanism, jaas := cfg.RestProxyKafkaClient()
	rank := map[string]int{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
	listeners := cfg.BrokerListeners()
	slices.SortStableFunc(listeners, func(a, b config.Listener) int {
		return rank[cfg.ListenerSecurityProtocolMap[a.Name]] - rank[cfg.ListenerSecurityProtocolMap[b.Name]]
	})
	for _, l := range listeners {
		protocol := cfg.ListenerSecurityProtocolMap[l.Name]
		sasled := protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL"
		addr := srv.Addr(l.Name)
		if addr == "" || want != "" && protocol != want || propagate && !sasled {
			continue
		}
		base = []kgo.Opt{kgo.SeedBrokers(addr)}
		if protocol == "SSL" || protocol == "SASL_SSL" {
			settings, err := server.TLSSettings(cfg.ListenerSSL(l.Name))
			if err != nil {
				return nil, nil, err
			}
			tc, err := security.NewTLSClient(settings)
			if err != nil {
				return nil, nil, fmt.Errorf("dialing listener %s: %w", l.Name, err)
			}
			base = append(base, kgo.Dialer(tc.DialContext))
		}
		if !sasled {
			return base, nil, nil
		}
		if mechanism == "" {
			if mechanism, err = nodeMechanism(cfg, l.Name, "rest.proxy.client.sasl.mechanism"); err != nil {
				return nil, nil, err
			}
		}
		if propagate {
			user, err = userLogin(mechanism)
			return base, user, err
		}
		login, err := restProxyLogin(cfg, l.Name, mechanism, jaas)
		if err != nil {
			return nil, nil, err
		}
		return append(base, kgo.SASL(login)), nil, nil
	}
	switch {
	case want != "":
		return nil, nil, fmt.Errorf("rest.proxy.client.security.protocol=%s: the node has no such broker listener", want)
	case propagate:
		return nil, nil, errors.New("principal propagation needs a SASL_PLAINTEXT or SASL_SSL broker listener")
	}
	return nil, nil, errors.New("the node has no broker listener")
}

// restProxyLogin is the proxy's own SASL login on a listener:
// rest.proxy.client.sasl.jaas.config, else the node's own credentials of
// the listener and mechanism.
func restProxyLogin(cfg *config.Config, listener, mechanism, jaas string) (sasl.Mechanism, error) {
	user, pass, err := nodeCredentials(cfg, listener, mechanism, jaas, "rest.proxy.client.sasl.jaas.config", "the proxy")
	if err != nil {
		return nil, err
	}
	return saslLogin(mechanism, user, pass)
}
