package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/metrics"
)

// The cost the hot path pays per produce request for its metrics: the
// broker resolves a topic's counters once per request (Produced with a
// nil cache) and the listener counts the request (Requests.Done).
// Partitions of the same topic in one request reuse the counters.

func BenchmarkProducedPerRequest(b *testing.B) {
	for _, parts := range []int{1, 8} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			topics := metrics.New().TopicMetrics()
			for b.Loop() {
				var tm *metrics.TopicCounters
				for range parts {
					tm = topics.Produced(tm, "orders", 100, 16384, nil)
				}
			}
		})
	}
}

func BenchmarkProducedPerRequestParallel(b *testing.B) {
	topics := metrics.New().TopicMetrics()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			topics.Produced(nil, "orders", 100, 16384, nil)
		}
	})
}

func BenchmarkRequestDone(b *testing.B) {
	reqs := metrics.New().RequestMetrics()
	start := time.Now()
	for b.Loop() {
		reqs.Done(0, 11, start)
	}
}

// BenchmarkNilMetrics is the cost without http.listeners: the hooks on a
// nil registry.
func BenchmarkNilMetrics(b *testing.B) {
	var r *metrics.Registry
	topics, reqs := r.TopicMetrics(), r.RequestMetrics()
	start := time.Now()
	for b.Loop() {
		topics.Produced(nil, "orders", 100, 16384, nil)
		reqs.Done(0, 11, start)
	}
}
