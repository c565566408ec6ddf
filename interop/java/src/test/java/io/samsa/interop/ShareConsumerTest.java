package io.samsa.interop;

import static io.samsa.interop.Clients.producer;
import static io.samsa.interop.Clients.props;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * KIP-932 share groups through kafka-clients' KafkaShareConsumer, against a
 * new cluster, which starts at share.version 1.
 */
@ExtendWith(ResultRecorder.class)
class ShareConsumerTest {
  // lockExpiry's 2 s share.record.lock.duration.ms is below the broker's
  // default lower bound for the group config (15 s), as in Kafka.
  @RegisterExtension
  static final SamsaBroker broker =
      new SamsaBroker("PLAINTEXT", List.of("group.share.min.record.lock.duration.ms=1000"));

  private static final Duration WAIT = Duration.ofSeconds(30);

  private static KafkaShareConsumer<byte[], byte[]> member(String group, String... extra) {
    Properties p = props(extra);
    p.put("bootstrap.servers", broker.bootstrap());
    p.put("group.id", group);
    return new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  private static void produce(String topic, int partitions, int n) throws Exception {
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      for (int i = 0; i < n; i++) {
        p.send(new ProducerRecord<>(topic, i % partitions, null, ("s" + i).getBytes(UTF_8)));
      }
      p.flush();
    }
  }

  /** Waits until the group has share state on every partition (share.auto.offset.reset is latest). */
  private static Map<TopicPartition, SharePartitionOffsetInfo> awaitInitialized(
      Admin admin, String group, int partitions) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      Map<TopicPartition, SharePartitionOffsetInfo> offsets = shareOffsets(admin, group);
      if (offsets.size() == partitions) {
        return offsets;
      }
      assertTrue(System.nanoTime() < deadline, "share partitions never initialized: " + offsets);
      Thread.sleep(100);
    }
  }

  /** The group's share offsets; none while the group does not exist yet. */
  private static Map<TopicPartition, SharePartitionOffsetInfo> shareOffsets(Admin admin, String group)
      throws Exception {
    try {
      return admin
          .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
          .partitionsToOffsetInfo(group)
          .get(15, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof GroupIdNotFoundException) {
        return Map.of();
      }
      throw e;
    }
  }

  @Test
  @Feature(value = "share group: 3 KafkaShareConsumers read every record once", issue = "14")
  void threeConsumers() throws Exception {
    String topic = "share-three", group = "interop-share-three";
    int n = 300;
    broker.createTopic(topic, 3, Map.of());
    Map<String, Integer> seen = new ConcurrentHashMap<>();
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> threads = new ArrayList<>();
    List<Throwable> failures = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Thread t =
          new Thread(
              () -> {
                try (KafkaShareConsumer<byte[], byte[]> c = member(group)) {
                  c.subscribe(List.of(topic));
                  while (!stop.get()) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                      seen.merge(r.partition() + "@" + r.offset(), 1, Integer::sum);
                    }
                  }
                  c.commitSync(); // the last poll's records, accepted implicitly
                } catch (Throwable e) {
                  synchronized (failures) {
                    failures.add(e);
                  }
                }
              });
      t.start();
      threads.add(t);
    }
    try (Admin admin = broker.admin()) {
      awaitInitialized(admin, group, 3);
      produce(topic, 3, n);
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (seen.size() < n && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      stop.set(true);
      for (Thread t : threads) {
        t.join(WAIT.toMillis());
      }
      assertTrue(failures.isEmpty(), "consumer failed: " + failures);
      assertEquals(n, seen.size(), "distinct records consumed");
      seen.forEach((k, c) -> assertEquals(1, c, "record " + k + " deliveries"));
      // Every record was accepted: the start offsets reach the log ends.
      long until = System.nanoTime() + WAIT.toNanos();
      while (true) {
        Map<TopicPartition, SharePartitionOffsetInfo> offsets = awaitInitialized(admin, group, 3);
        long sum = offsets.values().stream().mapToLong(SharePartitionOffsetInfo::startOffset).sum();
        if (sum == n) {
          break;
        }
        assertTrue(System.nanoTime() < until, "start offsets " + offsets);
        Thread.sleep(100);
      }
      ShareGroupDescription d =
          admin.describeShareGroups(List.of(group)).all().get(15, TimeUnit.SECONDS).get(group);
      assertEquals(GroupState.EMPTY, d.groupState());
    }
  }

  @Test
  @Feature(value = "share group: release redelivers, reject archives", issue = "14")
  void releaseAndReject() throws Exception {
    String topic = "share-release", group = "interop-share-release";
    int n = 5;
    broker.createTopic(topic, 1, Map.of());
    try (Admin admin = broker.admin();
        KafkaShareConsumer<byte[], byte[]> c =
            member(group, "share.acknowledgement.mode", "explicit")) {
      c.subscribe(List.of(topic));
      long deadline = System.nanoTime() + WAIT.toNanos();
      // The first polls join the group and initialize its share partition.
      while (shareOffsets(admin, group).isEmpty() && System.nanoTime() < deadline) {
        c.poll(Duration.ofMillis(200));
      }
      produce(topic, 1, n);
      // Release every delivery until each record came back at least once:
      // the counts of each record go 1, 2, ...
      Map<Long, List<Short>> counts = new ConcurrentHashMap<>();
      deliverUntil(c, counts, AcknowledgeType.RELEASE, n, 2);
      counts.forEach(
          (off, cs) -> {
            for (int i = 0; i < cs.size(); i++) {
              assertEquals((short) (i + 1), cs.get(i), "delivery counts of offset " + off + ": " + cs);
            }
          });
      // Then reject: archived, never delivered again.
      Map<Long, List<Short>> rejected = new ConcurrentHashMap<>();
      deliverUntil(c, rejected, AcknowledgeType.REJECT, n, 1);
      rejected.forEach(
          (off, cs) -> assertEquals(1, cs.size(), "offset " + off + " delivered after REJECT: " + cs));
      Map<TopicPartition, SharePartitionOffsetInfo> offsets = awaitInitialized(admin, group, 1);
      assertEquals(n, offsets.get(new TopicPartition(topic, 0)).startOffset());
    }
  }

  @Test
  @Feature(value = "share group: released records archived at share.delivery.count.limit", issue = "14")
  void deliveryLimit() throws Exception {
    String topic = "share-limit", group = "interop-share-limit";
    int n = 3;
    broker.createTopic(topic, 1, Map.of());
    ConfigResource g = new ConfigResource(ConfigResource.Type.GROUP, group);
    try (Admin admin = broker.admin()) {
      admin
          .incrementalAlterConfigs(
              Map.of(
                  g,
                  List.of(
                      set("share.delivery.count.limit", "3"),
                      set("share.auto.offset.reset", "earliest"))))
          .all()
          .get(15, TimeUnit.SECONDS);
    }
    produce(topic, 1, n);
    try (KafkaShareConsumer<byte[], byte[]> c =
        member(group, "share.acknowledgement.mode", "explicit")) {
      c.subscribe(List.of(topic));
      // Released every time, each record comes with delivery counts 1, 2,
      // 3 and is then archived: never delivered again.
      Map<Long, List<Short>> counts = new ConcurrentHashMap<>();
      deliverUntil(c, counts, AcknowledgeType.RELEASE, n, 3);
      counts.forEach(
          (off, cs) -> assertEquals(List.of((short) 1, (short) 2, (short) 3), cs, "delivery counts of offset " + off));
      long quiet = System.nanoTime() + Duration.ofSeconds(3).toNanos();
      while (System.nanoTime() < quiet) {
        ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
        assertTrue(rs.isEmpty(), "archived records delivered again: " + rs.count());
      }
    }
  }

  @Test
  @Feature(value = "share group: a lock-expired record goes to another member", issue = "14")
  void lockExpiry() throws Exception {
    String topic = "share-lock", group = "interop-share-lock";
    int n = 3;
    broker.createTopic(topic, 1, Map.of());
    ConfigResource g = new ConfigResource(ConfigResource.Type.GROUP, group);
    try (Admin admin = broker.admin()) {
      admin
          .incrementalAlterConfigs(
              Map.of(
                  g,
                  List.of(
                      set("share.record.lock.duration.ms", "2000"),
                      set("share.auto.offset.reset", "earliest"))))
          .all()
          .get(15, TimeUnit.SECONDS);
    }
    produce(topic, 1, n);
    try (KafkaShareConsumer<byte[], byte[]> holder =
            member(group, "share.acknowledgement.mode", "explicit");
        KafkaShareConsumer<byte[], byte[]> other =
            member(group, "share.acknowledgement.mode", "explicit")) {
      holder.subscribe(List.of(topic));
      // The holder acquires records once and then neither acknowledges
      // nor polls again; it stays in the group (heartbeats run in the
      // background).
      Map<Long, Short> held = new ConcurrentHashMap<>();
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (held.isEmpty()) {
        assertTrue(System.nanoTime() < deadline, "the holder got nothing");
        for (ConsumerRecord<byte[], byte[]> r : holder.poll(Duration.ofMillis(200))) {
          held.put(r.offset(), r.deliveryCount().orElseThrow());
        }
      }
      held.forEach((off, c) -> assertEquals((short) 1, c, "first delivery of offset " + off));
      // After the 2 s lock the other member gets them as second deliveries.
      other.subscribe(List.of(topic));
      Map<Long, Short> redelivered = new ConcurrentHashMap<>();
      while (!redelivered.keySet().containsAll(held.keySet())) {
        assertTrue(System.nanoTime() < deadline, "redelivered so far: " + redelivered + ", held " + held);
        for (ConsumerRecord<byte[], byte[]> r : other.poll(Duration.ofMillis(200))) {
          redelivered.putIfAbsent(r.offset(), r.deliveryCount().orElseThrow());
          other.acknowledge(r, AcknowledgeType.ACCEPT);
        }
        other.commitSync();
      }
      held.keySet()
          .forEach(off -> assertEquals((short) 2, redelivered.get(off), "redelivery of offset " + off));
    }
  }

  private static AlterConfigOp set(String key, String value) {
    return new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
  }

  /**
   * Polls, acknowledging every record with type, until each of the n
   * records was delivered at least times times; counts gets each record's
   * delivery counts in order.
   */
  private static void deliverUntil(
      KafkaShareConsumer<byte[], byte[]> c,
      Map<Long, List<Short>> counts,
      AcknowledgeType type,
      int n,
      int times) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (counts.size() < n || counts.values().stream().anyMatch(cs -> cs.size() < times)) {
      assertTrue(System.nanoTime() < deadline, "deliveries so far: " + counts);
      ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
      for (ConsumerRecord<byte[], byte[]> r : rs) {
        counts.computeIfAbsent(r.offset(), k -> new ArrayList<>()).add(r.deliveryCount().orElseThrow());
        c.acknowledge(r, type);
      }
      c.commitSync();
    }
  }
}
