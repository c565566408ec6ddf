package io.samsa.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Client factories and the bounded poll loop every test uses. */
final class Clients {
  private Clients() {}

  static KafkaProducer<byte[], byte[]> producer(String bootstrap, Properties extra) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20000);
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15000);
    // Batch a little so compressed batches hold many records, as in production.
    p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
    p.putAll(extra);
    return new KafkaProducer<>(p);
  }

  static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, Properties extra) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15000);
    p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
    p.putAll(extra);
    return new KafkaConsumer<>(p);
  }

  static Properties props(Object... kv) {
    Properties p = new Properties();
    for (int i = 0; i < kv.length; i += 2) {
      p.put(kv[i], kv[i + 1]);
    }
    return p;
  }

  /**
   * Polls until {@code want} records arrived or the deadline passed, and asserts
   * the count: a broker that serves too few (or too many) records fails here
   * with the number it did serve.
   */
  static List<ConsumerRecord<byte[], byte[]>> pollExactly(
      KafkaConsumer<byte[], byte[]> c, int want, Duration timeout) {
    List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (got.size() < want && System.nanoTime() < deadline) {
      c.poll(Duration.ofMillis(200)).forEach(got::add);
    }
    // One more short poll: records beyond `want` would be a duplicate bug.
    c.poll(Duration.ofMillis(200)).forEach(got::add);
    assertEquals(want, got.size(), "records consumed");
    return got;
  }
}
