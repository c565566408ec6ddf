package io.samsa.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.message.ApiMessageType.ListenerType;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersion;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.ResponseHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every API a Kafka broker of this kafka-clients release serves on its
 * client listeners (the table its ApiVersions answers with, from
 * {@code ApiVersionsResponse.brokerApiVersions}), compared with
 * Samsa's ApiVersions: each must be served at Kafka's maximum version, or
 * be a row of the "API versions" table of docs/compatibility.md that says
 * what Samsa serves and why. A row that no longer matches (Samsa caught
 * up, or fell behind differently) fails too, so the table stays true.
 */
@ExtendWith(ResultRecorder.class)
class ApiVersionsTest {
  @RegisterExtension static final SamsaBroker broker = new SamsaBroker();

  /** A table row: | `Name` | key | Kafka max | Samsa max (or —) | why |. */
  private static final Pattern ROW =
      Pattern.compile("^\\| `?(\\w+)`? \\| (\\d+) \\| (\\d+) \\| (\\d+|—) \\| .+\\|$");

  @Test
  @Feature("ApiVersions: every API of Kafka's broker at Kafka's max version, or named in docs/compatibility.md")
  void everyKafkaApiServedOrNamed() throws Exception {
    Map<Short, Short> samsa = new TreeMap<>();
    for (ApiVersion v : apiVersions(broker.bootstrap()).data().apiKeys()) {
      samsa.put(v.apiKey(), v.maxVersion());
    }
    Map<Short, String> named = documented();
    List<String> problems = new ArrayList<>();
    StringBuilder table = new StringBuilder();
    // What a Kafka broker with default configs lists: stable versions
    // only, no client telemetry (no metrics reporter configured).
    for (ApiVersion av : ApiVersionsResponse.brokerApiVersions(ListenerType.BROKER, false, false)) {
      ApiKeys k = ApiKeys.forId(av.apiKey());
      short kafkaMax = av.maxVersion();
      Short samsaMax = samsa.get(k.id);
      String row = k.id + " " + kafkaMax + " " + (samsaMax == null ? "—" : samsaMax);
      boolean same = samsaMax != null && samsaMax == kafkaMax;
      String doc = named.remove(k.id);
      table.append(String.format("%-40s %s%n", k.name, row));
      if (same && doc != null) {
        problems.add(k.name + " is served at Kafka's v" + kafkaMax + " but docs/compatibility.md still lists it as " + doc);
      } else if (!same && doc == null) {
        problems.add(k.name + " (" + row + ") differs from Kafka and is not in the API versions table of docs/compatibility.md");
      } else if (!same && !doc.equals(row)) {
        problems.add(k.name + " is " + row + " but docs/compatibility.md says " + doc);
      }
    }
    for (Map.Entry<Short, String> e : named.entrySet()) {
      problems.add("docs/compatibility.md lists API key " + e.getKey() + ", which Kafka's broker does not serve");
    }
    System.out.println("API key, Kafka max, Samsa max:\n" + table);
    assertTrue(problems.isEmpty(), String.join("\n", problems));
  }

  /** The rows of docs/compatibility.md's API versions table: "key kafkaMax samsaMax" by key. */
  private static Map<Short, String> documented() throws IOException {
    Path doc = Path.of(System.getProperty("user.dir")).resolve("../../docs/compatibility.md").normalize();
    Map<Short, String> rows = new TreeMap<>();
    boolean inSection = false;
    for (String line : Files.readAllLines(doc)) {
      if (line.startsWith("## ")) {
        inSection = line.equals("## API versions");
        continue;
      }
      Matcher m = ROW.matcher(line);
      if (inSection && m.matches()) {
        rows.put(Short.parseShort(m.group(2)), m.group(2) + " " + m.group(3) + " " + m.group(4));
      }
    }
    return rows;
  }

  /** Sends ApiVersions v3 on a plain socket and reads the answer. */
  private static ApiVersionsResponse apiVersions(String bootstrap) throws IOException {
    String[] hp = bootstrap.split(":");
    short version = 3;
    try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1]))) {
      ApiVersionsRequest req = new ApiVersionsRequest.Builder().build(version);
      RequestHeader header = new RequestHeader(ApiKeys.API_VERSIONS, version, "interop", 7);
      ByteBuffer out = req.serializeWithHeader(header);
      DataOutputStream w = new DataOutputStream(s.getOutputStream());
      w.writeInt(out.remaining());
      w.write(out.array(), out.arrayOffset() + out.position(), out.remaining());
      w.flush();
      DataInputStream r = new DataInputStream(s.getInputStream());
      byte[] body = new byte[r.readInt()];
      r.readFully(body);
      ByteBuffer in = ByteBuffer.wrap(body);
      ResponseHeader rh = ResponseHeader.parse(in, ApiKeys.API_VERSIONS.responseHeaderVersion(version));
      assertEquals(7, rh.correlationId());
      return ApiVersionsResponse.parse(new ByteBufferAccessor(in), version);
    }
  }
}
