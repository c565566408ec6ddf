package io.samsa.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * A test CA with a broker and a client certificate, made with the JDK's
 * keytool as an operator would: PKCS12 key stores (server.p12,
 * client.p12) and a Java PKCS12 trust store of the CA (truststore.p12),
 * all with password {@link #PASSWORD}. A failure is kept, not thrown, so
 * that the broker's start reports it on every test.
 */
final class TestPki {
  static final String PASSWORD = "interop";

  final Path dir;
  final Exception failure;

  private TestPki(Path dir, Exception failure) {
    this.dir = dir;
    this.failure = failure;
  }

  static TestPki create() {
    Path dir = null;
    try {
      dir = Files.createTempDirectory("samsa-interop-pki");
      keytool(dir, "-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1",
          "-dname", "CN=Samsa interop CA", "-ext", "bc:c", "-validity", "2",
          "-keystore", "ca.p12", "-storetype", "PKCS12");
      keytool(dir, "-exportcert", "-rfc", "-alias", "ca", "-keystore", "ca.p12", "-file", "ca.pem");
      for (String who : List.of("server", "client")) {
        String ks = who + ".p12";
        keytool(dir, "-genkeypair", "-alias", who, "-keyalg", "EC", "-groupname", "secp256r1",
            "-dname", "CN=interop-" + who + ",O=Samsa", "-validity", "2", "-keystore", ks, "-storetype", "PKCS12");
        keytool(dir, "-certreq", "-alias", who, "-keystore", ks, "-file", who + ".csr");
        keytool(dir, "-gencert", "-alias", "ca", "-keystore", "ca.p12", "-infile", who + ".csr",
            "-outfile", who + ".crt", "-rfc", "-validity", "2",
            "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-ext", "EKU=serverAuth,clientAuth");
        keytool(dir, "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem", "-keystore", ks);
        keytool(dir, "-importcert", "-alias", who, "-file", who + ".crt", "-keystore", ks);
      }
      keytool(dir, "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
          "-keystore", "truststore.p12", "-storetype", "PKCS12");
      return new TestPki(dir, null);
    } catch (Exception e) {
      return new TestPki(dir, e);
    }
  }

  private static void keytool(Path dir, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("keytool"));
    cmd.addAll(List.of(args));
    cmd.addAll(List.of("-storepass", PASSWORD));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("keytool " + String.join(" ", args) + " failed: " + out);
    }
  }

  Path path(String name) {
    return dir.resolve(name);
  }

  /** The broker's ssl.* overrides: PKCS12 stores, client certificates required. */
  List<String> brokerOverrides() {
    if (failure != null) {
      // An override that cannot load makes the broker refuse to start,
      // and the start failure names the keytool error.
      return List.of("ssl.keystore.location=/nonexistent (keytool failed: " + failure.getMessage() + ")");
    }
    return List.of(
        "ssl.keystore.type=PKCS12",
        "ssl.keystore.location=" + path("server.p12"),
        "ssl.keystore.password=" + PASSWORD,
        "ssl.truststore.type=PKCS12",
        "ssl.truststore.location=" + path("truststore.p12"),
        "ssl.truststore.password=" + PASSWORD,
        "ssl.client.auth=required");
  }

  /** A client's SSL properties; with a key store when {@code withCertificate}. */
  Properties clientProps(boolean withCertificate) {
    Properties p = new Properties();
    p.put("security.protocol", "SSL");
    p.put("ssl.truststore.type", "PKCS12");
    p.put("ssl.truststore.location", path("truststore.p12").toString());
    p.put("ssl.truststore.password", PASSWORD);
    if (withCertificate) {
      p.put("ssl.keystore.type", "PKCS12");
      p.put("ssl.keystore.location", path("client.p12").toString());
      p.put("ssl.keystore.password", PASSWORD);
    }
    return p;
  }
}
