package io.samsa.interop;

import static io.samsa.interop.Clients.consumer;
import static io.samsa.interop.Clients.pollExactly;
import static io.samsa.interop.Clients.producer;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
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
 * The Java client over SASL_SSL with SCRAM-SHA-512: an admin logged in
 * with PLAIN (a user of the listener's JAAS config) creates the SCRAM user
 * through AlterUserScramCredentials, which then produces and consumes
 * inside TLS; a wrong password is refused.
 */
@ExtendWith(ResultRecorder.class)
class ScramSslTest {
  static final TestPki PKI = TestPki.create();

  @RegisterExtension
  static final SamsaBroker broker = new SamsaBroker("SASL_SSL", overrides());

  private static final Duration WAIT = Duration.ofSeconds(20);

  private static List<String> overrides() {
    List<String> o = new ArrayList<>(PKI.brokerOverrides());
    o.removeIf(kv -> kv.startsWith("ssl.client.auth="));
    o.addAll(
        List.of(
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol=PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config="
                + "org.apache.kafka.common.security.plain.PlainLoginModule required"
                + " username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\";",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
                + "org.apache.kafka.common.security.scram.ScramLoginModule required;"));
    return o;
  }

  /** SASL_SSL client settings logging in with mechanism and JAAS module. */
  private static Properties login(String mechanism, String module, String user, String password) {
    Properties p = PKI.clientProps(false);
    p.put("security.protocol", "SASL_SSL");
    p.put("sasl.mechanism", mechanism);
    p.put(
        "sasl.jaas.config",
        module + " required username=\"" + user + "\" password=\"" + password + "\";");
    return p;
  }

  private static Properties scram(String user, String password) {
    return login("SCRAM-SHA-512", "org.apache.kafka.common.security.scram.ScramLoginModule", user, password);
  }

  @Test
  @Feature("SASL_SSL SCRAM-SHA-512 (user from AlterUserScramCredentials): produce + consume")
  void produceConsume() throws Exception {
    Properties admin =
        login("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule", "admin", "admin-secret");
    try (Admin a = broker.admin(admin)) {
      a.alterUserScramCredentials(
              List.of(
                  new UserScramCredentialUpsertion(
                      "alice", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "alice-secret")))
          .all()
          .get(15, TimeUnit.SECONDS);
      a.createTopics(List.of(SamsaBroker.newTopic("scram-ssl", 1, Map.of())))
          .all()
          .get(15, TimeUnit.SECONDS);
    }
    Properties alice = scram("alice", "alice-secret");
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), alice)) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>("scram-ssl", 0, null, ("v" + i).getBytes(UTF_8)))
            .get(15, TimeUnit.SECONDS);
      }
    }
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), alice)) {
      c.assign(List.of(new TopicPartition("scram-ssl", 0)));
      List<ConsumerRecord<byte[], byte[]>> got = pollExactly(c, 10, WAIT);
      for (int i = 0; i < 10; i++) {
        assertEquals(i, got.get(i).offset());
        assertEquals("v" + i, new String(got.get(i).value(), UTF_8));
      }
    }
  }

  @Test
  @Feature("SASL_SSL SCRAM-SHA-512: a wrong password is refused")
  void wrongPasswordRefused() {
    Properties props = scram("admin", "not-the-password");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5000);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3000);
    try (Admin a = broker.admin(props)) {
      ExecutionException e =
          assertThrows(
              ExecutionException.class, () -> a.describeCluster().nodes().get(10, TimeUnit.SECONDS));
      assertInstanceOf(SaslAuthenticationException.class, e.getCause());
    }
  }
}
