package io.samsa.interop;

import static io.samsa.interop.Clients.consumer;
import static io.samsa.interop.Clients.pollExactly;
import static io.samsa.interop.Clients.producer;
import static io.samsa.interop.Clients.props;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** KafkaProducer and KafkaConsumer (manual assignment) against Samsa. */
@ExtendWith(ResultRecorder.class)
class ProducerConsumerTest {
  @RegisterExtension static final SamsaBroker broker = new SamsaBroker();

  private static final Duration WAIT = Duration.ofSeconds(20);
  // A fixed base far from "now" proves the broker keeps CreateTime as sent.
  private static final long BASE_TS = 1_700_000_000_000L;

  /** The records every round trip sends: keys (one null), 0-2 headers, explicit timestamps. */
  private static List<ProducerRecord<byte[], byte[]>> sample(String topic, int n) {
    List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      byte[] key = i == 3 ? null : ("key-" + i).getBytes(UTF_8);
      // Repetitive values so every codec really compresses something.
      byte[] value = ("value-" + i + "-" + "x".repeat(i % 40)).getBytes(UTF_8);
      List<Header> headers = new ArrayList<>();
      for (int h = 0; h < i % 3; h++) {
        headers.add(new RecordHeader("h" + h, ("hv-" + i + "-" + h).getBytes(UTF_8)));
      }
      if (i == 5) {
        headers.add(new RecordHeader("null-header", null));
      }
      out.add(new ProducerRecord<>(topic, 0, BASE_TS + i * 10L, key, value, headers));
    }
    return out;
  }

  private static void assertSame(
      ProducerRecord<byte[], byte[]> want, ConsumerRecord<byte[], byte[]> got, long offset) {
    assertEquals(offset, got.offset(), "offset");
    assertArrayEquals(want.key(), got.key(), "key at offset " + offset);
    assertArrayEquals(want.value(), got.value(), "value at offset " + offset);
    assertEquals(want.timestamp().longValue(), got.timestamp(), "timestamp at offset " + offset);
    assertEquals(TimestampType.CREATE_TIME, got.timestampType());
    Header[] wh = want.headers().toArray();
    Header[] gh = got.headers().toArray();
    assertEquals(wh.length, gh.length, "header count at offset " + offset);
    for (int i = 0; i < wh.length; i++) {
      assertEquals(wh[i].key(), gh[i].key());
      assertArrayEquals(wh[i].value(), gh[i].value());
    }
  }

  /** Produces the sample, checks the offsets the broker acknowledged, reads it back. */
  private static void roundTrip(String topic, KafkaProducer<byte[], byte[]> p, boolean acked)
      throws Exception {
    List<ProducerRecord<byte[], byte[]>> sent = sample(topic, 60);
    List<Future<RecordMetadata>> acks = new ArrayList<>();
    for (ProducerRecord<byte[], byte[]> r : sent) {
      acks.add(p.send(r));
    }
    p.flush();
    for (int i = 0; i < acks.size(); i++) {
      RecordMetadata md = acks.get(i).get(10, TimeUnit.SECONDS);
      // acks=0: the producer never hears an offset back and reports -1.
      assertEquals(acked ? i : -1, md.offset(), "acknowledged offset of record " + i);
      assertEquals(0, md.partition());
    }
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), props())) {
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      List<ConsumerRecord<byte[], byte[]>> got = pollExactly(c, sent.size(), WAIT);
      for (int i = 0; i < sent.size(); i++) {
        assertSame(sent.get(i), got.get(i), i);
      }
      assertEquals(sent.size(), c.position(tp));
    }
  }

  @ParameterizedTest(name = "compression={0}")
  @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
  @Feature("produce+consume (idempotent, acks=all)")
  void compression(String codec) throws Exception {
    String topic = "compression-" + codec;
    broker.createTopic(topic, 1, Map.of());
    // The 4.x producer defaults: enable.idempotence=true, acks=all.
    try (KafkaProducer<byte[], byte[]> p =
        producer(broker.bootstrap(), props("compression.type", codec))) {
      roundTrip(topic, p, true);
    }
  }

  @ParameterizedTest(name = "acks={0}")
  @ValueSource(strings = {"0", "1", "all"})
  @Feature("produce+consume (non-idempotent)")
  void acks(String acks) throws Exception {
    String topic = "acks-" + acks;
    broker.createTopic(topic, 1, Map.of());
    try (KafkaProducer<byte[], byte[]> p =
        producer(
            broker.bootstrap(),
            props("acks", acks, "enable.idempotence", "false", "compression.type", "lz4"))) {
      roundTrip(topic, p, !acks.equals("0"));
    }
  }

  @Test
  @Feature("idempotent producer, 5 in flight, many batches")
  void idempotentManyBatches() throws Exception {
    String topic = "idempotent";
    broker.createTopic(topic, 1, Map.of());
    int n = 5000;
    try (KafkaProducer<byte[], byte[]> p =
        producer(
            broker.bootstrap(),
            props(
                "enable.idempotence", "true",
                "max.in.flight.requests.per.connection", "5",
                "batch.size", "2048",
                "linger.ms", "0"))) {
      List<Future<RecordMetadata>> acks = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        acks.add(p.send(new ProducerRecord<>(topic, 0, null, ("v" + i).getBytes(UTF_8))));
      }
      p.flush();
      for (int i = 0; i < n; i++) {
        assertEquals(i, acks.get(i).get(10, TimeUnit.SECONDS).offset());
      }
    }
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), props())) {
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      List<ConsumerRecord<byte[], byte[]>> got = pollExactly(c, n, WAIT);
      for (int i = 0; i < n; i++) {
        assertEquals(i, got.get(i).offset());
        assertEquals("v" + i, new String(got.get(i).value(), UTF_8));
      }
    }
  }

  @Test
  @Feature("keyed records over 3 partitions")
  void keyedPartitions() throws Exception {
    String topic = "keyed";
    broker.createTopic(topic, 3, Map.of());
    Map<String, Integer> partitionOf = new HashMap<>();
    Map<Integer, List<String>> sentPerPartition = new HashMap<>();
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      for (int i = 0; i < 90; i++) {
        String key = "user-" + (i % 9);
        String value = key + ":" + i;
        RecordMetadata md =
            p.send(new ProducerRecord<>(topic, key.getBytes(UTF_8), value.getBytes(UTF_8)))
                .get(10, TimeUnit.SECONDS);
        Integer before = partitionOf.putIfAbsent(key, md.partition());
        if (before != null) {
          assertEquals(before.intValue(), md.partition(), "one key, one partition");
        }
        sentPerPartition.computeIfAbsent(md.partition(), k -> new ArrayList<>()).add(value);
      }
    }
    List<TopicPartition> tps =
        List.of(
            new TopicPartition(topic, 0), new TopicPartition(topic, 1), new TopicPartition(topic, 2));
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), props())) {
      c.assign(tps);
      c.seekToBeginning(tps);
      Map<Integer, List<String>> got = new HashMap<>();
      for (ConsumerRecord<byte[], byte[]> r : pollExactly(c, 90, WAIT)) {
        got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(new String(r.value(), UTF_8));
      }
      assertEquals(sentPerPartition, got, "per-partition order");
    }
  }

  @Test
  @Feature("large record (900 KiB)")
  void largeRecord() throws Exception {
    String topic = "large";
    broker.createTopic(topic, 1, Map.of());
    byte[] value = new byte[900 * 1024];
    for (int i = 0; i < value.length; i++) {
      value[i] = (byte) (i * 31 + (i >> 8));
    }
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      assertEquals(0, p.send(new ProducerRecord<>(topic, 0, null, value)).get().offset());
      assertEquals(1, p.send(new ProducerRecord<>(topic, 0, null, "after".getBytes(UTF_8))).get().offset());
    }
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), props())) {
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      List<ConsumerRecord<byte[], byte[]>> got = pollExactly(c, 2, WAIT);
      assertTrue(Arrays.equals(value, got.get(0).value()), "900 KiB value intact");
      assertEquals("after", new String(got.get(1).value(), UTF_8));
    }
  }

  @Test
  @Feature("LogAppendTime topic")
  void logAppendTime() throws Exception {
    String topic = "log-append-time";
    broker.createTopic(topic, 1, Map.of("message.timestamp.type", "LogAppendTime"));
    long before = System.currentTimeMillis();
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      RecordMetadata md =
          p.send(new ProducerRecord<>(topic, 0, BASE_TS, null, "v".getBytes(UTF_8))).get();
      // The producer learns the broker's append time from the Produce response.
      assertTrue(md.timestamp() >= before, "append time " + md.timestamp() + " >= " + before);
    }
    long after = System.currentTimeMillis();
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), props())) {
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      ConsumerRecord<byte[], byte[]> r = pollExactly(c, 1, WAIT).get(0);
      assertEquals(TimestampType.LOG_APPEND_TIME, r.timestampType());
      assertTrue(r.timestamp() >= before && r.timestamp() <= after, "timestamp " + r.timestamp());
    }
  }

  /** Writes 20 records with timestamps BASE_TS + 1000*i to a fresh topic. */
  private static TopicPartition timedTopic(String topic) throws Exception {
    broker.createTopic(topic, 1, Map.of());
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props("batch.size", "256"))) {
      for (int i = 0; i < 20; i++) {
        p.send(new ProducerRecord<>(topic, 0, BASE_TS + 1000L * i, null, ("t" + i).getBytes(UTF_8)));
      }
      p.flush();
    }
    return new TopicPartition(topic, 0);
  }

  @Test
  @Feature("consumer offsetsForTimes")
  void offsetsForTimes() throws Exception {
    TopicPartition tp = timedTopic("times");
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), props())) {
      // The first offset whose timestamp is >= the target.
      Map<TopicPartition, OffsetAndTimestamp> m = c.offsetsForTimes(Map.of(tp, BASE_TS + 2500));
      assertEquals(3, m.get(tp).offset());
      assertEquals(BASE_TS + 3000, m.get(tp).timestamp());
      m = c.offsetsForTimes(Map.of(tp, BASE_TS + 7000));
      assertEquals(7, m.get(tp).offset());
      m = c.offsetsForTimes(Map.of(tp, 0L));
      assertEquals(0, m.get(tp).offset());
      assertEquals(BASE_TS, m.get(tp).timestamp());
      // Past the newest timestamp there is no such offset.
      m = c.offsetsForTimes(Map.of(tp, BASE_TS + 60_000));
      assertNull(m.get(tp));
    }
  }

  @Test
  @Feature("consumer beginningOffsets/endOffsets")
  void beginningAndEndOffsets() throws Exception {
    TopicPartition tp = timedTopic("begin-end");
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), props())) {
      assertEquals(Map.of(tp, 0L), c.beginningOffsets(List.of(tp)));
      assertEquals(Map.of(tp, 20L), c.endOffsets(List.of(tp)));
    }
  }

  @Test
  @Feature("consumer seek")
  void seek() throws Exception {
    TopicPartition tp = timedTopic("seek");
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), props())) {
      c.assign(List.of(tp));
      c.seek(tp, 7);
      List<ConsumerRecord<byte[], byte[]>> got = pollExactly(c, 13, WAIT);
      assertEquals(7, got.get(0).offset());
      assertEquals("t7", new String(got.get(0).value(), UTF_8));
      assertEquals(BASE_TS + 7000, got.get(0).timestamp());
      c.seekToEnd(List.of(tp));
      assertEquals(20, c.position(tp));
      c.seek(tp, 19);
      assertEquals("t19", new String(pollExactly(c, 1, WAIT).get(0).value(), UTF_8));
    }
  }
}
