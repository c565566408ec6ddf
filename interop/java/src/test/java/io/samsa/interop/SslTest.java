package io.samsa.interop;

import static io.samsa.interop.Clients.consumer;
import static io.samsa.interop.Clients.pollExactly;
import static io.samsa.interop.Clients.producer;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Java client over TLS: an SSL listener with client certificates
 * required (ssl.client.auth=required), PKCS12 key and trust stores made
 * by keytool on both sides.
 */
@ExtendWith(ResultRecorder.class)
class SslTest {
  static final TestPki PKI = TestPki.create();

  @RegisterExtension
  static final SamsaBroker broker = new SamsaBroker("SSL", PKI.brokerOverrides());

  private static final Duration WAIT = Duration.ofSeconds(20);

  @Test
  @Feature("TLS with a client certificate (mTLS, PKCS12 stores): produce + consume")
  void produceConsumeOverMutualTls() throws Exception {
    try (Admin admin = broker.admin(PKI.clientProps(true))) {
      admin.createTopics(List.of(SamsaBroker.newTopic("tls", 1, java.util.Map.of()))).all().get(15, TimeUnit.SECONDS);
      assertEquals(1, admin.describeCluster().nodes().get(15, TimeUnit.SECONDS).size());
    }
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), PKI.clientProps(true))) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>("tls", 0, null, ("v" + i).getBytes(UTF_8))).get(15, TimeUnit.SECONDS);
      }
    }
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), PKI.clientProps(true))) {
      c.assign(List.of(new TopicPartition("tls", 0)));
      List<ConsumerRecord<byte[], byte[]>> got = pollExactly(c, 10, WAIT);
      for (int i = 0; i < 10; i++) {
        assertEquals(i, got.get(i).offset());
        assertEquals("v" + i, new String(got.get(i).value(), UTF_8));
      }
    }
  }

  @Test
  @Feature("TLS without a client certificate is refused (ssl.client.auth=required)")
  void clientWithoutCertificateRefused() {
    Properties props = PKI.clientProps(false);
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5000);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3000);
    try (Admin admin = broker.admin(props)) {
      assertThrows(
          ExecutionException.class,
          () -> admin.describeCluster().nodes().get(10, TimeUnit.SECONDS));
    }
  }
}
