package io.samsa.interop;

import static io.samsa.interop.Clients.producer;
import static io.samsa.interop.Clients.props;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/** AdminClient against Samsa: topics, cluster, configs, partitions, offsets. */
@ExtendWith(ResultRecorder.class)
class AdminTest {
  @RegisterExtension static final SamsaBroker broker = new SamsaBroker();

  private Admin admin;

  @BeforeEach
  void open() {
    admin = broker.admin();
  }

  @AfterEach
  void close() {
    admin.close();
  }

  private static <T> T get(org.apache.kafka.common.KafkaFuture<T> f) throws Exception {
    return f.get(15, TimeUnit.SECONDS);
  }

  private static Throwable cause(org.apache.kafka.common.KafkaFuture<?> f) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(15, TimeUnit.SECONDS));
    return e.getCause();
  }

  @Test
  @Feature("admin createTopics (with configs) + listTopics")
  void createAndList() throws Exception {
    NewTopic t =
        new NewTopic("admin-create", 3, (short) 1)
            .configs(Map.of("retention.ms", "3600000", "cleanup.policy", "delete"));
    var res = admin.createTopics(List.of(t));
    get(res.all());
    assertEquals(3, get(res.numPartitions("admin-create")));
    assertEquals(1, get(res.replicationFactor("admin-create")));
    assertNotEquals(Uuid.ZERO_UUID, get(res.topicId("admin-create")));
    Set<String> names = get(admin.listTopics().names());
    assertTrue(names.contains("admin-create"), "listTopics: " + names);

    // Kafka answers a second create with TOPIC_ALREADY_EXISTS (36).
    assertInstanceOf(
        TopicExistsException.class,
        cause(admin.createTopics(List.of(SamsaBroker.newTopic("admin-create", 1, Map.of()))).all()));
  }

  @Test
  @Feature("admin createTopics without configs")
  void createWithoutConfigs() throws Exception {
    // Kafka answers CreateTopics v5+ with every effective config of the new
    // topic; a null list makes the Java AdminClient fail.
    var res = admin.createTopics(List.of(new NewTopic("admin-no-configs", 1, (short) 1)));
    get(res.all());
    assertEquals("1073741824", get(res.config("admin-no-configs")).get("segment.bytes").value());
  }

  @Test
  @Feature("admin describeTopics (partitions, leader, ISR)")
  void describeTopics() throws Exception {
    var created = admin.createTopics(List.of(SamsaBroker.newTopic("admin-describe", 2, Map.of())));
    get(created.all());
    TopicDescription d =
        get(admin.describeTopics(List.of("admin-describe")).allTopicNames()).get("admin-describe");
    assertEquals("admin-describe", d.name());
    assertFalse(d.isInternal());
    assertEquals(get(created.topicId("admin-describe")), d.topicId());
    assertEquals(2, d.partitions().size());
    for (int i = 0; i < 2; i++) {
      TopicPartitionInfo p = d.partitions().get(i);
      assertEquals(i, p.partition());
      assertEquals(1, p.leader().id(), "leader of partition " + i);
      assertEquals(List.of(1), p.replicas().stream().map(Node::id).toList());
      assertEquals(List.of(1), p.isr().stream().map(Node::id).toList());
    }
    assertInstanceOf(
        UnknownTopicOrPartitionException.class,
        cause(admin.describeTopics(List.of("no-such-topic")).allTopicNames()));
  }

  @Test
  @Feature("admin describeCluster (cluster id, node, controller)")
  void describeCluster() throws Exception {
    DescribeClusterResult c = admin.describeCluster();
    assertEquals(broker.clusterId(), get(c.clusterId()));
    Collection<Node> nodes = get(c.nodes());
    assertEquals(1, nodes.size());
    Node n = nodes.iterator().next();
    assertEquals(1, n.id());
    assertEquals(broker.bootstrap(), n.host() + ":" + n.port());
    assertEquals(1, get(c.controller()).id());
  }

  @Test
  @Feature("admin describeConfigs (topic override + defaults)")
  void describeTopicConfigs() throws Exception {
    get(
        admin
            .createTopics(
                List.of(
                    new NewTopic("admin-configs", 1, (short) 1)
                        .configs(Map.of("retention.ms", "3600000"))))
            .all());
    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, "admin-configs");
    Config cfg = get(admin.describeConfigs(List.of(r)).all()).get(r);
    ConfigEntry retention = cfg.get("retention.ms");
    assertEquals("3600000", retention.value());
    assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source());
    ConfigEntry segment = cfg.get("segment.bytes");
    assertNotNull(segment, "segment.bytes described");
    assertEquals("1073741824", segment.value());
    assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, segment.source());
    assertEquals("delete", cfg.get("cleanup.policy").value());
  }

  @Test
  @Feature("admin describeConfigs (broker)")
  void describeBrokerConfigs() throws Exception {
    ConfigResource r = new ConfigResource(ConfigResource.Type.BROKER, "1");
    Config cfg = get(admin.describeConfigs(List.of(r)).all()).get(r);
    ConfigEntry dirs = cfg.get("log.dirs");
    assertNotNull(dirs, "log.dirs described");
    assertEquals(broker.dataDir().toString(), dirs.value());
    assertEquals(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG, dirs.source());
    ConfigEntry parts = cfg.get("num.partitions");
    assertEquals("1", parts.value());
    assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, parts.source());
    assertEquals("1", cfg.get("node.id").value());
  }

  @Test
  @Feature("admin createPartitions")
  void createPartitions() throws Exception {
    get(admin.createTopics(List.of(SamsaBroker.newTopic("admin-grow", 1, Map.of()))).all());
    get(admin.createPartitions(Map.of("admin-grow", NewPartitions.increaseTo(3))).all());
    TopicDescription d =
        get(admin.describeTopics(List.of("admin-grow")).allTopicNames()).get("admin-grow");
    assertEquals(3, d.partitions().size());
    // The new partition takes writes at once.
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      assertEquals(
          0,
          p.send(new ProducerRecord<>("admin-grow", 2, null, "x".getBytes(UTF_8)))
              .get(10, TimeUnit.SECONDS)
              .offset());
    }
    // Shrinking is refused with INVALID_PARTITIONS (37), as in Kafka.
    assertInstanceOf(
        InvalidPartitionsException.class,
        cause(admin.createPartitions(Map.of("admin-grow", NewPartitions.increaseTo(2))).all()));
  }

  @Test
  @Feature("admin deleteTopics")
  void deleteTopics() throws Exception {
    get(admin.createTopics(List.of(SamsaBroker.newTopic("admin-delete", 1, Map.of()))).all());
    get(admin.deleteTopics(List.of("admin-delete")).all());
    assertFalse(get(admin.listTopics().names()).contains("admin-delete"));
    assertInstanceOf(
        UnknownTopicOrPartitionException.class,
        cause(admin.deleteTopics(List.of("admin-delete")).all()));
  }

  @Test
  @Feature("admin listOffsets (earliest, latest, max-timestamp, timestamp)")
  void listOffsets() throws Exception {
    get(admin.createTopics(List.of(SamsaBroker.newTopic("admin-offsets", 1, Map.of()))).all());
    long base = 1_700_000_000_000L;
    long[] ts = {base, base + 5000, base + 1000, base + 2000};
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      for (long t : ts) {
        p.send(new ProducerRecord<>("admin-offsets", 0, t, null, "v".getBytes(UTF_8)))
            .get(10, TimeUnit.SECONDS);
      }
    }
    TopicPartition tp = new TopicPartition("admin-offsets", 0);
    assertEquals(0, offset(tp, OffsetSpec.earliest()).offset());
    assertEquals(4, offset(tp, OffsetSpec.latest()).offset());
    // KIP-734: the offset of the record with the largest timestamp.
    ListOffsetsResultInfo max = offset(tp, OffsetSpec.maxTimestamp());
    assertEquals(1, max.offset());
    assertEquals(base + 5000, max.timestamp());
    ListOffsetsResultInfo at = offset(tp, OffsetSpec.forTimestamp(base + 1500));
    assertEquals(1, at.offset(), "first offset with timestamp >= target");
  }

  private ListOffsetsResultInfo offset(TopicPartition tp, OffsetSpec spec) throws Exception {
    return get(admin.listOffsets(Map.of(tp, spec)).all()).get(tp);
  }
}
