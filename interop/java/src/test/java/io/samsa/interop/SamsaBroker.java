package io.samsa.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts one {@code samsa server} subprocess per test class, from the prebuilt
 * binary named by the system property {@code samsa.bin} or the environment
 * variable {@code SAMSA_BIN}, on a fresh data directory and a kernel-chosen
 * port. Register with {@code @RegisterExtension static final SamsaBroker broker = new SamsaBroker();}.
 *
 * <p>The address is read from the server's own "serving Kafka clients" log
 * line rather than guessed, so there is no race for a free port. The server is
 * stopped with SIGTERM (a clean shutdown, as an operator would do it) and
 * killed only if it does not exit within 20 seconds.
 */
public final class SamsaBroker implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {
  private static final Pattern CLUSTER_ID = Pattern.compile("cluster\\.id=(\\S+)");

  private final String listener;
  private final List<String> overrides;
  private final Pattern serving;
  private Process process;
  private Path dataDir;
  private Path logFile;
  private volatile String clusterId;
  private String bootstrap;
  private Exception startFailure;

  /** A broker with a PLAINTEXT client listener. */
  public SamsaBroker() {
    this("PLAINTEXT", List.of());
  }

  /**
   * A broker whose client (and inter-broker) listener is {@code listener},
   * e.g. SSL, with {@code overrides} (key=value) passed as --override.
   */
  public SamsaBroker(String listener, List<String> overrides) {
    this.listener = listener;
    this.overrides = List.copyOf(overrides);
    this.serving =
        Pattern.compile(
            "msg=\"serving Kafka clients\" listener=" + Pattern.quote(listener) + " addr=(\\S+)");
  }

  public String bootstrap() {
    return bootstrap;
  }

  public Path dataDir() {
    return dataDir;
  }

  /** The cluster id Samsa printed when it formatted its data directory. */
  public String clusterId() {
    return clusterId;
  }

  /**
   * Records a start failure instead of throwing it: JUnit reports a failed
   * beforeAll only on the class, so TestWatchers (and the matrix) would never
   * hear of the tests. Each test fails in beforeEach instead.
   */
  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    try {
      start();
    } catch (Exception e) {
      startFailure = e;
    }
  }

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    if (startFailure != null) {
      throw startFailure;
    }
  }

  private void start() throws Exception {
    String bin = System.getProperty("samsa.bin");
    if (bin == null || bin.isBlank() || bin.startsWith("${")) {
      bin = System.getenv("SAMSA_BIN");
    }
    if (bin == null || bin.isBlank()) {
      throw new IllegalStateException(
          "set SAMSA_BIN (or -Dsamsa.bin) to a built samsa binary: go build -o samsa ./cmd/samsa");
    }
    dataDir = Files.createTempDirectory("samsa-java-interop");
    logFile = dataDir.resolveSibling(dataDir.getFileName() + ".log");
    List<String> cmd = new ArrayList<>();
    cmd.addAll(
        List.of(
            bin,
            "server",
            "--override",
            "log.dirs=" + dataDir,
            "--override",
            "listeners=" + listener + "://127.0.0.1:0,CONTROLLER://127.0.0.1:0"));
    if (!listener.equals("PLAINTEXT")) {
      cmd.addAll(List.of("--override", "inter.broker.listener.name=" + listener));
    }
    for (String o : overrides) {
      cmd.addAll(List.of("--override", o));
    }
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    process = pb.start();
    CompletableFuture<String> addr = new CompletableFuture<>();
    // The reader keeps draining stderr for the server's whole life: a full
    // pipe would otherwise block the broker's logger.
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader r =
                      new BufferedReader(
                          new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8));
                  Writer w = Files.newBufferedWriter(logFile)) {
                String line;
                while ((line = r.readLine()) != null) {
                  w.write(line);
                  w.write('\n');
                  w.flush();
                  Matcher c = CLUSTER_ID.matcher(line);
                  if (clusterId == null && c.find()) {
                    clusterId = c.group(1);
                  }
                  Matcher m = serving.matcher(line);
                  if (m.find()) {
                    addr.complete(m.group(1));
                  }
                }
              } catch (IOException e) {
                addr.completeExceptionally(e);
              }
              addr.completeExceptionally(new IOException("samsa exited before serving"));
            },
            "samsa-stderr");
    reader.setDaemon(true);
    reader.start();
    try {
      bootstrap = addr.get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      stop();
      throw new IllegalStateException(
          "samsa did not start; log " + logFile + ":\n" + Files.readString(logFile), e);
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    stop();
    if (dataDir != null) {
      try (Stream<Path> walk = Files.walk(dataDir)) {
        walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
      Files.deleteIfExists(logFile);
    }
  }

  /** Stops the server with SIGTERM; returns its exit code. */
  public int stop() throws InterruptedException {
    if (process == null) {
      return -1;
    }
    process.destroy();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
    }
    int code = process.exitValue();
    process = null;
    return code;
  }

  public Admin admin() {
    return admin(new Properties());
  }

  /** An admin client with extra client properties (security settings, say). */
  public Admin admin(Properties extra) {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15000);
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
    p.putAll(extra);
    return Admin.create(p);
  }

  /**
   * A NewTopic with replication factor 1 and the given configs.
   */
  public static NewTopic newTopic(String name, int partitions, Map<String, String> configs) {
    return new NewTopic(name, partitions, (short) 1).configs(configs);
  }

  /** Creates a topic and waits until the admin client has confirmed it. */
  public void createTopic(String name, int partitions, Map<String, String> configs)
      throws Exception {
    try (Admin admin = admin()) {
      admin.createTopics(List.of(newTopic(name, partitions, configs))).all().get(15, TimeUnit.SECONDS);
    }
  }
}
