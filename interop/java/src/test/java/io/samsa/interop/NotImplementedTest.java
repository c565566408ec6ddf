package io.samsa.interop;

import static io.samsa.interop.Clients.consumer;
import static io.samsa.interop.Clients.pollExactly;
import static io.samsa.interop.Clients.producer;
import static io.samsa.interop.Clients.props;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The place for features Samsa does not serve yet: each test is written as it
 * should pass and disabled with the issue that will enable it, so the matrix
 * lists it as skipped with the reason; removing {@code @Disabled} is the whole
 * change. The tests left here have since been enabled (their issues landed);
 * transactions moved to {@link TransactionsTest}.
 */
@ExtendWith(ResultRecorder.class)
class NotImplementedTest {
  @RegisterExtension static final SamsaBroker broker = new SamsaBroker();

  @Test
  @Feature(value = "admin incrementalAlterConfigs", issue = "6")
  void alterConfigs() throws Exception {
    broker.createTopic("alter", 1, Map.of());
    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, "alter");
    try (Admin admin = broker.admin()) {
      admin
          .incrementalAlterConfigs(
              Map.of(
                  r,
                  List.of(
                      new AlterConfigOp(
                          new ConfigEntry("retention.ms", "60000"), AlterConfigOp.OpType.SET))))
          .all()
          .get(15, TimeUnit.SECONDS);
      ConfigEntry e =
          admin.describeConfigs(List.of(r)).all().get(15, TimeUnit.SECONDS).get(r).get("retention.ms");
      assertEquals("60000", e.value());
      assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, e.source());
    }
  }

  @Test
  @Feature(value = "admin deleteRecords", issue = "6")
  void deleteRecords() throws Exception {
    broker.createTopic("delete-records", 1, Map.of());
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>("delete-records", 0, null, "v".getBytes(UTF_8)));
      }
    }
    TopicPartition tp = new TopicPartition("delete-records", 0);
    try (Admin admin = broker.admin()) {
      var low =
          admin
              .deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(6)))
              .lowWatermarks()
              .get(tp)
              .get(15, TimeUnit.SECONDS);
      assertEquals(6, low.lowWatermark());
    }
  }

  @Test
  @Feature(value = "group subscribe (group.protocol=consumer, KIP-848)", issue = "3")
  void consumerProtocol() throws Exception {
    broker.createTopic("kip848", 1, Map.of());
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      p.send(new ProducerRecord<>("kip848", 0, null, "v".getBytes(UTF_8))).get();
    }
    try (KafkaConsumer<byte[], byte[]> c =
        consumer(
            broker.bootstrap(), props("group.id", "kip848-group", "group.protocol", "consumer"))) {
      c.subscribe(List.of("kip848"));
      assertEquals(1, pollExactly(c, 1, Duration.ofSeconds(20)).size());
      c.commitSync();
    }
  }
}
