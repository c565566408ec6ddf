package e2e

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
)

// segmentio/kafka-go: kafka.Client to create topics and list offsets,
// kafka.Writer (Hash balancer, acks=all) with every codec, kafka.Reader per
// partition (no group) to read back.

func kafkagoClient(addr string) *kafka.Client {
	return kafkagoClientWith(addr, nil)
}

// kafkagoClientWith is a client that authenticates with mech (nil: no SASL).
func kafkagoClientWith(addr string, mech sasl.Mechanism) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second, Transport: kafkagoTransport(mech)}
}

// kafkagoTransport is a transport authenticating with mech; without one,
// nil: kafka-go's shared default.
func kafkagoTransport(mech sasl.Mechanism) kafka.RoundTripper {
	if mech == nil {
		return nil
	}
	return &kafka.Transport{SASL: mech, DialTimeout: 5 * time.Second}
}

// kafkagoDialer is a dialer authenticating with mech; without one, nil:
// kafka-go's default.
func kafkagoDialer(mech sasl.Mechanism) *kafka.Dialer {
	if mech == nil {
		return nil
	}
	return &kafka.Dialer{Timeout: 5 * time.Second, DualStack: true, SASLMechanism: mech}
}

func kafkagoCreate(t *testing.T, ctx context.Context, addr, topic string, partitions int) {
	t.Helper()
	kafkagoCreateWith(t, ctx, nil, addr, topic, partitions)
}

func kafkagoCreateWith(t *testing.T, ctx context.Context, mech sasl.Mechanism, addr, topic string, partitions int) {
	t.Helper()
	resp, err := kafkagoClientWith(addr, mech).CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}},
	})
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	if err := resp.Errors[topic]; err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
}

func kafkagoCodec(codec string) kafka.Compression {
	switch codec {
	case "gzip":
		return kafka.Gzip
	case "snappy":
		return kafka.Snappy
	case "lz4":
		return kafka.Lz4
	case "zstd":
		return kafka.Zstd
	}
	return 0 // no compression
}

// kafkagoProduce writes recs with one WriteMessages call and returns them
// with the partition and offset the Writer's Completion callback reported.
func kafkagoProduce(t *testing.T, ctx context.Context, addr, topic, codec string, recs []rec) []rec {
	t.Helper()
	return kafkagoProduceWith(t, ctx, nil, addr, topic, codec, recs)
}

func kafkagoProduceWith(t *testing.T, ctx context.Context, mech sasl.Mechanism, addr, topic, codec string, recs []rec) []rec {
	t.Helper()
	out := make([]rec, len(recs))
	copy(out, recs)
	var mu sync.Mutex
	reported := 0
	w := &kafka.Writer{
		Addr:         kafka.TCP(addr),
		Transport:    kafkagoTransport(mech),
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		Compression:  kafkagoCodec(codec),
		BatchSize:    50,
		BatchTimeout: 5 * time.Millisecond,
		WriteTimeout: 10 * time.Second,
		ReadTimeout:  10 * time.Second,
		MaxAttempts:  5,
		Completion: func(msgs []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				return // WriteMessages returns it
			}
			for _, m := range msgs {
				i, err := strconv.Atoi(string(m.Headers[0].Value))
				if err != nil || m.Headers[0].Key != idxHeader {
					t.Errorf("completion for a message without %s header: %v", idxHeader, m.Headers)
					continue
				}
				out[i].Partition, out[i].Offset = int32(m.Partition), m.Offset
				reported++
			}
		},
	}
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		msgs[i] = kafka.Message{Key: r.Key, Value: r.Value, Time: r.Timestamp}
		for _, h := range r.Headers {
			msgs[i].Headers = append(msgs[i].Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("WriteMessages to %s: %v", topic, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close writer: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if reported != len(recs) {
		t.Fatalf("Completion reported %d messages, wrote %d", reported, len(recs))
	}
	return out
}

// kafkagoEnds returns every partition's last offset (high watermark) and
// checks the first offset is 0.
func kafkagoEnds(t *testing.T, ctx context.Context, addr, topic string, partitions int) map[int32]int64 {
	t.Helper()
	return kafkagoEndsWith(t, ctx, nil, addr, topic, partitions)
}

func kafkagoEndsWith(t *testing.T, ctx context.Context, mech sasl.Mechanism, addr, topic string, partitions int) map[int32]int64 {
	t.Helper()
	var reqs []kafka.OffsetRequest
	for p := range partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	resp, err := kafkagoClientWith(addr, mech).ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{topic: reqs},
	})
	if err != nil {
		t.Fatalf("ListOffsets %s: %v", topic, err)
	}
	ends := map[int32]int64{}
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			t.Errorf("ListOffsets %s[%d]: %v", topic, po.Partition, po.Error)
		}
		if po.FirstOffset != 0 {
			t.Errorf("ListOffsets %s[%d]: first offset %d, want 0", topic, po.Partition, po.FirstOffset)
		}
		ends[int32(po.Partition)] = po.LastOffset
	}
	if len(ends) != partitions {
		t.Errorf("ListOffsets %s: %d partitions answered, want %d", topic, len(ends), partitions)
	}
	return ends
}

// kafkagoConsume reads each partition from the first offset up to ends[p]
// with a partition Reader (no consumer group).
func kafkagoConsume(t *testing.T, ctx context.Context, addr, topic string, ends map[int32]int64) []rec {
	t.Helper()
	return kafkagoConsumeWith(t, ctx, nil, addr, topic, ends)
}

func kafkagoConsumeWith(t *testing.T, ctx context.Context, mech sasl.Mechanism, addr, topic string, ends map[int32]int64) []rec {
	t.Helper()
	var out []rec
	for p := int32(0); p < int32(len(ends)); p++ {
		if ends[p] == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   []string{addr},
			Topic:     topic,
			Partition: int(p),
			MinBytes:  1,
			MaxBytes:  4 << 20,
			MaxWait:   200 * time.Millisecond,
			Dialer:    kafkagoDialer(mech),
		})
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			t.Fatalf("SetOffset: %v", err)
		}
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read %s[%d] after %d records in total: %v", topic, p, len(out), err)
			}
			c := rec{Key: m.Key, Value: m.Value, Timestamp: m.Time, Partition: int32(m.Partition), Offset: m.Offset}
			for _, h := range m.Headers {
				c.Headers = append(c.Headers, hdr{Key: h.Key, Value: h.Value})
			}
			out = append(out, c)
			if m.Offset >= ends[p]-1 {
				break
			}
		}
		if err := r.Close(); err != nil {
			t.Errorf("close reader: %v", err)
		}
	}
	return out
}

func TestKafkaGoCodecs(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	for i, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			topic := topicName("kafkago", codec)
			kafkagoCreate(t, ctx, addr, topic, 3)
			produced := kafkagoProduce(t, ctx, addr, topic, codec, genRecords(uint64(300+i), 200))
			checkProducedOffsets(t, produced)
			ends := kafkagoEnds(t, ctx, addr, topic, 3)
			consumed := kafkagoConsume(t, ctx, addr, topic, ends)
			checkConsumed(t, 3, produced, consumed, ends, checkOpts{})
		})
	}
}

// TestKafkaGoConnBatch reads a partition with the low-level kafka.Conn API:
// DialLeader, ReadBatch from offset 0, as tools built on kafka-go do.
func TestKafkaGoConnBatch(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	topic := topicName("kafkago", "conn")
	kafkagoCreate(t, ctx, addr, topic, 1)
	recs := genRecords(31, 100)
	produced := kafkagoProduce(t, ctx, addr, topic, "zstd", recs)
	checkProducedOffsets(t, produced)

	conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, 0)
	if err != nil {
		t.Fatalf("DialLeader: %v", err)
	}
	defer conn.Close()
	first, last, err := conn.ReadOffsets()
	if err != nil || first != 0 || last != int64(len(recs)) {
		t.Fatalf("ReadOffsets: first %d last %d err %v, want 0 and %d", first, last, err, len(recs))
	}
	if _, err := conn.Seek(0, kafka.SeekAbsolute); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	var consumed []rec
	deadline, _ := ctx.Deadline()
	for len(consumed) < len(recs) && time.Now().Before(deadline) {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		batch := conn.ReadBatch(1, 1<<20)
		for {
			m, err := batch.ReadMessage()
			if err != nil {
				break
			}
			c := rec{Key: m.Key, Value: m.Value, Timestamp: m.Time, Partition: int32(m.Partition), Offset: m.Offset}
			for _, h := range m.Headers {
				c.Headers = append(c.Headers, hdr{Key: h.Key, Value: h.Value})
			}
			consumed = append(consumed, c)
		}
		if err := batch.Close(); err != nil {
			t.Fatalf("batch after %d records: %v", len(consumed), err)
		}
		if hw := batch.HighWaterMark(); hw != int64(len(recs)) {
			t.Errorf("batch high watermark %d, want %d", hw, len(recs))
		}
	}
	checkConsumed(t, 1, produced, consumed, map[int32]int64{0: last}, checkOpts{})
}

// kafka-go's Client.Fetch sends session id -1 and epoch -1: a full fetch
// without a session, which Kafka serves. And a fetch whose partition has
// an error is answered at once, not after max_wait: kafka-go's Conn asks
// for an offset out of range with a wait of the read deadline.
func TestKafkaGoClientFetch(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	topic := topicName("kafkago", "client-fetch")
	kafkagoCreate(t, ctx, addr, topic, 1)
	produced := kafkagoProduce(t, ctx, addr, topic, "", genRecords(32, 20))

	resp, err := kafkagoClient(addr).Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: 0, Offset: 0, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: time.Second})
	if err != nil {
		t.Fatalf("Client.Fetch: %v", err)
	}
	if resp.Error != nil {
		t.Fatalf("Client.Fetch: partition error %v", resp.Error)
	}
	var consumed []rec
	for {
		m, err := resp.Records.ReadRecord()
		if err != nil {
			break
		}
		c := rec{Partition: 0, Offset: m.Offset, Timestamp: m.Time}
		if m.Key != nil {
			c.Key, _ = io.ReadAll(m.Key)
		}
		if m.Value != nil {
			c.Value, _ = io.ReadAll(m.Value)
		}
		for _, h := range m.Headers {
			c.Headers = append(c.Headers, hdr{Key: h.Key, Value: h.Value})
		}
		consumed = append(consumed, c)
	}
	if resp.HighWatermark != int64(len(produced)) {
		t.Fatalf("Client.Fetch: high watermark %d, want %d", resp.HighWatermark, len(produced))
	}
	checkConsumed(t, 1, produced, consumed, map[int32]int64{0: int64(len(produced))}, checkOpts{nilKeyAsEmpty: true})

	// Out of range: the answer must come long before the fetch's wait,
	// which is as long as the read deadline (a minute here).
	conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, 0)
	if err != nil {
		t.Fatalf("DialLeader: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Seek(int64(len(produced))+1000, kafka.SeekAbsolute|kafka.SeekDontCheck); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	start := time.Now()
	batch := conn.ReadBatch(1, 1<<20)
	_, err = batch.ReadMessage()
	batch.Close()
	if !errors.Is(err, kafka.OffsetOutOfRange) {
		t.Fatalf("read past the end: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	// Liveness, not speed: a broker that waits out max_wait takes the
	// whole minute.
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("OFFSET_OUT_OF_RANGE took %v: the broker waited out max_wait", waited)
	}
}

// kafka-go's testDeleteTopics: right after DeleteTopics, ReadPartitions of
// the deleted topics (Metadata with auto-creation allowed, on a
// connection to another topic) returns no partitions. Kafka creates a
// missing topic in the background (AutoTopicCreationManager) and answers
// UNKNOWN_TOPIC_OR_PARTITION meanwhile; it is not created before the
// answer. The topic then appears, as kafka-go's DialLeader waits for.
func TestKafkaGoAutoCreateAfterDelete(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	topic, topic1, topic2 := topicName("kafkago", "conn"), topicName("kafkago", "del1"), topicName("kafkago", "del2")
	kafkagoCreate(t, ctx, addr, topic, 1)
	conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, 0)
	if err != nil {
		t.Fatalf("DialLeader: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := conn.CreateTopics(
		kafka.TopicConfig{Topic: topic1, NumPartitions: 1, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: topic2, NumPartitions: 1, ReplicationFactor: 1},
	); err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if err := conn.DeleteTopics(topic1, topic2); err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	partitions, err := conn.ReadPartitions(topic1, topic2)
	if err != nil {
		t.Fatalf("ReadPartitions: %v", err)
	}
	if len(partitions) != 0 {
		t.Fatalf("ReadPartitions right after DeleteTopics: %d partitions (%v), want none", len(partitions), partitions)
	}

	// The request did ask for auto-creation: the topic comes back.
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := (&kafka.Dialer{}).LookupPartition(waitCtx, "tcp", addr, topic1, 0)
	if err != nil || p.Topic != topic1 || p.ID != 0 || p.Leader.ID != 1 {
		t.Fatalf("LookupPartition %s after auto-creation: %+v, %v", topic1, p, err)
	}
}
