package io.samsa.interop;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Names the compatibility-matrix cell a test fills ({@link #value}) and, for a
 * feature whose broker side is still being built, the issue that will make it
 * pass ({@link #issue}); {@link ResultRecorder} prints that issue beside a
 * failure so a red cell always says why.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface Feature {
  String value();

  String issue() default "";
}
