import java.nio.file.Files;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A word count with the streams rebalance protocol (KIP-1071), run as a
 * single-file program: java WordCountApp.java BOOTSTRAP APP_ID IN OUT.
 * Prints RUNNING once its group assigned it the tasks, and runs until its
 * standard input closes.
 */
public class WordCountApp {
  public static void main(String[] args) throws Exception {
    StreamsBuilder b = new StreamsBuilder();
    b.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
        .flatMapValues(line -> Arrays.asList(line.split(" ")))
        .groupBy((k, w) -> w, Grouped.with(Serdes.String(), Serdes.String()))
        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
        .toStream()
        .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("wordcount").toString());
    try (KafkaStreams s = new KafkaStreams(b.build(), p)) {
      s.start();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (s.state() != KafkaStreams.State.RUNNING && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      System.out.println(s.state());
      System.out.flush();
      while (System.in.read() >= 0) {}
      s.close(Duration.ofSeconds(20));
    }
  }
}
