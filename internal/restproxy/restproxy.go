// Package restproxy is Samsa's REST Proxy: Confluent REST Proxy's HTTP API
// (v2 produce, topics, brokers and consumer instances; v3 administration and
// records) in front of a Kafka cluster, for clients that cannot speak the
// Kafka protocol. Paths, content types, status codes, error bodies
// ({"error_code":40401,"message":"..."}) and answer shapes are Confluent's,
// so scripts written against Confluent's proxy work unchanged.
//
// The proxy is a franz-go client of the cluster: one shared producer and
// admin client, and one consumer client per v2 consumer instance. Consumer
// instances live in this process only (a request for an instance another
// proxy owns answers 40403, as Confluent's does) and are closed after
// Config.ConsumerInstanceTimeout without a request.
//
// With Config.Auth every request needs HTTP basic authentication; with
// Config.UserClientOpts (principal propagation) each user's requests reach
// the cluster through a client logged in as that user (auth.go), so the
// broker's ACLs apply per user.
//
// Produce validates every record of a request before it produces any, so a
// request that answers 4xx has produced nothing. Records are produced with
// acks=all; an answer's offsets are the ones the cluster acknowledged.
//
// Embedded formats are a table (format.go): a format turns a request's
// JSON key or value into bytes and a record's bytes back into JSON. binary,
// json, avro, jsonschema and protobuf are served; the schema formats
// register schemas through the Schema Registry's REST API and write
// Confluent's wire format (magic 0, 4-byte schema id, for protobuf the
// message indexes).
package restproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// Defaults, as Confluent's proxy has them.
const (
	DefaultConsumerInstanceTimeout = 5 * time.Minute // consumer.instance.timeout.ms
	DefaultConsumerRequestTimeout  = time.Second     // consumer.request.timeout.ms
	DefaultConsumerMaxBytes        = 64 << 20        // consumer.request.max.bytes
	// DefaultMaxRequestBytes bounds a request body; a larger one answers 413.
	DefaultMaxRequestBytes = 16 << 20
)

// Config configures a Proxy.
type Config struct {
	// ClientOpts connect to the cluster (kgo.SeedBrokers and any security
	// options). The proxy adds its own produce and consume options.
	ClientOpts []kgo.Opt
	// SchemaRegistryURL is the Schema Registry (http://host:port) that
	// the avro, jsonschema and protobuf formats register schemas in and
	// read them from (Confluent's schema.registry.url); "" refuses their
	// data.
	SchemaRegistryURL string
	// SchemaRegistryOpts are more options of the registry client: its
	// basic authentication (Confluent's
	// schema.registry.basic.auth.user.info) or an HTTP client trusting an
	// https registry's CA.
	SchemaRegistryOpts []sr.ClientOpt
	// ConsumerInstanceTimeout closes a consumer instance after this long
	// without a request; 0 means DefaultConsumerInstanceTimeout.
	ConsumerInstanceTimeout time.Duration
	// MaxRequestBytes bounds a request body; 0 means DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// Auth, when not nil, requires HTTP basic authentication of every
	// request (Confluent's authentication.method=BASIC).
	Auth *BasicAuth
	// UserClientOpts, when not nil, turns on principal propagation: the
	// requests of each user of Auth go to the cluster through a client of
	// their own, made with ClientOpts and then these options (a SASL login
	// with the user's name and password), so that the broker authorizes
	// each user as its own principal; ClientOpts must then carry no SASL
	// login of their own (franz-go would use the first). A consumer
	// instance belongs to the user who created it. Needs Auth.
	UserClientOpts func(user, password string) []kgo.Opt
	Logger         *slog.Logger
}

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	if c.UserClientOpts != nil && c.Auth == nil {
		return errors.New("principal propagation needs basic authentication")
	}
	return nil
}

// Proxy serves the REST Proxy API.
type Proxy struct {
	cfg Config
	cl  *kgo.Client // produce and metadata
	adm *kadm.Client
	// schemas is nil without Config.SchemaRegistryURL.
	schemas *schemas
	mux     *http.ServeMux
	stop    chan struct{}
	done    chan struct{}

	// users holds the clients of principal propagation by user name.
	users struct {
		sync.Mutex
		m      map[string]*principal
		closed bool
	}

	mu struct {
		sync.Mutex
		// consumers by group, then instance id.
		consumers map[string]map[string]*consumer
		closed    bool
	}
}

// New returns a proxy of the cluster cfg.ClientOpts reach. It connects at
// the first request.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rest proxy: %w", err)
	}
	if cfg.ConsumerInstanceTimeout <= 0 {
		cfg.ConsumerInstanceTimeout = DefaultConsumerInstanceTimeout
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	cl, err := p.newClient(nil)
	if err != nil {
		return nil, fmt.Errorf("rest proxy: %w", err)
	}
	p.cl, p.adm = cl, kadm.NewClient(cl)
	p.users.m = map[string]*principal{}
	if cfg.SchemaRegistryURL != "" {
		if p.schemas, err = newSchemas(cfg.SchemaRegistryURL, cfg.SchemaRegistryOpts...); err != nil {
			cl.Close()
			return nil, fmt.Errorf("rest proxy: schema.registry.url: %w", err)
		}
	}
	p.mu.consumers = map[string]map[string]*consumer{}
	p.mux = http.NewServeMux()
	p.routesV2()
	p.routesV3()
	go p.expireLoop()
	return p, nil
}

// newClient is a producing and admin client of the cluster with
// Config.ClientOpts and then extra.
func (p *Proxy) newClient(extra []kgo.Opt) (*kgo.Client, error) {
	opts := append([]kgo.Opt{
		kgo.ClientID("samsa-rest-proxy"),
		kgo.RecordPartitioner(newPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		// Topic answers come from metadata requests that franz-go
		// caches for this long: short, so that a topic created or
		// deleted is seen at the next request.
		kgo.MetadataMinAge(100 * time.Millisecond),
	}, p.cfg.ClientOpts...)
	return kgo.NewClient(append(opts, extra...)...)
}

// drainBytes is how much of an unread request body the proxy reads and
// drops after answering early, so the client gets to read the answer.
const drainBytes = 256 << 20

// Handler is the proxy's HTTP handler.
func (p *Proxy) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := r.Body
		if r = p.authenticate(w, r); r == nil {
			io.Copy(io.Discard, io.LimitReader(body, drainBytes))
			return
		}
		// A v3 records stream may run for long: its limit is per record
		// (v3ProduceRecords).
		if !(r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v3/") && strings.HasSuffix(r.URL.Path, "/records")) {
			r.Body = http.MaxBytesReader(w, r.Body, p.cfg.MaxRequestBytes)
		}
		rec := &statusRecorder{header: http.Header{}}
		if h, pattern := p.mux.Handler(r); pattern == "" {
			h.ServeHTTP(rec, r)
		}
		if rec.status >= 400 {
			// No route: Confluent answers in its JSON error shape
			// (HTTP 404 Not Found, 405 Method Not Allowed).
			if allow := rec.header.Get("Allow"); allow != "" {
				w.Header().Set("Allow", allow)
			}
			writeError(w, errf(rec.status, rec.status, "HTTP %d %s", rec.status, http.StatusText(rec.status)))
		} else {
			p.mux.ServeHTTP(w, r)
		}
		// A request answered before its body was read (413 for a body
		// over the limit, an error in a records stream) has the rest of
		// its body read and dropped before the answer goes out: a client
		// still sending it would otherwise find the connection closed
		// under its write and never see the answer. Bounded, so an
		// endless body only costs drainBytes.
		io.Copy(io.Discard, io.LimitReader(body, drainBytes))
	})
}

// statusRecorder keeps the status and headers of the mux's answer to a
// request without a route, and drops its text body.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(status int)      { r.status = status }

// Close closes every consumer instance and the cluster client.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return
	}
	p.mu.closed = true
	var all []*consumer
	for _, g := range p.mu.consumers {
		for _, c := range g {
			all = append(all, c)
		}
	}
	p.mu.consumers = nil
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	for _, c := range all {
		c.close()
	}
	p.closeUsers()
	p.cl.Close()
}

// apiError is an error answered as Confluent answers it: an HTTP status
// and a body {"error_code": code, "message": msg}.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errf(status, code int, format string, args ...any) *apiError {
	return &apiError{status, code, fmt.Sprintf(format, args...)}
}

// Confluent's errors.
var (
	errTopicNotFound     = &apiError{404, 40401, "Topic not found."}
	errPartitionNotFound = &apiError{404, 40402, "Partition not found."}
	errInstanceNotFound  = &apiError{404, 40403, "Consumer instance not found."}
	errFormatMismatch    = &apiError{406, 40601, "The requested embedded data format does not match the deserializer for this consumer instance"}
	errNotAcceptable     = &apiError{406, 406, "HTTP 406 Not Acceptable"}
	errUnsupportedType   = &apiError{415, 415, "HTTP 415 Unsupported Media Type"}
	errKeySchemaMissing  = &apiError{422, 42201, "Request includes keys but does not include key schema"}
	errValSchemaMissing  = &apiError{422, 42202, "Request includes values but does not include value schema"}
)

// kafkaError is Confluent's answer to an error from the cluster: 403/40301
// for an authorization failure (the broker's ACLs refused the proxy's, or
// with principal propagation the user's, principal), else 500/50002.
func kafkaError(err error) *apiError {
	for _, ae := range []error{kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
		kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed, kerr.SaslAuthenticationFailed} {
		if errors.Is(err, ae) {
			return errf(403, 40301, "Not authorized: %v", err)
		}
	}
	return errf(500, 50002, "Kafka error: %v", err)
}

// writeError answers err: an apiError as itself, anything else as a Kafka
// error (50002).
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &mbe):
		ae = errf(413, 413, "Request body larger than %d bytes", mbe.Limit)
	default:
		ae = kafkaError(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.status)
	json.NewEncoder(w).Encode(map[string]any{"error_code": ae.code, "message": ae.msg})
}

// writeJSON answers v with status and content type ct.
func writeJSON(w http.ResponseWriter, status int, ct string, v any) {
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decodeBody reads the JSON body into v: malformed JSON is 400 (code 400)
// and JSON of the wrong shape 422 (code 422), as Confluent's mappers
// answer them. An empty body leaves v as it is when allowEmpty.
func decodeBody(r *http.Request, v any, allowEmpty bool) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		if allowEmpty {
			return nil
		}
		return errf(422, 422, "Request body is empty")
	}
	return unmarshal(b, v)
}

func unmarshal(b []byte, v any) error {
	return decodeError(json.Unmarshal(b, v))
}

// decodeError maps a JSON decoding error to Confluent's answer.
func decodeError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &mbe):
		return errf(413, 413, "Request body larger than %d bytes", mbe.Limit)
	case errors.As(err, &se):
		return errf(400, 400, "Unexpected character at offset %d: %v", se.Offset, err)
	case errors.As(err, &te), strings.Contains(err.Error(), "illegal base64"):
		return errf(422, 422, "Unprocessable entity: %v", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errf(400, 400, "Unexpected end of input: %v", err)
	default:
		var ae *apiError
		if errors.As(err, &ae) {
			return ae
		}
		return errf(422, 422, "Unprocessable entity: %v", err)
	}
}

// mediaType is the media type of a Content-Type header, lower-cased.
func mediaType(h string) string {
	mt, _, err := mime.ParseMediaType(h)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(h))
	}
	return mt
}

// accepts reports whether the request's Accept header admits one of the
// offered media types (or has none).
func accepts(r *http.Request, offered ...string) bool {
	h := r.Header.Values("Accept")
	if len(h) == 0 {
		return true
	}
	for _, v := range h {
		for part := range strings.SplitSeq(v, ",") {
			mt := mediaType(part)
			if mt == "" || mt == "*/*" || mt == "application/*" {
				return true
			}
			for _, o := range offered {
				if mt == o {
					return true
				}
			}
		}
	}
	return false
}

func (p *Proxy) logger() *slog.Logger { return p.cfg.Logger }

// reqContext bounds a request's work on the cluster.
func reqContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}
