package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go (kgo + kadm): produce/consume with every codec and ack level, the
// idempotent producer, and the admin calls a user reaches for first.

func newKgo(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(20 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newKadm(t *testing.T, addr string) *kadm.Client {
	return kadm.NewClient(newKgo(t, addr))
}

// franzCreate creates topic and fails the test unless the broker confirms it
// with the requested partition count.
func franzCreate(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resps, err := adm.CreateTopics(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	r, err := resps.On(topic, nil)
	if err != nil || r.Err != nil {
		t.Fatalf("CreateTopics %s: %v / %v %s", topic, err, r.Err, r.ErrMessage)
	}
	if r.NumPartitions != partitions {
		t.Fatalf("CreateTopics %s: %d partitions, want %d", topic, r.NumPartitions, partitions)
	}
}

func toKgo(topic string, r rec) *kgo.Record {
	kr := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

func fromKgo(kr *kgo.Record) rec {
	r := rec{Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp, Partition: kr.Partition, Offset: kr.Offset}
	for _, h := range kr.Headers {
		r.Headers = append(r.Headers, hdr{Key: h.Key, Value: h.Value})
	}
	return r
}

// franzProduce produces recs synchronously and returns them with the
// partition and offset each produce result reported. withOffsets=false (for
// acks=0, where the broker sends no response) leaves offsets unknown.
func franzProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, recs []rec, withOffsets bool) []rec {
	t.Helper()
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = toKgo(topic, r)
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	out := make([]rec, len(recs))
	for i, kr := range krs {
		out[i] = recs[i]
		out[i].Partition = kr.Partition
		out[i].Offset = -1
		if withOffsets {
			out[i].Offset = kr.Offset
		}
	}
	return out
}

// franzConsume reads topic from the start of every partition until n records
// arrived, without a consumer group.
func franzConsume(t *testing.T, ctx context.Context, addr, topic string, n int) []rec {
	t.Helper()
	cl := newKgo(t, addr,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	var out []rec
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: got %d of %d records before timeout", topic, len(out), n)
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Errorf("consume %s[%d]: %v", tp, p, err)
		})
		fs.EachRecord(func(kr *kgo.Record) { out = append(out, fromKgo(kr)) })
	}
	return out
}

// franzEnds returns every partition's end offset (high watermark).
func franzEnds(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets %s: %v", topic, err)
	}
	ends := map[int32]int64{}
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("ListEndOffsets %s[%d]: %v", topic, o.Partition, o.Err)
		}
		ends[o.Partition] = o.Offset
	})
	return ends
}

func franzCompression(codec string) kgo.CompressionCodec {
	switch codec {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

func TestFranzCodecs(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	for i, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			topic := topicName("franz", codec)
			franzCreate(t, ctx, adm, topic, 3, nil)
			prod := newKgo(t, addr,
				kgo.ProducerBatchCompression(franzCompression(codec)),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerLinger(5*time.Millisecond),
			)
			produced := franzProduce(t, ctx, prod, topic, genRecords(uint64(100+i), 200), true)
			checkProducedOffsets(t, produced)
			consumed := franzConsume(t, ctx, addr, topic, len(produced))
			checkConsumed(t, 3, produced, consumed, franzEnds(t, ctx, adm, topic), checkOpts{})
		})
	}
}

func TestFranzAcks(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	for _, tc := range []struct {
		name string
		acks kgo.Acks
	}{
		{"acks0", kgo.NoAck()},
		{"acks1", kgo.LeaderAck()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := topicName("franz", tc.name)
			franzCreate(t, ctx, adm, topic, 3, nil)
			// Idempotence needs acks=all, so it goes for weaker acks.
			prod := newKgo(t, addr, kgo.RequiredAcks(tc.acks), kgo.DisableIdempotentWrite())
			withOffsets := tc.name != "acks0"
			produced := franzProduce(t, ctx, prod, topic, genRecords(7, 200), withOffsets)
			if withOffsets {
				checkProducedOffsets(t, produced)
			}
			consumed := franzConsume(t, ctx, addr, topic, len(produced))
			checkConsumed(t, 3, produced, consumed, franzEnds(t, ctx, adm, topic), checkOpts{})
		})
	}
}

// TestFranzIdempotent produces 1000 records with kgo's default idempotent
// producer (acks=all) and checks the offsets are contiguous, and that the
// broker tracked the producer's sequence numbers.
func TestFranzIdempotent(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "idempotent")
	franzCreate(t, ctx, adm, topic, 3, nil)
	prod := newKgo(t, addr, kgo.ProducerBatchMaxBytes(16<<10)) // many small batches
	produced := franzProduce(t, ctx, prod, topic, genRecords(42, 1000), true)
	checkProducedOffsets(t, produced)
	consumed := franzConsume(t, ctx, addr, topic, len(produced))
	ends := franzEnds(t, ctx, adm, topic)
	checkConsumed(t, 3, produced, consumed, ends, checkOpts{})

	// One producer id wrote every partition, and its last sequence in a
	// partition is the number of records it wrote there minus one.
	dps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
	if err != nil {
		t.Fatalf("DescribeProducers: %v", err)
	}
	pids := map[int64]bool{}
	dps.EachPartition(func(p kadm.DescribedProducersPartition) {
		if p.Err != nil {
			t.Errorf("DescribeProducers %s[%d]: %v", p.Topic, p.Partition, p.Err)
			return
		}
		if len(p.ActiveProducers) != 1 {
			t.Errorf("partition %d: %d active producers, want 1", p.Partition, len(p.ActiveProducers))
			return
		}
		for _, ap := range p.ActiveProducers {
			pids[ap.ProducerID] = true
			if want := int32(ends[p.Partition] - 1); ap.LastSequence != want {
				t.Errorf("partition %d: last sequence %d, want %d", p.Partition, ap.LastSequence, want)
			}
		}
	})
	if len(pids) != 1 {
		t.Errorf("producer ids across partitions: %v, want exactly one", pids)
	}
}

// TestFranzListOffsets checks ListOffsets for the earliest, latest and
// by-timestamp specs against records whose offsets and timestamps are known.
func TestFranzListOffsets(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "listoffsets")
	franzCreate(t, ctx, adm, topic, 3, nil)
	produced := franzProduce(t, ctx, newKgo(t, addr), topic, genRecords(9, 200), true)
	checkProducedOffsets(t, produced)

	counts := map[int32]int64{}
	for _, r := range produced {
		counts[r.Partition]++
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListStartOffsets: %v", err)
	}
	for p := range int32(3) {
		if o, ok := starts.Lookup(topic, p); !ok || o.Err != nil || o.Offset != 0 {
			t.Errorf("start offset of partition %d: %+v (found %v), want 0", p, o, ok)
		}
	}
	ends := franzEnds(t, ctx, adm, topic)
	for p := range int32(3) {
		if ends[p] != counts[p] {
			t.Errorf("end offset of partition %d: %d, want %d", p, ends[p], counts[p])
		}
	}

	// For each query time, Kafka answers with the first record whose
	// timestamp is >= the time; kadm reports the end offset (timestamp -1)
	// when there is none.
	first := produced[0].Timestamp.UnixMilli()
	last := produced[len(produced)-1].Timestamp.UnixMilli()
	for _, ms := range []int64{first - 1000, first, produced[100].Timestamp.UnixMilli() - 5, produced[137].Timestamp.UnixMilli(), last, last + 1} {
		got, err := adm.ListOffsetsAfterMilli(ctx, ms, topic)
		if err != nil {
			t.Fatalf("ListOffsetsAfterMilli(%d): %v", ms, err)
		}
		for p := range int32(3) {
			wantOff, wantTS := ends[p], int64(-1)
			for _, r := range produced { // produce order is offset order per partition
				if r.Partition == p && r.Timestamp.UnixMilli() >= ms {
					wantOff, wantTS = r.Offset, r.Timestamp.UnixMilli()
					break
				}
			}
			o, ok := got.Lookup(topic, p)
			if !ok || o.Err != nil || o.Offset != wantOff || o.Timestamp != wantTS {
				t.Errorf("ListOffsetsAfterMilli(first%+d ms) partition %d: offset %d ts %d err %v (found %v), want offset %d ts %d",
					ms-first, p, o.Offset, o.Timestamp, o.Err, ok, wantOff, wantTS)
			}
		}
	}
}

// TestFranzTopicConfigs checks DescribeConfigs on a topic: an override set at
// creation is reported as a dynamic topic config, untouched keys report
// Kafka's defaults.
func TestFranzTopicConfigs(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "configs")
	hour := "3600000"
	franzCreate(t, ctx, adm, topic, 3, map[string]*string{"retention.ms": &hour})

	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v / %v", topic, err, rc.Err)
	}
	byKey := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		byKey[c.Key] = c
	}
	for _, want := range []struct {
		key, value string
		source     kmsg.ConfigSource
	}{
		{"retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig},
		{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig},
		{"retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig},
		{"max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig},
	} {
		c, ok := byKey[want.key]
		if !ok {
			t.Errorf("config %s missing from DescribeConfigs", want.key)
			continue
		}
		// A default may come from the code or the broker's properties
		// file; either way it is not an override on the topic.
		wrongSource := c.Source != want.source
		if want.source == kmsg.ConfigSourceDefaultConfig {
			wrongSource = c.Source == kmsg.ConfigSourceDynamicTopicConfig
		}
		if c.MaybeValue() != want.value || wrongSource {
			t.Errorf("config %s = %q (source %v), want %q (source %v)", want.key, c.MaybeValue(), c.Source, want.value, want.source)
		}
	}

	// A second topic without overrides reports the 7-day default.
	plain := topicName("franz", "configs-plain")
	franzCreate(t, ctx, adm, plain, 1, nil)
	rcs, err = adm.DescribeTopicConfigs(ctx, plain)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	rc, _ = rcs.On(plain, nil)
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			found = true
			if c.MaybeValue() != "604800000" || c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("retention.ms on plain topic = %q (source %v), want the 604800000 default", c.MaybeValue(), c.Source)
			}
		}
	}
	if !found {
		t.Errorf("retention.ms missing from DescribeConfigs of %s", plain)
	}
}

// TestFranzDeleteTopic deletes a topic with data and checks that metadata
// then reports it unknown.
func TestFranzDeleteTopic(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "delete")
	franzCreate(t, ctx, adm, topic, 3, nil)
	franzProduce(t, ctx, newKgo(t, addr), topic, genRecords(3, 50), true)

	resps, err := adm.DeleteTopics(ctx, topic)
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	if r, err := resps.On(topic, nil); err != nil || r.Err != nil {
		t.Fatalf("DeleteTopics %s: %v / %v", topic, err, r.Err)
	}
	// Kafka answers DeleteTopics once the controller committed the deletion;
	// a broker may apply it a moment later, so allow a short settle time.
	var td kadm.TopicDetail
	for deadline := time.Now().Add(5 * time.Second); ; {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatalf("Metadata: %v", err)
		}
		td = md.Topics[topic]
		if errors.Is(td.Err, kerr.UnknownTopicOrPartition) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("Metadata after delete: topic err %v with %d partitions, want UNKNOWN_TOPIC_OR_PARTITION", td.Err, len(td.Partitions))
	}

	// Recreating the name gives an empty topic again. A fresh admin client
	// asks, because kadm caches metadata that still names the old topic.
	franzCreate(t, ctx, adm, topic, 3, nil)
	ends := franzEnds(t, ctx, newKadm(t, addr), topic)
	for p := range int32(3) {
		if ends[p] != 0 {
			t.Errorf("recreated topic partition %d: end offset %d, want 0", p, ends[p])
		}
	}
}

// TestFranzCreatePartitions grows a topic from 3 to 5 partitions, checks
// metadata, and produces to and consumes from a new partition.
func TestFranzCreatePartitions(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "partitions")
	franzCreate(t, ctx, adm, topic, 3, nil)

	resps, err := adm.CreatePartitions(ctx, 2, topic) // 3 + 2
	if err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	if r, err := resps.On(topic, nil); err != nil || r.Err != nil {
		t.Fatalf("CreatePartitions %s: %v / %v %s", topic, err, r.Err, r.ErrMessage)
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	td := md.Topics[topic]
	if td.Err != nil || len(td.Partitions) != 5 {
		t.Fatalf("after growing: err %v, %d partitions, want 5", td.Err, len(td.Partitions))
	}
	for p := range int32(5) {
		pd, ok := td.Partitions[p]
		if !ok || pd.Err != nil || pd.Leader < 0 {
			t.Errorf("partition %d: %+v (present %v), want a leader", p, pd, ok)
		}
	}
	// Shrinking is invalid in Kafka: the request succeeds, the topic's
	// answer carries INVALID_PARTITIONS, and the topic keeps 5 partitions.
	resps, err = adm.UpdatePartitions(ctx, 2, topic)
	if err != nil {
		t.Fatalf("UpdatePartitions 5 -> 2: %v; want an answer with INVALID_PARTITIONS", err)
	}
	if r, err := resps.On(topic, nil); err != nil || !errors.Is(r.Err, kerr.InvalidPartitions) {
		t.Errorf("shrinking 5 -> 2: %v / %v, want INVALID_PARTITIONS", err, r.Err)
	}
	if md, err := adm.Metadata(ctx, topic); err != nil || len(md.Topics[topic].Partitions) != 5 {
		t.Errorf("after refusing to shrink: %v, %d partitions, want 5", err, len(md.Topics[topic].Partitions))
	}

	prod := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	kr := &kgo.Record{Topic: topic, Partition: 4, Value: []byte("in a new partition")}
	if err := prod.ProduceSync(ctx, kr).FirstErr(); err != nil {
		t.Fatalf("produce to partition 4: %v", err)
	}
	if kr.Partition != 4 || kr.Offset != 0 {
		t.Errorf("produced to partition %d offset %d, want partition 4 offset 0", kr.Partition, kr.Offset)
	}
	cons := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {4: kgo.NewOffset().AtStart()},
	}))
	fs := cons.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("consume partition 4: %v", err)
	}
	recs := fs.Records()
	if len(recs) != 1 || recs[0].Partition != 4 || recs[0].Offset != 0 || string(recs[0].Value) != "in a new partition" {
		t.Fatalf("consumed from partition 4: %d records %v, want the one produced", len(recs), recs)
	}
}
