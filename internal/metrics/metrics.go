// Package metrics is the node's Prometheus metrics under Kafka's JMX
// names, rendered as Strimzi's jmx_exporter rules (kafka-metrics.yaml,
// lowercaseOutputName) render them, the form Strimzi's and most Kafka
// Grafana dashboards query: kafka.server:type=BrokerTopicMetrics,
// name=BytesInPerSec,topic=T becomes the counter
// kafka_server_brokertopicmetrics_bytesin_total{topic="T"}, a Value gauge
// kafka_<domain>_<type>_<name> with the MBean's other keys as labels, and
// the all-topics MBean the same series with topic="" (which Prometheus
// stores without the label, as Strimzi's rules leave it). docs/operations.md
// lists every metric.
//
// Two kinds of metric live here. Counters on the request path
// (BrokerTopics, Requests) are atomic adds on counters resolved once
// per topic of a request; their methods are safe on a nil receiver, so a
// node without http.listeners pays nothing. Gauges are computed when
// /metrics is scraped, by collectors (collectors.go) reading the state
// the node already keeps: the metadata image, the partitions and their
// logs, the group coordinator.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds a node's metrics and serves them.
type Registry struct {
	reg *prometheus.Registry
	// topics are kafka.server:type=BrokerTopicMetrics.
	topics *BrokerTopics
	// requests are kafka.network:type=RequestMetrics.
	requests *Requests
	// isr are IsrShrinksPerSec and IsrExpandsPerSec of
	// kafka.server:type=ReplicaManager.
	isr *ISRChanges
}

// New returns a registry with the request-path metrics and Go's runtime
// and process collectors (go_*, process_*).
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), topics: newBrokerTopics(), requests: newRequests(), isr: newISRChanges()}
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		r.topics, r.requests, r.isr,
	)
	return r
}

// TopicMetrics are the BrokerTopicMetrics counters the broker's produce
// and fetch count on; nil (counting nothing) for a nil registry.
func (r *Registry) TopicMetrics() *BrokerTopics {
	if r == nil {
		return nil
	}
	return r.topics
}

// RequestMetrics are the RequestMetrics the listeners count on; nil
// (counting nothing) for a nil registry.
func (r *Registry) RequestMetrics() *Requests {
	if r == nil {
		return nil
	}
	return r.requests
}

// Register adds a collector; it is safe while /metrics is served.
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }

// Handler serves the metrics in Prometheus's text format (or
// OpenMetrics, when the scraper asks for it).
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Gatherer is the registry as a prometheus.Gatherer, for tests.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }
