package restproxy

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partitionKey marks a record's context with the partition the request
// chose for it.
type partitionKey struct{}

// partitioner sends a record to the partition its request named, and
// otherwise as Kafka's default partitioner does: keyed records by murmur2
// of the key, unkeyed ones sticky.
type partitioner struct{ dflt kgo.Partitioner }

func newPartitioner() kgo.Partitioner { return partitioner{kgo.StickyKeyPartitioner(nil)} }

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	return topicPartitioner{p.dflt.ForTopic(t)}
}

type topicPartitioner struct{ dflt kgo.TopicPartitioner }

func chosen(r *kgo.Record) (int32, bool) {
	if r.Context == nil {
		return 0, false
	}
	p, ok := r.Context.Value(partitionKey{}).(int32)
	return p, ok
}

func (t topicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	if _, ok := chosen(r); ok {
		return true
	}
	return t.dflt.RequiresConsistency(r)
}

func (t topicPartitioner) Partition(r *kgo.Record, n int) int {
	if p, ok := chosen(r); ok {
		return int(p)
	}
	return t.dflt.Partition(r, n)
}

func (t topicPartitioner) OnNewBatch() {
	if nb, ok := t.dflt.(kgo.TopicPartitionerOnNewBatch); ok {
		nb.OnNewBatch()
	}
}

// produceResult is one record's delivery: its partition and offset, or
// its error.
type produceResult struct {
	partition int32
	offset    int64
	err       error
}

// produce produces recs (validated already: their topic exists and any
// chosen partition is in range) and returns each one's result, in order.
func (p *Proxy) produce(ctx context.Context, recs []*kgo.Record) []produceResult {
	out := make([]produceResult, len(recs))
	var wg sync.WaitGroup
	wg.Add(len(recs))
	for i, r := range recs {
		p.client(ctx).Produce(ctx, r, func(r *kgo.Record, err error) {
			out[i] = produceResult{r.Partition, r.Offset, err}
			wg.Done()
		})
	}
	wg.Wait()
	return out
}

// withPartition returns a context that makes the partitioner choose part.
func withPartition(ctx context.Context, part int32) context.Context {
	return context.WithValue(ctx, partitionKey{}, part)
}

// errorCode is Confluent's per-record error_code of a v2 produce answer:
// 2 for a retriable Kafka error, 1 for any other.
func errorCode(err error) int {
	var ke *kerr.Error
	if errors.As(err, &ke) && ke.Retriable {
		return 2
	}
	return 1
}

// partitions returns the partition count of topic, or 40401.
func (p *Proxy) partitionCount(r *http.Request, topic string) (int32, error) {
	ctx, cancel := reqContext(r)
	defer cancel()
	tds, err := p.admin(ctx).ListTopics(ctx, topic)
	if err != nil {
		return 0, kafkaError(err)
	}
	td, ok := tds[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return 0, errTopicNotFound
	}
	if td.Err != nil {
		return 0, kafkaError(td.Err)
	}
	return int32(len(td.Partitions)), nil
}
