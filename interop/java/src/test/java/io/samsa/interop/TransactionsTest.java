package io.samsa.interop;

import static io.samsa.interop.Clients.consumer;
import static io.samsa.interop.Clients.pollExactly;
import static io.samsa.interop.Clients.producer;
import static io.samsa.interop.Clients.props;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Transactions as the Java client drives them against a new Samsa cluster,
 * which runs transaction.version 2 (KIP-890) as Kafka 4.4's do: the client
 * sends no AddPartitionsToTxn or AddOffsetsToTxn (Produce v12 and
 * TxnOffsetCommit v5 add the partitions), every EndTxn (v5) bumps the
 * producer epoch, and read_committed fetches see only committed records.
 * Offsets are asserted exactly: each transaction's control marker takes one
 * offset of its own.
 */
@ExtendWith(ResultRecorder.class)
class TransactionsTest {
  @RegisterExtension static final SamsaBroker broker = new SamsaBroker();

  private static final Duration WAIT = Duration.ofSeconds(20);

  private static List<String> values(List<ConsumerRecord<byte[], byte[]>> rs) {
    return rs.stream().map(r -> new String(r.value(), UTF_8)).collect(Collectors.toList());
  }

  private static List<Long> offsets(List<ConsumerRecord<byte[], byte[]>> rs) {
    return rs.stream().map(ConsumerRecord::offset).collect(Collectors.toList());
  }

  private static KafkaConsumer<byte[], byte[]> reader(String isolation) {
    return consumer(broker.bootstrap(), props("isolation.level", isolation));
  }

  private static List<ConsumerRecord<byte[], byte[]>> readAll(
      String isolation, TopicPartition tp, int want) {
    try (KafkaConsumer<byte[], byte[]> c = reader(isolation)) {
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      return pollExactly(c, want, WAIT);
    }
  }

  /**
   * EndTxn is answered once the coordinator has logged PrepareCommit; the
   * markers (and so the last stable offset and the committed group offsets)
   * follow asynchronously, as in Kafka. Waits until {@code get} returns want.
   */
  private static <T> T eventually(T want, Supplier<T> get) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    T got = get.get();
    while (!want.equals(got) && System.nanoTime() < deadline) {
      Thread.sleep(100);
      got = get.get();
    }
    return got;
  }

  @Test
  @Feature(value = "transactional producer + read_committed", issue = "4")
  void transactions() throws Exception {
    broker.createTopic("txn", 1, Map.of());
    try (KafkaProducer<byte[], byte[]> p =
        producer(broker.bootstrap(), props("transactional.id", "interop-txn"))) {
      p.initTransactions();
      p.beginTransaction();
      p.send(new ProducerRecord<>("txn", 0, null, "aborted".getBytes(UTF_8)));
      // Without the flush the client drops the still-lingering batch on
      // abort and nothing (not even a marker) reaches the log.
      p.flush();
      p.abortTransaction();
      p.beginTransaction();
      p.send(new ProducerRecord<>("txn", 0, null, "committed".getBytes(UTF_8)));
      p.commitTransaction();
    }
    TopicPartition tp = new TopicPartition("txn", 0);
    var got = readAll("read_committed", tp, 1);
    assertEquals(List.of("committed"), values(got));
    // offset 0 the aborted record, 1 its ABORT marker, 2 the committed record.
    assertEquals(List.of(2L), offsets(got));
  }

  @Test
  @Feature(value = "transaction version 2: one epoch bump per transaction (EndTxn v5)", issue = "14")
  void transactionVersion2() throws Exception {
    broker.createTopic("txn-v2", 1, Map.of());
    int first;
    try (Admin admin = Admin.create(props("bootstrap.servers", broker.bootstrap()));
        KafkaProducer<byte[], byte[]> p =
            producer(broker.bootstrap(), props("transactional.id", "interop-v2"))) {
      p.initTransactions();
      first = (short) describe(admin, "interop-v2").producerEpoch();
      for (int i = 0; i < 3; i++) {
        p.beginTransaction();
        p.send(new ProducerRecord<>("txn-v2", 0, null, ("v" + i).getBytes(UTF_8)));
        if (i == 1) {
          p.flush();
          p.abortTransaction();
        } else {
          p.commitTransaction();
        }
      }
      // Transaction version 1 keeps the epoch InitProducerId gave; version 2
      // bumps it with every commit and abort.
      var d = describe(admin, "interop-v2");
      assertEquals(first + 3, d.producerEpoch(), "producer epoch after three transactions");
    }
    var got = readAll("read_committed", new TopicPartition("txn-v2", 0), 2);
    assertEquals(List.of("v0", "v2"), values(got));
    // v0, COMMIT, v1, ABORT, v2.
    assertEquals(List.of(0L, 4L), offsets(got));
  }

  private static org.apache.kafka.clients.admin.TransactionDescription describe(Admin admin, String id)
      throws Exception {
    // The markers, and with them the Complete state, follow the EndTxn answer.
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      var d = admin.describeTransactions(List.of(id)).description(id).get(20, TimeUnit.SECONDS);
      String state = d.state().toString();
      if (!state.startsWith("PREPARE") || System.nanoTime() > deadline) {
        return d;
      }
      Thread.sleep(20);
    }
  }

  @Test
  @Feature(value = "transaction abort: hidden from read_committed, seen by read_uncommitted", issue = "4")
  void abortVisibility() throws Exception {
    String topic = "txn-abort";
    broker.createTopic(topic, 1, Map.of());
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaProducer<byte[], byte[]> p =
            producer(broker.bootstrap(), props("transactional.id", "interop-abort"));
        Admin admin = broker.admin()) {
      p.initTransactions();
      p.beginTransaction();
      for (String v : List.of("a0", "a1", "a2")) {
        p.send(new ProducerRecord<>(topic, 0, null, v.getBytes(UTF_8)));
      }
      p.flush();
      // While the transaction is open the last stable offset stays at its
      // first record: read_committed end offset 0, read_uncommitted 3.
      assertEquals(0L, endOffset(admin, tp, "read_committed"));
      assertEquals(3L, endOffset(admin, tp, "read_uncommitted"));
      p.abortTransaction();
      p.beginTransaction();
      for (String v : List.of("c0", "c1")) {
        p.send(new ProducerRecord<>(topic, 0, null, v.getBytes(UTF_8)));
      }
      p.commitTransaction();
      // a0..a2 at 0-2, ABORT marker 3, c0 c1 at 4-5, COMMIT marker 6.
      assertEquals(7L, eventually(7L, () -> endOffset(admin, tp, "read_committed")));
      assertEquals(7L, endOffset(admin, tp, "read_uncommitted"));
    }
    var committed = readAll("read_committed", tp, 2);
    assertEquals(List.of("c0", "c1"), values(committed));
    assertEquals(List.of(4L, 5L), offsets(committed));
    var uncommitted = readAll("read_uncommitted", tp, 5);
    assertEquals(List.of("a0", "a1", "a2", "c0", "c1"), values(uncommitted));
    assertEquals(List.of(0L, 1L, 2L, 4L, 5L), offsets(uncommitted));
  }

  private static long endOffset(Admin admin, TopicPartition tp, String isolation) {
    try {
      var opts =
          new org.apache.kafka.clients.admin.ListOffsetsOptions(
              org.apache.kafka.common.IsolationLevel.valueOf(isolation.toUpperCase()));
      return admin
          .listOffsets(Map.of(tp, OffsetSpec.latest()), opts)
          .partitionResult(tp)
          .get(15, TimeUnit.SECONDS)
          .offset();
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }

  @Test
  @Feature(value = "zombie producer fenced by initTransactions (ProducerFencedException)", issue = "4")
  void zombieFenced() throws Exception {
    String topic = "txn-zombie";
    broker.createTopic(topic, 1, Map.of());
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaProducer<byte[], byte[]> zombie =
        producer(broker.bootstrap(), props("transactional.id", "interop-zombie"))) {
      zombie.initTransactions();
      zombie.beginTransaction();
      zombie.send(new ProducerRecord<>(topic, 0, null, "zombie".getBytes(UTF_8))).get();
      try (KafkaProducer<byte[], byte[]> successor =
          producer(broker.bootstrap(), props("transactional.id", "interop-zombie"))) {
        // Bumps the epoch and aborts the zombie's open transaction.
        successor.initTransactions();
        assertThrows(ProducerFencedException.class, zombie::commitTransaction);
        successor.beginTransaction();
        successor.send(new ProducerRecord<>(topic, 0, null, "successor".getBytes(UTF_8)));
        successor.commitTransaction();
      }
    }
    var got = readAll("read_committed", tp, 1);
    assertEquals(List.of("successor"), values(got));
    // zombie at 0, the ABORT marker written for the fencing at 1.
    assertEquals(List.of(2L), offsets(got));
    assertEquals(List.of("zombie", "successor"), values(readAll("read_uncommitted", tp, 2)));
  }

  @Test
  @Feature(value = "consume-transform-produce with sendOffsetsToTransaction", issue = "4")
  void consumeTransformProduce() throws Exception {
    String in = "ctp-in";
    String out = "ctp-out";
    String group = "ctp-group";
    broker.createTopic(in, 2, Map.of());
    broker.createTopic(out, 1, Map.of());
    TopicPartition in0 = new TopicPartition(in, 0);
    TopicPartition in1 = new TopicPartition(in, 1);
    try (KafkaProducer<byte[], byte[]> p = producer(broker.bootstrap(), props())) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>(in, i % 2, null, ("w" + i).getBytes(UTF_8)));
      }
      p.flush();
    }
    Properties groupProps =
        props(
            "group.id", group,
            "isolation.level", "read_committed",
            "session.timeout.ms", "10000",
            "heartbeat.interval.ms", "500");
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), groupProps);
        KafkaProducer<byte[], byte[]> p =
            producer(broker.bootstrap(), props("transactional.id", "interop-ctp"));
        Admin admin = broker.admin()) {
      p.initTransactions();
      c.subscribe(List.of(in));
      int done = 0;
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (done < 10 && System.nanoTime() < deadline) {
        done += transform(c, p, out, true);
      }
      assertEquals(10, done, "records transformed");
      Map<TopicPartition, Long> want = Map.of(in0, 5L, in1, 5L);
      assertEquals(want, eventually(want, () -> groupOffsets(admin, group)));

      // An aborted round: its output and its offsets both vanish.
      try (KafkaProducer<byte[], byte[]> plain = producer(broker.bootstrap(), props())) {
        plain.send(new ProducerRecord<>(in, 0, null, "x0".getBytes(UTF_8)));
        plain.send(new ProducerRecord<>(in, 0, null, "x1".getBytes(UTF_8)));
        plain.flush();
      }
      int aborted = 0;
      deadline = System.nanoTime() + WAIT.toNanos();
      while (aborted < 2 && System.nanoTime() < deadline) {
        aborted += transform(c, p, out, false);
      }
      assertEquals(2, aborted, "records transformed in the aborted round");
      assertEquals(want, groupOffsets(admin, group));
    }
    List<String> outs = values(readAll("read_committed", new TopicPartition(out, 0), 10));
    assertEquals(
        Set.of("W0", "W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"), Set.copyOf(outs));
    assertEquals(12, readAll("read_uncommitted", new TopicPartition(out, 0), 12).size());

    // A new member resumes from the offsets of the last committed transaction,
    // so the aborted round's input is read again.
    try (KafkaConsumer<byte[], byte[]> c = consumer(broker.bootstrap(), groupProps)) {
      c.subscribe(List.of(in));
      var again = pollExactly(c, 2, Duration.ofSeconds(25));
      assertEquals(List.of("x0", "x1"), values(again));
      assertEquals(List.of(5L, 6L), offsets(again));
    }
  }

  /** One poll and one transaction; returns how many records it transformed. */
  private static int transform(
      KafkaConsumer<byte[], byte[]> c, KafkaProducer<byte[], byte[]> p, String out, boolean commit) {
    ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
    if (rs.isEmpty()) {
      return 0;
    }
    p.beginTransaction();
    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
    for (ConsumerRecord<byte[], byte[]> r : rs) {
      String v = new String(r.value(), UTF_8).toUpperCase();
      p.send(new ProducerRecord<>(out, 0, null, v.getBytes(UTF_8)));
      next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
    }
    p.sendOffsetsToTransaction(next, c.groupMetadata());
    if (commit) {
      p.commitTransaction();
    } else {
      p.flush(); // so the aborted records reach the log (see transactions())
      p.abortTransaction();
    }
    return rs.count();
  }

  private static Map<TopicPartition, Long> groupOffsets(Admin admin, String group) {
    try {
      Map<TopicPartition, Long> got = new HashMap<>();
      admin
          .listConsumerGroupOffsets(group)
          .partitionsToOffsetAndMetadata()
          .get(15, TimeUnit.SECONDS)
          .forEach((tp, om) -> got.put(tp, om == null ? -1L : om.offset()));
      return got;
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }
}
