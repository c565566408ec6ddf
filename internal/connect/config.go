package connect

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/config"
)

// WorkerConfig is a worker's configuration under Kafka's key names.
type WorkerConfig struct {
	Props map[string]string // every key, for converters' sub-configs

	BootstrapServers []string
	GroupID          string // distributed only
	Listeners        []string
	AdvertisedURL    string // http://host:port other workers and status records name

	ConfigTopic, OffsetTopic, StatusTopic string
	ConfigRF, OffsetRF, StatusRF          int16
	OffsetPartitions, StatusPartitions    int32

	OffsetFile          string // standalone only: offset.storage.file.filename
	OffsetFlushInterval time.Duration
	ShutdownTimeout     time.Duration

	// The Connect group (distributed only): session.timeout.ms (10 s),
	// heartbeat.interval.ms (3 s), rebalance.timeout.ms (60 s), and
	// scheduled.rebalance.max.delay.ms (5 min), how long the connectors
	// and tasks of a worker that left wait for it before they are given
	// to the others.
	SessionTimeout, HeartbeatInterval, RebalanceTimeout time.Duration
	ScheduledRebalanceMaxDelay                          time.Duration

	// Sink tasks' consumers: consumer.session.timeout.ms (45 s) and
	// consumer.heartbeat.interval.ms (3 s), Kafka's consumer defaults.
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration

	// topic.tracking.enable and topic.tracking.allow.reset (both true).
	TopicTracking, TopicTrackingReset bool
}

// LoadWorkerConfig reads a worker properties file.
func LoadWorkerConfig(path string, distributed bool) (*WorkerConfig, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	props, err := ReadProperties(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ParseWorkerConfig(props, distributed)
}

// ReadProperties parses Java .properties text into a map.
func ReadProperties(text string) (map[string]string, error) {
	ps, err := config.ParseProperties(text)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, p := range ps {
		m[p.Key] = p.Value
	}
	return m, nil
}

// ParseWorkerConfig applies Kafka's defaults and checks the keys.
func ParseWorkerConfig(props map[string]string, distributed bool) (*WorkerConfig, error) {
	get := func(k, def string) string {
		if v, ok := props[k]; ok {
			return strings.TrimSpace(v)
		}
		return def
	}
	var errs []string
	num := func(k, def string) int64 {
		n, err := strconv.ParseInt(get(k, def), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Sprintf("invalid value %q for %s: want a number", get(k, def), k))
		}
		return n
	}
	c := &WorkerConfig{
		Props:               props,
		BootstrapServers:    splitCSV(get("bootstrap.servers", "localhost:9092")),
		GroupID:             get("group.id", ""),
		Listeners:           splitCSV(get("listeners", "http://:8083")),
		ConfigTopic:         get("config.storage.topic", ""),
		OffsetTopic:         get("offset.storage.topic", ""),
		StatusTopic:         get("status.storage.topic", ""),
		ConfigRF:            int16(num("config.storage.replication.factor", "3")),
		OffsetRF:            int16(num("offset.storage.replication.factor", "3")),
		StatusRF:            int16(num("status.storage.replication.factor", "3")),
		OffsetPartitions:    int32(num("offset.storage.partitions", "25")),
		StatusPartitions:    int32(num("status.storage.partitions", "5")),
		OffsetFile:          get("offset.storage.file.filename", ""),
		OffsetFlushInterval: time.Duration(num("offset.flush.interval.ms", "60000")) * time.Millisecond,
		ShutdownTimeout:     time.Duration(num("task.shutdown.graceful.timeout.ms", "5000")) * time.Millisecond,

		SessionTimeout:             time.Duration(num("session.timeout.ms", "10000")) * time.Millisecond,
		HeartbeatInterval:          time.Duration(num("heartbeat.interval.ms", "3000")) * time.Millisecond,
		RebalanceTimeout:           time.Duration(num("rebalance.timeout.ms", "60000")) * time.Millisecond,
		ScheduledRebalanceMaxDelay: time.Duration(num("scheduled.rebalance.max.delay.ms", "300000")) * time.Millisecond,
	}
	c.TopicTracking = get("topic.tracking.enable", "true") != "false"
	c.TopicTrackingReset = get("topic.tracking.allow.reset", "true") != "false"
	c.ConsumerSessionTimeout = time.Duration(num("consumer.session.timeout.ms", "45000")) * time.Millisecond
	c.ConsumerHeartbeatInterval = time.Duration(num("consumer.heartbeat.interval.ms", "3000")) * time.Millisecond
	if c.HeartbeatInterval <= 0 || c.ConsumerHeartbeatInterval <= 0 {
		errs = append(errs, "heartbeat.interval.ms and consumer.heartbeat.interval.ms must be positive")
	}
	if distributed {
		for _, k := range []string{"group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic"} {
			if get(k, "") == "" {
				errs = append(errs, fmt.Sprintf("missing required configuration %q which has no default value", k))
			}
		}
	} else if c.OffsetFile == "" {
		errs = append(errs, `missing required configuration "offset.storage.file.filename" which has no default value`)
	}
	for _, k := range []string{"key.converter", "value.converter"} {
		if get(k, "") == "" {
			errs = append(errs, fmt.Sprintf("missing required configuration %q which has no default value", k))
		}
	}
	for _, l := range c.Listeners {
		if !strings.HasPrefix(l, "http://") {
			errs = append(errs, fmt.Sprintf("listeners: %q: only http:// listeners are served", l))
		}
	}
	if v := get("exactly.once.source.support", "disabled"); v != "disabled" {
		errs = append(errs, fmt.Sprintf("exactly.once.source.support=%s is not supported yet", v))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return c, nil
}

// advertise fills AdvertisedURL from rest.advertised.* and the bound
// listener address.
func (c *WorkerConfig) advertise(bound net.Addr) {
	host, port, _ := net.SplitHostPort(bound.String())
	if h := c.Props["rest.advertised.host.name"]; h != "" {
		host = h
	} else if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if hn, err := os.Hostname(); err == nil {
			host = hn
		}
	}
	if p := c.Props["rest.advertised.port"]; p != "" {
		port = p
	}
	scheme := "http"
	if l := c.Props["rest.advertised.listener"]; l != "" {
		scheme = l
	}
	c.AdvertisedURL = scheme + "://" + net.JoinHostPort(host, port)
}

func splitCSV(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
