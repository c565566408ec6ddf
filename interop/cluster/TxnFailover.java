// The Java transactional producer (kafka-clients, transaction version 2)
// through a kill -9 of its transaction coordinator.
//
//     javac -cp "$KAFKA_TOOLS_DIR/*" -d DIR TxnFailover.java
//     java -cp "DIR:$KAFKA_TOOLS_DIR/*" TxnFailover BOOTSTRAP TOPIC TXNS ID=PID...
//
// Runs TXNS transactions of 20 records each (every fifth one aborted on
// purpose) on TOPIC with one transactional id. Once a third of them are
// done it finds the id's transaction coordinator (DescribeTransactions),
// sends SIGKILL to that node's process (ID=PID names the processes) in the
// middle of a transaction (records sent, not committed), and keeps going:
// a transaction whose commit fails is aborted and retried as a new one; a
// producer that must close is replaced. Then a read_committed consumer
// reads TOPIC and prints
//
//     killed=true tv2=true missing=0 duplicates=0 uncommitted=0 torn=0 stray=0
//
// missing counts records of committed transactions not read, duplicates
// records read twice, uncommitted records read from aborted transactions,
// torn transactions that failed (outcome unknown to the client) and are
// partly visible, stray records read that no transaction sent; tv2 says
// the producer epoch grew by at least one per transaction (the client ran
// KIP-890's transaction version 2). A last line gives the counts.
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnFailover {
  static final String TXN_ID = "java-failover";
  static final int PER_TXN = 20;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], topic = args[1];
    int txns = Integer.parseInt(args[2]);
    Map<Integer, Long> pids = new HashMap<>();
    for (int i = 3; i < args.length; i++) {
      String[] kv = args[i].split("=");
      pids.put(Integer.parseInt(kv[0]), Long.parseLong(kv[1]));
    }
    Properties ap = new Properties();
    ap.put("bootstrap.servers", bootstrap);
    Admin admin = Admin.create(ap);

    Set<String> committed = new HashSet<>(), aborted = new HashSet<>();
    KafkaProducer<String, String> p = producer(bootstrap);
    int startEpoch = describe(admin).producerEpoch(), attempts = 0;
    boolean killed = false;
    List<List<String>> unknown = new ArrayList<>();
    for (; committed.size() + aborted.size() + unknown.size() * PER_TXN < txns * PER_TXN && attempts < txns * 4; attempts++) {
      List<String> values = new ArrayList<>();
      for (int i = 0; i < PER_TXN; i++) values.add("a" + attempts + "-" + i);
      boolean abortOnPurpose = attempts % 5 == 4;
      try {
        p.beginTransaction();
        for (String v : values) p.send(new ProducerRecord<>(topic, 0, null, v));
        if (!killed && committed.size() >= txns * PER_TXN / 3) {
          p.flush();
          int coordinator = describe(admin).coordinatorId();
          Long pid = pids.get(coordinator);
          System.out.println("killing transaction coordinator node " + coordinator + " pid " + pid);
          if (pid != null) ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
          killed = pid != null;
        }
        if (abortOnPurpose) {
          p.abortTransaction();
          aborted.addAll(values);
        } else {
          p.commitTransaction();
          committed.addAll(values);
        }
      } catch (KafkaException e) {
        // Abortable (or a timeout whose outcome the client does not know
        // and must abort): abort and go on with new values. A fatal error
        // closes the producer; a new one fences the old and aborts its
        // transaction.
        System.out.println("transaction " + attempts + ": " + e);
        unknown.add(values);
        try {
          p.abortTransaction();
        } catch (KafkaException fatal) {
          p.close(Duration.ZERO);
          p = producer(bootstrap);
        }
      }
    }
    int endEpoch = describe(admin).producerEpoch();
    p.close();
    int done = (committed.size() + aborted.size()) / PER_TXN + unknown.size();

    Map<String, Integer> seen = new HashMap<>();
    Properties cp = new Properties();
    cp.put("bootstrap.servers", bootstrap);
    cp.put("isolation.level", "read_committed");
    try (KafkaConsumer<String, String> c =
        new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
      TopicPartition tp = new TopicPartition(topic, 0);
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      long end = c.endOffsets(List.of(tp)).get(tp);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (c.position(tp) < end && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) seen.merge(r.value(), 1, Integer::sum);
      }
    }
    long missing = committed.stream().filter(v -> !seen.containsKey(v)).count();
    long duplicates = seen.values().stream().filter(n -> n > 1).count();
    long uncommitted = aborted.stream().filter(seen::containsKey).count();
    // A transaction that failed may have committed or not, but all or nothing.
    long torn = unknown.stream().filter(vs -> {
      long n = vs.stream().filter(seen::containsKey).count();
      return n != 0 && n != vs.size();
    }).count();
    long stray = seen.keySet().stream().filter(v -> !committed.contains(v) && !aborted.contains(v)
        && unknown.stream().noneMatch(vs -> vs.contains(v))).count();
    boolean tv2 = endEpoch - startEpoch >= done;
    System.out.printf("failed=%d%n", unknown.size());
    System.out.printf("killed=%s tv2=%s missing=%d duplicates=%d uncommitted=%d torn=%d stray=%d%n",
        killed, tv2, missing, duplicates, uncommitted, torn, stray);
    System.out.printf("committed=%d aborted=%d read=%d%n", committed.size() / PER_TXN, aborted.size() / PER_TXN, seen.size());
    admin.close();
  }

  static KafkaProducer<String, String> producer(String bootstrap) {
    Properties pp = new Properties();
    pp.put("bootstrap.servers", bootstrap);
    pp.put("transactional.id", TXN_ID);
    pp.put("transaction.timeout.ms", "20000");
    pp.put("delivery.timeout.ms", "60000");
    pp.put("max.block.ms", "60000");
    KafkaProducer<String, String> p = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer());
    p.initTransactions();
    return p;
  }

  // describe is the id's transaction once it is not between EndTxn and its
  // markers (Prepare states), with the coordinator that answered.
  static TransactionDescription describe(Admin admin) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      try {
        TransactionDescription d = admin.describeTransactions(List.of(TXN_ID)).description(TXN_ID).get(20, TimeUnit.SECONDS);
        if (!d.state().toString().startsWith("PREPARE") || System.nanoTime() > deadline) return d;
      } catch (Exception e) {
        if (System.nanoTime() > deadline) throw e;
      }
      Thread.sleep(50);
    }
  }
}
