package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/wire"
)

// The counters of kafka.server:type=BrokerTopicMetrics, each per topic
// and for all topics (topic="").
const (
	messagesIn = iota
	bytesIn
	bytesOut
	bytesRejected
	failedProduce
	failedFetch
	totalProduce
	totalFetch
	replicationBytesOut
	numTopicMetrics
)

var topicMetricNames = [numTopicMetrics][2]string{
	messagesIn:          {"messagesin", "Records appended to the partitions this node leads (MessagesInPerSec)."},
	bytesIn:             {"bytesin", "Bytes of record batches produced by clients and appended (BytesInPerSec)."},
	bytesOut:            {"bytesout", "Bytes of record batches fetched by consumers (BytesOutPerSec); followers' fetches are replicationbytesout."},
	bytesRejected:       {"bytesrejected", "Bytes of produced batches refused as too large (BytesRejectedPerSec)."},
	failedProduce:       {"failedproducerequests", "Partitions of produce requests that failed for a reason other than leadership, an unknown partition, size or corruption (FailedProduceRequestsPerSec)."},
	failedFetch:         {"failedfetchrequests", "Partitions of fetch requests that failed for a reason other than leadership, epochs or an unknown partition (FailedFetchRequestsPerSec)."},
	totalProduce:        {"totalproducerequests", "Partitions of produce requests that reached the append (TotalProduceRequestsPerSec)."},
	totalFetch:          {"totalfetchrequests", "Partitions of fetch requests read, consumers' and followers' (TotalFetchRequestsPerSec)."},
	replicationBytesOut: {"replicationbytesout", "Bytes of record batches fetched by followers (ReplicationBytesOutPerSec)."},
}

// BrokerTopics are the counters of kafka.server:type=BrokerTopicMetrics,
// e.g. kafka_server_brokertopicmetrics_messagesin_total{topic="orders"}.
// The series with topic="" counts all topics: the sum of the topics'
// counters at scrape time (deleted topics' counts included), so the
// request path adds to its topic's counters only. A nil *BrokerTopics
// counts nothing.
type BrokerTopics struct {
	descs  [numTopicMetrics]*prometheus.Desc
	topics sync.Map // topic name → *TopicCounters

	mu      sync.Mutex // serializes Forget with Collect
	retired [numTopicMetrics]uint64
}

// TopicCounters are one topic's counters: plain atomic adds.
type TopicCounters struct {
	name string
	v    [numTopicMetrics]atomic.Uint64
}

func newBrokerTopics() *BrokerTopics {
	b := &BrokerTopics{}
	for i, n := range topicMetricNames {
		b.descs[i] = prometheus.NewDesc("kafka_server_brokertopicmetrics_"+n[0]+"_total", n[1], []string{"topic"}, nil)
	}
	return b
}

// Describe and Collect make BrokerTopics a prometheus.Collector.
func (b *BrokerTopics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range b.descs {
		ch <- d
	}
}

func (b *BrokerTopics) Collect(ch chan<- prometheus.Metric) {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := b.retired
	b.topics.Range(func(_, v any) bool {
		t := v.(*TopicCounters)
		for i := range t.v {
			n := t.v[i].Load()
			all[i] += n
			ch <- prometheus.MustNewConstMetric(b.descs[i], prometheus.CounterValue, float64(n), t.name)
		}
		return true
	})
	for i, n := range all {
		ch <- prometheus.MustNewConstMetric(b.descs[i], prometheus.CounterValue, float64(n), "")
	}
}

// Topic returns the counters of a topic, made on first use.
func (b *BrokerTopics) Topic(name string) *TopicCounters {
	if b == nil {
		return nil
	}
	if t, ok := b.topics.Load(name); ok {
		return t.(*TopicCounters)
	}
	t, _ := b.topics.LoadOrStore(name, &TopicCounters{name: name})
	return t.(*TopicCounters)
}

// cached is t when it counts topic, else the topic's counters: how a
// request resolves its counters once per run of one topic's partitions.
func (b *BrokerTopics) cached(t *TopicCounters, topic string) *TopicCounters {
	if t != nil && t.name == topic {
		return t
	}
	return b.Topic(topic)
}

// Forget drops a deleted topic's series; its counts stay in the
// all-topics series. A request still holding its counters adds to
// nothing any more.
func (b *BrokerTopics) Forget(topic string) {
	if b == nil || topic == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.topics.LoadAndDelete(topic); ok {
		t := v.(*TopicCounters)
		for i := range t.v {
			b.retired[i] += t.v[i].Load()
		}
	}
}

func (t *TopicCounters) add(i int, n uint64) { t.v[i].Add(n) }

// Produced counts one partition of a produce request that reached the
// append, on the counters of t when they are topic's, else of topic's
// (looked up once), which it returns for the next partition: records and
// bytes of its batch were appended unless err says why not. As Kafka's
// ReplicaManager does, a refused batch counts as failed unless the
// refusal is about leadership, an unknown partition, size or corruption,
// and a batch too large counts its bytes as rejected.
func (b *BrokerTopics) Produced(t *TopicCounters, topic string, records, bytes int, err error) *TopicCounters {
	if b == nil {
		return nil
	}
	t = b.cached(t, topic)
	t.add(totalProduce, 1)
	switch code := wire.ErrorCode(err); code {
	case 0:
		t.add(bytesIn, uint64(bytes))
		t.add(messagesIn, uint64(max(records, 0)))
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code:
		t.add(bytesRejected, uint64(bytes))
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.CorruptMessage.Code,
		kerr.KafkaStorageError.Code, kerr.UnknownTopicID.Code:
	default:
		t.add(failedProduce, 1)
	}
	return t
}

// Fetched counts one partition of a fetch that was read, as Produced
// does: its record bytes went to a consumer, or to a follower when
// follower is set, and code is its error code. Errors about leadership,
// epochs, offsets out of range or unknown partitions are not failures.
func (b *BrokerTopics) Fetched(t *TopicCounters, topic string, bytes int, code int16, follower bool) *TopicCounters {
	if b == nil {
		return nil
	}
	t = b.cached(t, topic)
	t.add(totalFetch, 1)
	switch code {
	case 0:
		if follower {
			t.add(replicationBytesOut, uint64(bytes))
		} else {
			t.add(bytesOut, uint64(bytes))
		}
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.UnknownLeaderEpoch.Code,
		kerr.FencedLeaderEpoch.Code, kerr.ReplicaNotAvailable.Code, kerr.KafkaStorageError.Code,
		kerr.InconsistentTopicID.Code, kerr.OffsetOutOfRange.Code, kerr.UnknownTopicID.Code:
	default:
		t.add(failedFetch, 1)
	}
	return t
}
