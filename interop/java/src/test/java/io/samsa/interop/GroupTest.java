package io.samsa.interop;

import static io.samsa.interop.Clients.consumer;
import static io.samsa.interop.Clients.pollExactly;
import static io.samsa.interop.Clients.producer;
import static io.samsa.interop.Clients.props;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Classic consumer groups (JoinGroup/SyncGroup/OffsetCommit). These fail until
 * the group coordinator lands (issue 3); they stay in the suite so the matrix
 * shows them red with that reason rather than hiding them.
 */
@ExtendWith(ResultRecorder.class)
class GroupTest {
  @RegisterExtension static final SamsaBroker broker = new SamsaBroker();

  private static final Duration WAIT = Duration.ofSeconds(25);

  private static void produce(String topic, int from, int to) throws Exception {
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      for (int i = from; i < to; i++) {
        p.send(new ProducerRecord<>(topic, i % 2, null, ("g" + i).getBytes(UTF_8)));
      }
      p.flush();
    }
  }

  private static KafkaConsumer<byte[], byte[]> member(String group) {
    return consumer(
        broker.bootstrap(),
        props(
            "group.id", group,
            "group.protocol", "classic",
            "session.timeout.ms", "10000",
            "heartbeat.interval.ms", "500"));
  }

  @Test
  @Feature(value = "group subscribe + commitSync (classic)", issue = "3")
  void subscribeCommitResume() throws Exception {
    String topic = "group-topic";
    broker.createTopic(topic, 2, Map.of());
    produce(topic, 0, 10);
    TopicPartition p0 = new TopicPartition(topic, 0);
    TopicPartition p1 = new TopicPartition(topic, 1);
    try (KafkaConsumer<byte[], byte[]> c = member("interop-group")) {
      c.subscribe(List.of(topic));
      List<ConsumerRecord<byte[], byte[]>> got = pollExactly(c, 10, WAIT);
      assertEquals(Set.of(p0, p1), c.assignment());
      assertEquals(
          Set.of("g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8", "g9"),
          got.stream().map(r -> new String(r.value(), UTF_8)).collect(Collectors.toSet()));
      c.commitSync();
      Map<TopicPartition, OffsetAndMetadata> committed = c.committed(Set.of(p0, p1));
      assertEquals(5, committed.get(p0).offset());
      assertEquals(5, committed.get(p1).offset());
    }
    // A new member of the same group resumes from the committed offsets.
    produce(topic, 10, 14);
    try (KafkaConsumer<byte[], byte[]> c = member("interop-group")) {
      c.subscribe(List.of(topic));
      List<ConsumerRecord<byte[], byte[]>> got = pollExactly(c, 4, WAIT);
      assertEquals(
          Set.of("g10", "g11", "g12", "g13"),
          got.stream().map(r -> new String(r.value(), UTF_8)).collect(Collectors.toSet()));
      for (ConsumerRecord<byte[], byte[]> r : got) {
        assertTrue(r.offset() >= 5, "resumed at committed offset, got " + r.offset());
      }
      c.commitSync();
    }
    try (Admin admin = broker.admin()) {
      Map<TopicPartition, OffsetAndMetadata> offsets =
          admin
              .listConsumerGroupOffsets("interop-group")
              .partitionsToOffsetAndMetadata()
              .get(15, TimeUnit.SECONDS);
      assertEquals(7, offsets.get(p0).offset());
      assertEquals(7, offsets.get(p1).offset());
    }
  }

  @Test
  @Feature(value = "admin listGroups/describeConsumerGroups", issue = "3")
  void adminGroups() throws Exception {
    String topic = "group-admin";
    broker.createTopic(topic, 1, Map.of());
    produce(topic, 0, 2);
    try (KafkaConsumer<byte[], byte[]> c = member("interop-admin-group");
        Admin admin = broker.admin()) {
      c.subscribe(List.of(topic));
      pollExactly(c, 1, WAIT);
      Set<String> ids =
          admin.listGroups().all().get(15, TimeUnit.SECONDS).stream()
              .map(GroupListing::groupId)
              .collect(Collectors.toSet());
      assertTrue(ids.contains("interop-admin-group"), "listGroups: " + ids);
      ConsumerGroupDescription d =
          admin
              .describeConsumerGroups(List.of("interop-admin-group"))
              .all()
              .get(15, TimeUnit.SECONDS)
              .get("interop-admin-group");
      assertEquals(1, d.members().size());
      assertEquals(
          Set.of(new TopicPartition(topic, 0)), d.members().iterator().next().assignment().topicPartitions());
    }
  }
}
