package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// confluent-kafka-go (librdkafka): AdminClient to create topics, an
// idempotent Producer with every compression.type and delivery reports, a
// Consumer with manual Assign (no group protocol) from the beginning.

// rdLogs collects librdkafka's log lines for one test instead of letting
// them spill on stderr; they are printed only if the test fails.
type rdLogs struct {
	ch   chan kafka.LogEvent
	mu   sync.Mutex
	keep []string
}

func newRdLogs(t *testing.T) *rdLogs {
	l := &rdLogs{ch: make(chan kafka.LogEvent, 1024)}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case e := <-l.ch:
				l.mu.Lock()
				l.keep = append(l.keep, fmt.Sprintf("%s %s [%s] %s", e.Timestamp.Format("15:04:05.000"), e.Name, e.Tag, e.Message))
				if len(l.keep) > 200 {
					l.keep = l.keep[len(l.keep)-200:]
				}
				l.mu.Unlock()
			case <-stop:
				return
			}
		}
	}()
	// Registered first, so it runs after the clients' Close cleanups.
	t.Cleanup(func() {
		close(stop)
		<-done
		if t.Failed() {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, s := range l.keep {
				t.Log("librdkafka: " + s)
			}
		}
	})
	return l
}

// config returns librdkafka settings shared by every client in the suite:
// short timeouts so a hung broker fails the test in time, logs routed to l.
func (l *rdLogs) config(addr string, extra kafka.ConfigMap) *kafka.ConfigMap {
	cm := kafka.ConfigMap{
		"bootstrap.servers":      addr,
		"client.id":              "samsa-e2e-librdkafka",
		"socket.timeout.ms":      10000,
		"go.logs.channel.enable": true,
		"go.logs.channel":        l.ch,
	}
	for k, v := range extra {
		cm[k] = v
	}
	return &cm
}

func newRdProducer(t *testing.T, l *rdLogs, addr string, extra kafka.ConfigMap) *kafka.Producer {
	t.Helper()
	p, err := kafka.NewProducer(l.config(addr, extra))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// rdCreate creates the topic through an AdminClient derived from p (which
// shares p's connections and log routing).
func rdCreate(t *testing.T, ctx context.Context, p *kafka.Producer, topic string, partitions int) {
	t.Helper()
	adm, err := kafka.NewAdminClientFromProducer(p)
	if err != nil {
		t.Fatalf("NewAdminClientFromProducer: %v", err)
	}
	defer adm.Close()
	res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}},
		kafka.SetAdminOperationTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	if len(res) != 1 || res[0].Topic != topic || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreateTopics %s: %v", topic, res)
	}
	md, err := adm.GetMetadata(&topic, false, 10000)
	if err != nil || md.Topics[topic].Error.Code() != kafka.ErrNoError || len(md.Topics[topic].Partitions) != partitions {
		t.Fatalf("metadata of %s after create: %v %+v, want %d partitions", topic, err, md, partitions)
	}
}

// rdProduce produces recs and waits for every delivery report; it returns
// recs with the partition and offset each report named.
func rdProduce(t *testing.T, ctx context.Context, p *kafka.Producer, topic string, recs []rec) []rec {
	t.Helper()
	reports := make(chan kafka.Event, len(recs))
	for i, r := range recs {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
			Key:            r.Key,
			Value:          r.Value,
			Timestamp:      r.Timestamp,
			Opaque:         i,
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		if err := p.Produce(m, reports); err != nil {
			t.Fatalf("Produce record %d: %v", i, err)
		}
	}
	out := make([]rec, len(recs))
	copy(out, recs)
	for range recs {
		select {
		case ev := <-reports:
			m, ok := ev.(*kafka.Message)
			if !ok {
				t.Fatalf("delivery channel got %T %v, want *kafka.Message", ev, ev)
			}
			if m.TopicPartition.Error != nil {
				t.Fatalf("delivery report: %v", m.TopicPartition.Error)
			}
			i := m.Opaque.(int)
			out[i].Partition, out[i].Offset = m.TopicPartition.Partition, int64(m.TopicPartition.Offset)
		case <-ctx.Done():
			t.Fatalf("waiting for delivery reports: %v", ctx.Err())
		}
	}
	return out
}

func newRdConsumer(t *testing.T, l *rdLogs, addr, topic string) *kafka.Consumer {
	t.Helper()
	return newRdConsumerWith(t, l, addr, topic, nil)
}

// newRdConsumerWith is newRdConsumer with more settings.
func newRdConsumerWith(t *testing.T, l *rdLogs, addr, topic string, extra kafka.ConfigMap) *kafka.Consumer {
	t.Helper()
	cm := kafka.ConfigMap{
		// librdkafka insists on a group.id even for Assign; nothing is
		// committed and no group is joined.
		"group.id":           "e2e-unused-" + topic,
		"enable.auto.commit": false,
		"auto.offset.reset":  "error",
		"fetch.wait.max.ms":  100,
	}
	for k, v := range extra {
		cm[k] = v
	}
	c, err := kafka.NewConsumer(l.config(addr, cm))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rdConsume assigns every partition at OffsetBeginning and polls until n
// records arrived.
func rdConsume(t *testing.T, ctx context.Context, c *kafka.Consumer, topic string, partitions, n int) []rec {
	t.Helper()
	var tps []kafka.TopicPartition
	for p := range partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: int32(p), Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatalf("Assign: %v", err)
	}
	var out []rec
	for len(out) < n {
		if ctx.Err() != nil {
			t.Fatalf("consume %s: %d of %d records before timeout", topic, len(out), n)
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Errorf("consume %s: %v", topic, ev.TopicPartition.Error)
				continue
			}
			if ev.TimestampType != kafka.TimestampCreateTime {
				t.Errorf("record at %v: timestamp type %v, want CreateTime", ev.TopicPartition, ev.TimestampType)
			}
			r := rec{Key: ev.Key, Value: ev.Value, Timestamp: ev.Timestamp,
				Partition: ev.TopicPartition.Partition, Offset: int64(ev.TopicPartition.Offset)}
			for _, h := range ev.Headers {
				r.Headers = append(r.Headers, hdr{Key: h.Key, Value: h.Value})
			}
			out = append(out, r)
		case kafka.Error:
			// Transient errors (e.g. the unused group's coordinator) are
			// retried by librdkafka; only fatal ones end the test.
			if ev.IsFatal() {
				t.Fatalf("consumer: %v", ev)
			}
		}
	}
	return out
}

func rdEnds(t *testing.T, c *kafka.Consumer, topic string, partitions int) map[int32]int64 {
	t.Helper()
	ends := map[int32]int64{}
	for p := range int32(partitions) {
		low, high, err := c.QueryWatermarkOffsets(topic, p, 10000)
		if err != nil {
			t.Fatalf("QueryWatermarkOffsets(%s, %d): %v", topic, p, err)
		}
		if low != 0 {
			t.Errorf("partition %d: low watermark %d, want 0", p, low)
		}
		ends[p] = high
	}
	return ends
}

func TestConfluentCodecs(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	for i, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			logs := newRdLogs(t)
			topic := topicName("confluent", codec)
			prod := newRdProducer(t, logs, addr, kafka.ConfigMap{
				"compression.type":   codec,
				"enable.idempotence": true, // implies acks=all
				"linger.ms":          5,
				"message.timeout.ms": 30000,
			})
			rdCreate(t, ctx, prod, topic, 3)
			produced := rdProduce(t, ctx, prod, topic, genRecords(uint64(400+i), 200))
			checkProducedOffsets(t, produced)
			cons := newRdConsumer(t, logs, addr, topic)
			consumed := rdConsume(t, ctx, cons, topic, 3, len(produced))
			// librdkafka sends an empty value as null (it passes no
			// pointer for a zero-length slice); the checker compares
			// values by content, so both read back as empty.
			checkConsumed(t, 3, produced, consumed, rdEnds(t, cons, topic, 3), checkOpts{})
		})
	}
}
