package io.samsa.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * Appends one line per test to the results file named by the system property
 * {@code interop.results} (or {@code INTEROP_RESULTS}):
 * {@code client TAB feature TAB pass|fail|skip TAB note}. interop/run turns
 * these lines from every suite into the compatibility matrix. Parameterized
 * invocations are named "feature param", e.g. "produce+consume compression=lz4".
 */
public final class ResultRecorder implements TestWatcher {
  static final String CLIENT = "java kafka-clients";

  @Override
  public void testSuccessful(ExtensionContext context) {
    write(context, "pass", "");
  }

  @Override
  public void testFailed(ExtensionContext context, Throwable cause) {
    String issue = feature(context).map(Feature::issue).orElse("");
    String msg = String.valueOf(cause.getMessage()).lines().findFirst().orElse("");
    if (msg.length() > 160) {
      msg = msg.substring(0, 160) + "...";
    }
    String note = cause.getClass().getSimpleName() + ": " + msg;
    write(context, "fail", issue.isEmpty() ? note : "issue " + issue + " (" + note + ")");
  }

  @Override
  public void testAborted(ExtensionContext context, Throwable cause) {
    write(context, "skip", String.valueOf(cause.getMessage()));
  }

  @Override
  public void testDisabled(ExtensionContext context, Optional<String> reason) {
    write(context, "skip", reason.orElse("disabled"));
  }

  private static Optional<Feature> feature(ExtensionContext context) {
    return context.getTestMethod().map(m -> m.getAnnotation(Feature.class));
  }

  private static String name(ExtensionContext context) {
    String base =
        feature(context).map(Feature::value).orElse(context.getDisplayName());
    // A parameterized invocation's own display name is the parameter ("lz4");
    // its parent is the method's container.
    boolean invocation =
        context.getParent().flatMap(ExtensionContext::getTestMethod).isPresent();
    return invocation ? base + " " + context.getDisplayName() : base;
  }

  private static void write(ExtensionContext context, String status, String note) {
    String file = System.getProperty("interop.results");
    if (file == null || file.isBlank() || file.startsWith("${")) {
      file = System.getenv("INTEROP_RESULTS");
    }
    if (file == null || file.isBlank()) {
      return;
    }
    String line =
        String.join(
                "\t",
                CLIENT,
                name(context),
                status,
                note.replace('\t', ' ').replace('\n', ' '))
            + "\n";
    try {
      Files.writeString(
          Path.of(file),
          line,
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
