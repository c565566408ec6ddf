// Package registry is Samsa's Schema Registry: Confluent Schema Registry's
// REST API (paths, status and error codes, application/vnd.schemaregistry.v1+json)
// over state kept in the compacted, single-partition _schemas topic in
// Confluent's own key and value JSON formats, so Confluent's serializers
// work against it unchanged and its topic could be read by Confluent's
// registry (and theirs by ours).
//
// The registry is a franz-go client of the cluster. One goroutine replays
// _schemas into an in-memory store (store.apply is the only way state
// changes); a write decides on the current state, appends its records and
// returns once the replay has applied them. Writes are serialized in this
// process. Several instances on one topic elect a leader through a Kafka
// group of protocol type "sr" (election.go); only the leader writes and
// the others forward writes to it over HTTP.
//
// Schema types: Avro (hamba/avro), Protobuf (bufbuild/protocompile;
// protobuf.go, protobuf_compat.go) and JSON Schema
// (santhosh-tekuri/jsonschema, drafts 4 to 2020-12, jsonschema.go) with
// references and the seven compatibility levels, by Confluent's rules for
// each (for JSON Schema its content-model rules, jsonschema_compat.go).
//
// Contexts (context.go) are Confluent's: qualified subjects ":.ctx:name",
// ids allocated per context, /contexts/{ctx}/... path prefixes.
package registry

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Schema types.
const (
	typeAvro     = "AVRO"
	typeJSON     = "JSON"
	typeProtobuf = "PROTOBUF"
)

// DefaultTopic is Confluent's kafkastore.topic default.
const DefaultTopic = "_schemas"

// DefaultMaxSchemaBytes bounds a schema's text: its SCHEMA record must
// fit the broker's default message.max.bytes (1048588) with room for the
// record's other fields.
const DefaultMaxSchemaBytes = 1<<20 - 64<<10

// Config configures a Registry.
type Config struct {
	// ClientOpts connect to the cluster (kgo.SeedBrokers and any
	// security options). The registry adds its own consume and produce
	// options.
	ClientOpts []kgo.Opt
	// Topic is the store topic; "" means DefaultTopic.
	Topic string
	// MaxSchemaBytes is the largest schema text accepted; 0 means
	// DefaultMaxSchemaBytes.
	MaxSchemaBytes int
	// URL is how other registry instances reach this one
	// (http://host:port). When set, the instance joins Group to elect
	// the leader that alone writes; the others forward writes to it.
	// "" runs without election: the only instance on its topic.
	URL string
	// Group is the election's Kafka group; "" means DefaultGroup.
	Group string
	// Auth, when set, requires HTTP basic authentication on every
	// request. Forwarded writes carry the client's credentials, so every
	// instance of a group needs the same users.
	Auth *BasicAuth
	// ForwardClient sends writes to the leader; nil means
	// http.DefaultClient. Instances that serve https need one that
	// trusts their certificates.
	ForwardClient *http.Client
	Logger        *slog.Logger
}

// Registry serves the Schema Registry API. Its topic is opened on the
// first request, so a registry nobody uses neither creates _schemas nor
// reads it.
type Registry struct {
	cfg Config
	st  *store

	openMu sync.Mutex
	closed bool
	log    *topicLog
	elect  *election // nil without Config.URL

	// writeMu serializes writes: each decides on the state the previous
	// one left and returns after its records are replayed.
	writeMu sync.Mutex

	keysMu    sync.Mutex
	keyOfID   map[idKey]string // schema identity (parsed.key) by context and id
	idOfKey   map[string]int   // id by context + "\x00" + identity
	indexedTo map[string]int   // by context: ids up to here are in keyOfID
}

// New returns a Registry; nothing is connected until the first request.
func New(cfg Config) *Registry {
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.MaxSchemaBytes <= 0 {
		cfg.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Registry{cfg: cfg, st: newStore(), keyOfID: map[idKey]string{}, idOfKey: map[string]int{}, indexedTo: map[string]int{}}
}

// ready opens the topic log on first use.
func (r *Registry) ready(ctx context.Context) (*topicLog, *Error) {
	r.openMu.Lock()
	defer r.openMu.Unlock()
	if r.log != nil {
		return r.log, nil
	}
	if r.closed {
		return nil, errf(http.StatusInternalServerError, 50001, "Error in the backend data store - the registry is closed")
	}
	l, err := openLog(ctx, r.cfg.Topic, r.cfg.ClientOpts, r.st, r.cfg.Logger)
	if err != nil {
		return nil, storeError(err)
	}
	if r.cfg.URL != "" {
		self, err := parseIdentity(r.cfg.URL)
		if err != nil {
			l.close()
			return nil, storeError(fmt.Errorf("registry URL %q: %w", r.cfg.URL, err))
		}
		r.elect = startElection(l.cl, r.cfg.Group, self, l.catchUp)
	}
	r.log = l
	return l, nil
}

// Open connects now instead of at the first request: it opens the topic
// (creating it if missing), replays it, and joins the leader election.
func (r *Registry) Open(ctx context.Context) error {
	if _, err := r.ready(ctx); err != nil {
		return err
	}
	return nil
}

// Close stops the topic reader and the client.
func (r *Registry) Close() {
	r.openMu.Lock()
	defer r.openMu.Unlock()
	r.closed = true
	if r.elect != nil {
		r.elect.close()
		r.elect = nil
	}
	if r.log != nil {
		r.log.close()
		r.log = nil
	}
}

// Error is an error of the REST API: an HTTP status, Confluent's error
// code and message.
type Error struct {
	Status  int
	Code    int
	Message string
	// forwarded is the leader's whole answer to a forwarded write (any
	// status, success included), written back as it came.
	forwarded []byte
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

func errf(status, code int, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func subjectNotFound(s string) *Error {
	return errf(http.StatusNotFound, 40401, "Subject '%s' not found.", s)
}
func versionNotFound(v int) *Error {
	return errf(http.StatusNotFound, 40402, "Version %d not found.", v)
}
func schemaNotFound() *Error { return errf(http.StatusNotFound, 40403, "Schema not found") }
func invalidSchema(format string, args ...any) *Error {
	return errf(http.StatusUnprocessableEntity, 42201, format, args...)
}
func invalidVersion(v string) *Error {
	return errf(http.StatusUnprocessableEntity, 42202,
		"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v)
}
func notPermitted(format string, args ...any) *Error {
	return errf(http.StatusUnprocessableEntity, 42205, format, args...)
}
func storeError(err error) *Error {
	return errf(http.StatusInternalServerError, 50001, "Error in the backend data store - %v", err)
}
