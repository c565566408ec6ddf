package io.samsa.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka Streams with the streams rebalance protocol (KIP-1071,
 * group.protocol=streams) and exactly_once_v2 against Samsa: the group
 * coordinator creates the internal topics and assigns the tasks. Two
 * instances share a word count (and their Interactive Queries endpoints
 * through the group); one is closed while input keeps coming and
 * started again, and the read_committed output holds every word's exact
 * count with no count emitted twice or out of order.
 */
@ExtendWith(ResultRecorder.class)
class StreamsProtocolTest {
  // A short heartbeat interval makes rebalances quick; Kafka's default is 5 s.
  @RegisterExtension
  static final SamsaBroker broker =
      new SamsaBroker("PLAINTEXT", List.of("group.streams.heartbeat.interval.ms=500"));

  private static final String APP = "interop-streams-protocol";
  private static final String IN = "sp-wordcount-in";
  private static final String OUT = "sp-wordcount-out";
  private static final String[] WORDS = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"};

  @Test
  @Feature(value = "streams protocol (KIP-1071) word count, 2 instances, restart, exactly_once_v2", issue = "14")
  void wordCountAcrossRestart(@TempDir Path dir) throws Exception {
    broker.createTopic(IN, 4, Map.of());
    broker.createTopic(OUT, 4, Map.of());
    Map<String, Long> expected = new TreeMap<>();

    KafkaStreams one = start(dir.resolve("one"), "localhost:7001");
    KafkaStreams two = start(dir.resolve("two"), "localhost:7002");
    try {
      waitRunning(one, two);
      try (Admin admin = broker.admin()) {
        StreamsGroupDescription d = waitStable(admin, 2);
        assertEquals(2, d.members().size(), "members: " + d);
        assertEquals(2, d.subtopologies().size(), "subtopologies: " + d);
        int active = d.members().stream().mapToInt(m -> m.assignment().activeTasks().stream()
            .mapToInt(t -> t.partitions().size()).sum()).sum();
        assertEquals(8, active, "active tasks over both members (2 subtopologies x 4 partitions): " + d);
      }
      // Interactive Queries: the group's endpoint information reaches every
      // instance, covering the input and repartition partitions once each.
      Set<String> covered = waitEndpoints(one, 2);
      assertEquals(8, covered.size(), "partitions over both endpoints: " + covered);
      produce(0, 200, expected);
      assertEquals(expected, readCounts(expected, Duration.ofSeconds(60)).latest);

      two.close(Duration.ofSeconds(30));
      produce(200, 400, expected);
      two = start(dir.resolve("two"), "localhost:7002");
      produce(400, 600, expected);
      waitRunning(one, two);
      produce(600, 800, expected);
      Counts got = readCounts(expected, Duration.ofSeconds(90));
      assertEquals(expected, got.latest, "latest committed count per word in " + OUT);
      assertTrue(got.problems.isEmpty(), "counts not strictly increasing: " + got.problems);
    } finally {
      one.close(Duration.ofSeconds(30));
      two.close(Duration.ofSeconds(30));
    }
  }

  /**
   * Waits until instance s knows endpoints of hosts instances and returns the
   * topic partitions they cover, failing on one covered twice.
   */
  private static Set<String> waitEndpoints(KafkaStreams s, int hosts) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      Collection<StreamsMetadata> all = s.metadataForAllStreamsClients();
      if (all.size() == hosts) {
        Set<String> covered = new HashSet<>();
        for (StreamsMetadata m : all) {
          for (TopicPartition tp : m.topicPartitions()) {
            assertTrue(covered.add(tp.toString()), tp + " on two endpoints: " + all);
          }
        }
        return covered;
      }
      assertTrue(System.nanoTime() < deadline, "endpoints known: " + all);
      Thread.sleep(200);
    }
  }

  private static KafkaStreams start(Path stateDir, String endpoint) {
    StreamsBuilder b = new StreamsBuilder();
    b.stream(IN, Consumed.with(Serdes.String(), Serdes.String()))
        .flatMapValues(line -> Arrays.asList(line.split(" ")))
        .groupBy((k, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
        .toStream()
        .to(OUT, Produced.with(Serdes.String(), Serdes.Long()));
    Topology topology = b.build();
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
    p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, endpoint);
    KafkaStreams s = new KafkaStreams(topology, p);
    s.start();
    return s;
  }

  private static void waitRunning(KafkaStreams... all) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    for (KafkaStreams s : all) {
      while (s.state() != KafkaStreams.State.RUNNING) {
        assertTrue(System.nanoTime() < deadline, "instance state " + s.state());
        Thread.sleep(100);
      }
    }
  }

  private static StreamsGroupDescription waitStable(Admin admin, int members) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    StreamsGroupDescription d = null;
    while (System.nanoTime() < deadline) {
      d = admin.describeStreamsGroups(List.of(APP)).all().get(15, TimeUnit.SECONDS).get(APP);
      if (d.groupState() == GroupState.STABLE && d.members().size() == members) {
        return d;
      }
      Thread.sleep(200);
    }
    throw new AssertionError("group never Stable with " + members + " members: " + d);
  }

  /** Produces lines from..to and adds their words to expected, counted here. */
  private static void produce(int from, int to, Map<String, Long> expected) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
      for (int i = from; i < to; i++) {
        String line = WORDS[i % WORDS.length] + " " + WORDS[(i / 3) % WORDS.length];
        for (String w : line.split(" ")) {
          expected.merge(w, 1L, Long::sum);
        }
        prod.send(new ProducerRecord<>(IN, "line-" + i, line));
      }
      prod.flush();
    }
  }

  private record Counts(Map<String, Long> latest, List<String> problems) {}

  /**
   * Reads OUT with read_committed until every word's latest count equals
   * expected or the deadline passes; notes any count that does not grow.
   */
  private static Counts readCounts(Map<String, Long> expected, Duration timeout) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Map<String, Long> latest = new TreeMap<>();
    List<String> problems = new ArrayList<>();
    try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p)) {
      List<TopicPartition> parts =
          c.partitionsFor(OUT).stream().map(i -> new TopicPartition(OUT, i.partition())).toList();
      c.assign(parts);
      c.seekToBeginning(parts);
      long deadline = System.nanoTime() + timeout.toNanos();
      Map<String, Long> seen = new HashMap<>();
      while (!latest.equals(expected) && System.nanoTime() < deadline) {
        c.poll(Duration.ofMillis(200))
            .forEach(
                r -> {
                  Long prev = seen.put(r.key(), r.value());
                  if (prev != null && r.value() <= prev) {
                    problems.add(r.key() + ": " + prev + " then " + r.value());
                  }
                  latest.put(r.key(), r.value());
                });
      }
      c.poll(Duration.ofMillis(500)).forEach(r -> latest.put(r.key(), r.value()));
    }
    return new Counts(latest, problems);
  }
}
