package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Requests are kafka.network:type=RequestMetrics per API (the request
// label, Kafka's name of the API): RequestsPerSec by version, as
// kafka_network_requestmetrics_requests_total{request,version}, and
// TotalTimeMs, the time from a request's last byte read to its answer
// queued for the socket, as the histogram
// kafka_network_requestmetrics_totaltimems{request} in milliseconds
// (Kafka's JMX histogram gives percentiles; histogram_quantile computes
// them from the buckets, across nodes too). A nil *Requests counts
// nothing.
type Requests struct {
	count *prometheus.CounterVec
	total *prometheus.HistogramVec

	mu   sync.Mutex // makes apis entries
	apis [maxAPIKey + 1]atomic.Pointer[apiMetrics]
}

const (
	maxAPIKey  = 127
	maxVersion = 31
)

// apiMetrics are one API's series, resolved on its first request.
type apiMetrics struct {
	name     string
	total    prometheus.Observer
	versions [maxVersion + 1]atomic.Pointer[versionCounter]
}

type versionCounter struct{ prometheus.Counter }

// totalTimeBuckets are the TotalTimeMs buckets, in milliseconds: from a
// metadata answer to a long-polled fetch (fetch.max.wait.ms) and beyond.
var totalTimeBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

func newRequests() *Requests {
	return &Requests{
		count: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_network_requestmetrics_requests_total",
			Help: "Requests answered (or handled, when they get no answer), by API and version (RequestsPerSec).",
		}, []string{"request", "version"}),
		total: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kafka_network_requestmetrics_totaltimems",
			Help:    "Milliseconds from a request's last byte read to its answer queued for the socket, by API (TotalTimeMs).",
			Buckets: totalTimeBuckets,
		}, []string{"request"}),
	}
}

// Describe and Collect make Requests a prometheus.Collector.
func (r *Requests) Describe(ch chan<- *prometheus.Desc) {
	r.count.Describe(ch)
	r.total.Describe(ch)
}

func (r *Requests) Collect(ch chan<- prometheus.Metric) {
	r.count.Collect(ch)
	r.total.Collect(ch)
}

// Done counts a request of API key and version whose last byte was read
// at start and whose answer is now queued (or that gets none).
func (r *Requests) Done(key, version int16, start time.Time) {
	if r == nil || key < 0 || key > maxAPIKey || version < 0 || version > maxVersion {
		return
	}
	a := r.apis[key].Load()
	if a == nil {
		a = r.api(key)
	}
	c := a.versions[version].Load()
	if c == nil {
		c = r.version(a, version)
	}
	c.Inc()
	a.total.Observe(float64(time.Since(start)) / float64(time.Millisecond))
}

func (r *Requests) api(key int16) *apiMetrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := r.apis[key].Load(); a != nil {
		return a
	}
	name := kmsg.NameForKey(key)
	if name == "" {
		name = "Unknown" + strconv.Itoa(int(key))
	}
	a := &apiMetrics{name: name, total: r.total.WithLabelValues(name)}
	r.apis[key].Store(a)
	return a
}

func (r *Requests) version(a *apiMetrics, version int16) *versionCounter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := a.versions[version].Load(); c != nil {
		return c
	}
	c := &versionCounter{r.count.WithLabelValues(a.name, strconv.Itoa(int(version)))}
	a.versions[version].Store(c)
	return c
}
