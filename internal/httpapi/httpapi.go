// Package httpapi serves a node's HTTP endpoints on http.listeners:
//
//	/metrics  Prometheus metrics under Kafka's names (internal/metrics)
//	/healthz  200 "ok" while the process runs
//	/readyz   200 "ready" once the node serves; 503 and the reason
//	          (one line of text) before, and whenever it cannot serve
//	/         the web console (internal/console), once Server.SetConsole
//	          mounts it (a broker, once it serves Kafka clients); 404 before
//	          and on nodes without one
//
// Endpoints are http:// or https:// (with the node's http.ssl.* TLS);
// with basic authentication every path but /healthz needs a user of the
// users file, as the Schema Registry's listener does (internal/httpauth).
// The server answers from its own goroutines (one per connection, as
// net/http does) and reads the node only through Config's functions.
package httpapi

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/httpauth"
)

// DefaultRealm is the realm of the basic authentication challenge when
// Auth has none.
const DefaultRealm = "Samsa"

// Config configures a Server.
type Config struct {
	// Listeners are the endpoints to bind; https ones use TLS.
	Listeners []config.RegistryListener
	// TLS is the configuration of the https endpoints; required when
	// one is https.
	TLS *tls.Config
	// Auth, when set, requires basic authentication on every path but
	// /healthz.
	Auth *httpauth.BasicAuth
	// Metrics serves /metrics; nil answers 404 there.
	Metrics http.Handler
	// Ready returns nil when the node is ready, else why not; nil
	// reports ready at once.
	Ready  func() error
	Logger *slog.Logger
}

// Server is a running HTTP listener.
type Server struct {
	console *consoleSlot
	servers []*http.Server
	lns     []net.Listener
	done    chan struct{}
}

// Listen binds every endpoint of cfg and serves them; nothing is left
// bound when it fails.
func Listen(cfg Config) (*Server, error) {
	s := &Server{done: make(chan struct{}, len(cfg.Listeners)), console: &consoleSlot{}}
	for _, l := range cfg.Listeners {
		ln, err := net.Listen("tcp", l.Addr)
		if err == nil && l.TLS && cfg.TLS == nil {
			ln.Close()
			err = errors.New("https endpoint without TLS configuration")
		}
		if err != nil {
			for _, ln := range s.lns {
				ln.Close()
			}
			return nil, fmt.Errorf("http.listeners %s: %w", l.URL(), err)
		}
		if l.TLS {
			ln = tls.NewListener(ln, cfg.TLS)
		}
		s.lns = append(s.lns, ln)
	}
	h := handler(cfg, s.console)
	for i, ln := range s.lns {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
		s.servers = append(s.servers, srv)
		go func() {
			defer func() { s.done <- struct{}{} }()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cfg.Logger.Error("http listener", "listener", ln.Addr().String(), "err", err)
			}
		}()
		scheme := "http://"
		if cfg.Listeners[i].TLS {
			scheme = "https://"
		}
		cfg.Logger.Info("serving /metrics, /healthz, /readyz and the console", "listener", scheme+ln.Addr().String())
	}
	return s, nil
}

// Addrs are the bound addresses, in the order of Config.Listeners.
func (s *Server) Addrs() []net.Addr {
	out := make([]net.Addr, len(s.lns))
	for i, ln := range s.lns {
		out[i] = ln.Addr()
	}
	return out
}

// Close stops serving and waits for the servers to end.
func (s *Server) Close() error {
	var errs []error
	for _, srv := range s.servers {
		errs = append(errs, srv.Close())
	}
	for range s.servers {
		<-s.done
	}
	return errors.Join(errs...)
}

// SetConsole mounts the web console at "/" (the node starts it once its
// Kafka listeners serve, after this listener).
func (s *Server) SetConsole(h http.Handler) { s.console.h.Store(&h) }

// consoleSlot holds the console once it is mounted.
type consoleSlot struct{ h atomic.Pointer[http.Handler] }

func (c *consoleSlot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := c.h.Load()
	if h == nil {
		text(w, http.StatusNotFound, "not found (the web console is served by brokers once they serve Kafka clients)")
		return
	}
	(*h).ServeHTTP(w, r)
}

// Handler is the endpoints of cfg as one handler, without the console.
func Handler(cfg Config) http.Handler { return handler(cfg, nil) }

func handler(cfg Config, console http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusOK, "ok")
	})
	var authed http.Handler = authedMux(cfg, console)
	if a := cfg.Auth; a != nil {
		challenge, next := a.Challenge(DefaultRealm), authed
		authed = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if !a.Allows(req) {
				w.Header().Set("WWW-Authenticate", challenge)
				text(w, http.StatusUnauthorized, "unauthorized")
				return
			}
			next.ServeHTTP(w, req)
		})
	}
	mux.Handle("/", authed)
	return mux
}

// authedMux serves the paths behind authentication.
func authedMux(cfg Config, console http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if cfg.Ready != nil {
			if err := cfg.Ready(); err != nil {
				text(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
				return
			}
		}
		text(w, http.StatusOK, "ready")
	})
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	if console != nil {
		mux.Handle("/", console)
	}
	return mux
}

func text(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	io.WriteString(w, body+"\n")
}
