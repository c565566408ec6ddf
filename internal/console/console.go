// Package console is Samsa's web console: server-rendered HTML pages, served
// from the binary with no build step, for looking at and changing a cluster
// the way Kafka users do in Redpanda Console, kafka-ui or AKHQ. It shows the
// cluster (brokers, controller, partitions under-replicated or offline),
// topics (create, delete, configs, partitions with leader, ISR and offsets),
// a message browser, and consumer groups (members, lag, offset reset).
//
// The console is a franz-go client of the cluster like any other: what it
// shows is what Metadata, ListOffsets, DescribeConfigs, ListGroups and
// OffsetFetch answer, and what it changes goes through CreateTopics,
// DeleteTopics, IncrementalAlterConfigs, Produce and OffsetCommit, so a
// cluster's ACLs apply to its principal. Forms post back to the console;
// a POST whose Origin or Referer names another host is refused, so another
// site cannot drive a logged-in browser to change the cluster.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures a Console.
type Config struct {
	// ClientOpts connect to the cluster (kgo.SeedBrokers and any security
	// options).
	ClientOpts []kgo.Opt
	// Prefix is the path the console is mounted under ("" for the root),
	// used to build its links.
	Prefix string
	Logger *slog.Logger
}

// Console serves the pages.
type Console struct {
	cfg  Config
	cl   *kgo.Client
	adm  *kadm.Client
	mux  *http.ServeMux
	tmpl map[string]*template.Template
}

//go:embed templates/*.html
var templateFS embed.FS

// requestTimeout bounds the cluster requests of one page.
const requestTimeout = 15 * time.Second

// New returns a console for the cluster cfg.ClientOpts reach. It does not
// connect until the first page.
func New(cfg Config) (*Console, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Prefix = strings.TrimSuffix(cfg.Prefix, "/")
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.MetadataMinAge(time.Second)}, cfg.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c := &Console{cfg: cfg, cl: cl, adm: kadm.NewClient(cl), mux: http.NewServeMux(), tmpl: map[string]*template.Template{}}
	funcs := template.FuncMap{"path": c.path, "join": joinInt32s, "since": since}
	for _, page := range []string{"overview", "topics", "topic", "messages", "groups", "group", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			cl.Close()
			return nil, fmt.Errorf("console: template %s: %w", page, err)
		}
		c.tmpl[page] = t
	}
	c.routes()
	return c, nil
}

// Close closes the console's connections to the cluster.
func (c *Console) Close() { c.cl.Close() }

// Handler is the console's HTTP handler, to mount at Config.Prefix.
func (c *Console) Handler() http.Handler {
	h := http.Handler(c.mux)
	if c.cfg.Prefix != "" {
		h = http.StripPrefix(c.cfg.Prefix, h)
	}
	return h
}

func (c *Console) routes() {
	c.mux.HandleFunc("GET /{$}", c.overview)
	c.mux.HandleFunc("GET /topics", c.topics)
	c.mux.HandleFunc("POST /topics", c.createTopic)
	c.mux.HandleFunc("GET /topics/{topic}", c.topic)
	c.mux.HandleFunc("POST /topics/{topic}/delete", c.deleteTopic)
	c.mux.HandleFunc("POST /topics/{topic}/configs", c.alterTopicConfig)
	c.mux.HandleFunc("GET /topics/{topic}/messages", c.messages)
	c.mux.HandleFunc("POST /topics/{topic}/messages", c.produce)
	c.mux.HandleFunc("GET /groups", c.groups)
	c.mux.HandleFunc("GET /groups/{group}", c.group)
	c.mux.HandleFunc("POST /groups/{group}/reset", c.resetGroup)
}

// ServeHTTP lets a Console be used as a handler directly.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.Handler().ServeHTTP(w, r) }

// path is a console link: the prefix and the parts, each escaped.
func (c *Console) path(parts ...string) string {
	var b strings.Builder
	b.WriteString(c.cfg.Prefix)
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(p))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// page is what every template gets: the section for the navigation, a
// title, a flash message from the last change and the page's own data.
type page struct {
	Section string
	Title   string
	Flash   string
	Data    any
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, name string, status int, p page) {
	p.Flash = r.URL.Query().Get("flash")
	var buf strings.Builder
	if err := c.tmpl[name].Execute(&buf, p); err != nil {
		c.cfg.Logger.Error("console: render", "page", name, "err", err)
		http.Error(w, "console: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	fmt.Fprint(w, buf.String())
}

// fail renders the error page: the cluster's answer, named.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, what string, err error) {
	c.render(w, r, "error", status, page{Title: "Error", Data: fmt.Sprintf("%s: %v", what, err)})
}

// done redirects after a change, carrying a message for the next page.
func (c *Console) done(w http.ResponseWriter, r *http.Request, to, flash string) {
	http.Redirect(w, r, to+"?flash="+url.QueryEscape(flash), http.StatusSeeOther)
}

// sameOrigin refuses a form posted from another site: browsers send Origin
// (or at least Referer) on a cross-site POST, and it must name this host.
func sameOrigin(r *http.Request) error {
	src := r.Header.Get("Origin")
	if src == "" || src == "null" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return nil // not a browser (curl, scripts): nothing to forge
	}
	u, err := url.Parse(src)
	if err != nil || u.Host != r.Host {
		return errors.New("a form posted from " + src + " may not change this cluster")
	}
	return nil
}

// post checks a form submission and parses it.
func (c *Console) post(w http.ResponseWriter, r *http.Request) bool {
	if err := sameOrigin(r); err != nil {
		c.fail(w, r, http.StatusForbidden, "refused", err)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<20)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "form", err)
		return false
	}
	return true
}

func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), requestTimeout)
}

func joinInt32s(is []int32) string {
	s := make([]string, len(is))
	for i, v := range is {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}

func since(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000")
}
