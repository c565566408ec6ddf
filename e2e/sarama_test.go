package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// IBM/sarama: ClusterAdmin to create topics, SyncProducer with every codec,
// partition consumers (no groups) from the oldest offset.

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	// zstd needs 2.1+; 3.6 also makes sarama use record batch v2 with
	// headers and the newer Produce/Fetch versions.
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "samsa-e2e-sarama"
	// Short network timeouts keep a hung broker from outliving the test.
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	cfg.Metadata.Retry.Max = 5
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Timeout = 10 * time.Second
	cfg.Admin.Retry.Max = 2
	// CreateTopics' timeout_ms: sarama's 3 s default is less than a topic
	// creation takes on a machine loaded many times over (the broker then
	// answers REQUEST_TIMED_OUT, as Kafka does, though the topic is made).
	cfg.Admin.Timeout = 10 * time.Second
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	return cfg
}

func saramaCodec(codec string) sarama.CompressionCodec {
	switch codec {
	case "gzip":
		return sarama.CompressionGZIP
	case "snappy":
		return sarama.CompressionSnappy
	case "lz4":
		return sarama.CompressionLZ4
	case "zstd":
		return sarama.CompressionZSTD
	}
	return sarama.CompressionNone
}

func saramaCreate(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	saramaCreateWith(t, saramaConfig(), addr, topic, partitions)
}

// saramaCreateWith is saramaCreate with a given client configuration.
func saramaCreateWith(t *testing.T, cfg *sarama.Config, addr, topic string, partitions int32) {
	t.Helper()
	adm, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != int(partitions) {
		t.Fatalf("DescribeTopics %s after create: %v %+v, want %d partitions", topic, err, md, partitions)
	}
}

// saramaProduce sends recs with one SyncProducer.SendMessages call and
// returns them with the partition and offset sarama reported for each.
func saramaProduce(t *testing.T, addr, topic, codec string, recs []rec) []rec {
	t.Helper()
	return saramaProduceWith(t, saramaConfig(), addr, topic, codec, recs)
}

// saramaProduceWith is saramaProduce starting from a given client
// configuration.
func saramaProduceWith(t *testing.T, cfg *sarama.Config, addr, topic, codec string, recs []rec) []rec {
	t.Helper()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Compression = saramaCodec(codec)
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer prod.Close()

	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(r.Value), Timestamp: r.Timestamp}
		if r.Key != nil { // a nil Encoder, not an empty one, produces a null key
			m.Key = sarama.ByteEncoder(r.Key)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs[i] = m
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("SendMessages to %s: %v", topic, err)
	}
	out := make([]rec, len(recs))
	for i, m := range msgs {
		out[i] = recs[i]
		out[i].Partition, out[i].Offset = m.Partition, m.Offset
	}
	return out
}

// saramaEnds returns every partition's newest offset (high watermark).
func saramaEnds(t *testing.T, addr, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	return saramaEndsWith(t, saramaConfig(), addr, topic, partitions)
}

// saramaEndsWith is saramaEnds with a given client configuration.
func saramaEndsWith(t *testing.T, cfg *sarama.Config, addr, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	cl, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer cl.Close()
	ends := map[int32]int64{}
	for p := range partitions {
		off, err := cl.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("GetOffset(%s, %d, newest): %v", topic, p, err)
		}
		ends[p] = off
	}
	return ends
}

// saramaConsume reads each partition from OffsetOldest up to ends[p] with a
// partition consumer.
func saramaConsume(t *testing.T, ctx context.Context, addr, topic string, ends map[int32]int64) []rec {
	t.Helper()
	return saramaConsumeWith(t, ctx, saramaConfig(), addr, topic, ends)
}

// saramaConsumeWith is saramaConsume starting from a given client
// configuration.
func saramaConsumeWith(t *testing.T, ctx context.Context, cfg *sarama.Config, addr, topic string, ends map[int32]int64) []rec {
	t.Helper()
	cfg.Consumer.Return.Errors = true
	cons, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer cons.Close()
	var out []rec
	for p := int32(0); p < int32(len(ends)); p++ {
		if ends[p] == 0 {
			continue
		}
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition(%s, %d): %v", topic, p, err)
		}
		for done := false; !done; {
			select {
			case m := <-pc.Messages():
				r := rec{Key: m.Key, Value: m.Value, Timestamp: m.Timestamp, Partition: m.Partition, Offset: m.Offset}
				for _, h := range m.Headers {
					r.Headers = append(r.Headers, hdr{Key: string(h.Key), Value: h.Value})
				}
				out = append(out, r)
				done = m.Offset >= ends[p]-1
			case err := <-pc.Errors():
				t.Errorf("consume %s[%d]: %v", topic, p, err)
			case <-ctx.Done():
				pc.Close()
				t.Fatalf("consume %s[%d]: timed out with %d records read in total", topic, p, len(out))
			}
		}
		pc.Close()
	}
	return out
}

func TestSaramaCodecs(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	for i, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			topic := topicName("sarama", codec)
			saramaCreate(t, addr, topic, 3)
			produced := saramaProduce(t, addr, topic, codec, genRecords(uint64(200+i), 200))
			checkProducedOffsets(t, produced)
			ends := saramaEnds(t, addr, topic, 3)
			consumed := saramaConsume(t, ctx, addr, topic, ends)
			checkConsumed(t, 3, produced, consumed, ends, checkOpts{})
		})
	}
}

// TestSaramaOffsetByTime checks sarama's Client.GetOffset with a timestamp:
// the first offset whose timestamp is at or after it.
func TestSaramaOffsetByTime(t *testing.T) {
	addr := startBroker(t)
	topic := topicName("sarama", "bytime")
	saramaCreate(t, addr, topic, 1)
	recs := genRecords(5, 50)
	for i := range recs {
		recs[i].Key = nil // keyless: any partition is 0 here
	}
	produced := saramaProduce(t, addr, topic, "none", recs)
	cl, err := sarama.NewClient([]string{addr}, saramaConfig())
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer cl.Close()
	for _, tc := range []struct {
		ms   int64
		want int64
	}{
		{produced[0].Timestamp.UnixMilli() - 1, 0},
		{produced[20].Timestamp.UnixMilli(), 20},
		{produced[20].Timestamp.UnixMilli() + 1, 21},
		{produced[49].Timestamp.UnixMilli() + 1, -1}, // Kafka: no such record
	} {
		got, err := cl.GetOffset(topic, 0, tc.ms)
		if err != nil || got != tc.want {
			t.Errorf("GetOffset(time %d): %d, %v; want %d", tc.ms, got, err, tc.want)
		}
	}
}
