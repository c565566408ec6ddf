package io.samsa.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka Streams word count with exactly_once_v2 against Samsa. One application
 * exercises most of the broker at once: CreateTopics with configs for its
 * repartition and changelog topics, a classic consumer group with the Streams
 * assignor, a transactional producer per thread that commits consumer offsets
 * through sendOffsetsToTransaction (TxnOffsetCommit v3 with member id and
 * generation), and read_committed fetches of its own repartition topic.
 */
@ExtendWith(ResultRecorder.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class StreamsTest {
  @RegisterExtension static final SamsaBroker broker = new SamsaBroker();

  private static final String APP = "interop-wordcount";
  private static final String IN = "wordcount-in";
  private static final String OUT = "wordcount-out";
  private static final String STORE = "counts-store";

  private static final List<String> TEXT =
      List.of(
          "the quick brown fox jumps over the lazy dog",
          "The dog barks and the fox runs",
          "a lazy afternoon for a quick brown dog",
          "fox",
          "dog dog dog");

  /** Counted by hand from TEXT, not by re-running the topology's logic. */
  private static final Map<String, Long> COUNTS =
      Map.ofEntries(
          Map.entry("the", 4L),
          Map.entry("quick", 2L),
          Map.entry("brown", 2L),
          Map.entry("fox", 3L),
          Map.entry("jumps", 1L),
          Map.entry("over", 1L),
          Map.entry("lazy", 2L),
          Map.entry("dog", 6L),
          Map.entry("barks", 1L),
          Map.entry("and", 1L),
          Map.entry("runs", 1L),
          Map.entry("a", 2L),
          Map.entry("afternoon", 1L),
          Map.entry("for", 1L));

  @Test
  @Order(1)
  @Feature(value = "streams word count, exactly_once_v2, state store", issue = "4")
  void wordCount(@TempDir Path stateDir) throws Exception {
    broker.createTopic(IN, 2, Map.of());
    broker.createTopic(OUT, 2, Map.of());

    StreamsBuilder b = new StreamsBuilder();
    b.stream(IN, Consumed.with(Serdes.String(), Serdes.String()))
        .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
        .groupBy((k, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(STORE))
        .toStream()
        .to(OUT, Produced.with(Serdes.String(), Serdes.Long()));

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    // replication.factor is left at Streams' default (-1: the broker's
    // default.replication.factor), as a real deployment would have it.
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10000);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 500);

    try (KafkaStreams streams = new KafkaStreams(b.build(), p)) {
      streams.start();
      produceText();
      Map<String, Long> latest = readCounts(Duration.ofSeconds(60));
      assertEquals(COUNTS, latest, "latest committed count per word in " + OUT);

      ReadOnlyKeyValueStore<String, Long> store =
          streams.store(
              StoreQueryParameters.fromNameAndType(
                  STORE, QueryableStoreTypes.<String, Long>keyValueStore()));
      assertEquals(6L, store.get("dog"));
      assertEquals(4L, store.get("the"));
      assertEquals(1L, store.get("afternoon"));
      streams.close(Duration.ofSeconds(20));
    }
  }

  @Test
  @Order(2)
  @Feature(value = "streams internal topics (repartition, changelog) via CreateTopics", issue = "4")
  void internalTopics() throws Exception {
    String repartition = APP + "-" + STORE + "-repartition";
    String changelog = APP + "-" + STORE + "-changelog";
    try (Admin admin = broker.admin()) {
      Set<String> names = admin.listTopics().names().get(15, TimeUnit.SECONDS);
      assertTrue(names.containsAll(Set.of(repartition, changelog)), "topics: " + names);
      // Both co-partitioned with the 2-partition input.
      var desc =
          admin
              .describeTopics(List.of(repartition, changelog))
              .allTopicNames()
              .get(15, TimeUnit.SECONDS);
      assertEquals(2, desc.get(repartition).partitions().size());
      assertEquals(2, desc.get(changelog).partitions().size());
      ConfigResource rr = new ConfigResource(ConfigResource.Type.TOPIC, repartition);
      ConfigResource cr = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
      Map<ConfigResource, Config> cfg =
          admin.describeConfigs(List.of(rr, cr)).all().get(15, TimeUnit.SECONDS);
      // Streams' own settings for each kind (InternalTopicManager).
      assertEquals("delete", cfg.get(rr).get("cleanup.policy").value());
      assertEquals("-1", cfg.get(rr).get("retention.ms").value());
      assertEquals("52428800", cfg.get(rr).get("segment.bytes").value());
      assertEquals("compact", cfg.get(cr).get("cleanup.policy").value());
    }
  }

  private static void produceText() throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
      for (int i = 0; i < TEXT.size(); i++) {
        prod.send(new ProducerRecord<>(IN, "line-" + i, TEXT.get(i))).get();
      }
    }
  }

  /**
   * Reads OUT with read_committed until the latest count of every word equals
   * COUNTS or the deadline passes; returns the latest counts seen.
   */
  private static Map<String, Long> readCounts(Duration timeout) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    Map<String, Long> latest = new HashMap<>();
    try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p)) {
      var parts =
          c.partitionsFor(OUT).stream()
              .map(i -> new org.apache.kafka.common.TopicPartition(OUT, i.partition()))
              .toList();
      c.assign(parts);
      c.seekToBeginning(parts);
      long deadline = System.nanoTime() + timeout.toNanos();
      while (!latest.equals(COUNTS) && System.nanoTime() < deadline) {
        c.poll(Duration.ofMillis(200)).forEach(r -> latest.put(r.key(), r.value()));
      }
      // A later count past the expected one would be a duplicate.
      c.poll(Duration.ofMillis(500)).forEach(r -> latest.put(r.key(), r.value()));
    }
    return latest;
  }
}
