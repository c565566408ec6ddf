package io.samsa.interop;

import static io.samsa.interop.Clients.consumer;
import static io.samsa.interop.Clients.pollExactly;
import static io.samsa.interop.Clients.producer;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
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
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Java client with SASL/OAUTHBEARER and Kafka's own unsecured login
 * module (unsigned tokens) against a listener with the unsecured
 * validator, which requires the scope "kafka".
 */
@ExtendWith(ResultRecorder.class)
class OAuthBearerTest {
  private static final String MODULE =
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

  @RegisterExtension
  static final SamsaBroker broker =
      new SamsaBroker(
          "SASL_PLAINTEXT",
          List.of(
              "sasl.enabled.mechanisms=OAUTHBEARER",
              "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config="
                  + MODULE
                  + " required unsecuredValidatorRequiredScope=\"kafka\";"));

  private static final Duration WAIT = Duration.ofSeconds(20);

  /** Client settings that log in as sub with the given scope claim. */
  private static Properties login(String sub, String scope) {
    return Clients.props(
        "security.protocol", "SASL_PLAINTEXT",
        "sasl.mechanism", "OAUTHBEARER",
        "sasl.jaas.config",
            MODULE
                + " required unsecuredLoginStringClaim_sub=\""
                + sub
                + "\" unsecuredLoginListClaim_scope=\","
                + scope
                + "\";");
  }

  @Test
  @Feature("SASL OAUTHBEARER (unsecured JWT): produce + consume")
  void produceConsume() throws Exception {
    Properties alice = login("alice", "kafka");
    try (Admin admin = broker.admin(alice)) {
      admin
          .createTopics(List.of(SamsaBroker.newTopic("oauth", 1, Map.of())))
          .all()
          .get(15, TimeUnit.SECONDS);
    }
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), alice)) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>("oauth", 0, null, ("v" + i).getBytes(UTF_8)))
            .get(15, TimeUnit.SECONDS);
      }
    }
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), alice)) {
      c.assign(List.of(new TopicPartition("oauth", 0)));
      List<ConsumerRecord<byte[], byte[]>> got = pollExactly(c, 10, WAIT);
      for (int i = 0; i < 10; i++) {
        assertEquals(i, got.get(i).offset());
        assertEquals("v" + i, new String(got.get(i).value(), UTF_8));
      }
    }
  }

  @Test
  @Feature("SASL OAUTHBEARER: a token without the required scope is refused")
  void missingScopeRefused() {
    Properties props = login("alice", "other");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5000);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3000);
    try (Admin admin = broker.admin(props)) {
      ExecutionException e =
          assertThrows(
              ExecutionException.class,
              () -> admin.describeCluster().nodes().get(10, TimeUnit.SECONDS));
      assertInstanceOf(SaslAuthenticationException.class, e.getCause());
      assertTrue(
          e.getCause().getMessage().contains("{\"status\":\"insufficient_scope\", \"scope\":\"[kafka]\"}"),
          e.getCause().getMessage());
    }
  }
}
