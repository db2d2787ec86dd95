package example.shop;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Times of the run for the benchmark (scripts/bench-spring.sh): when the
 * first test began and the last one ended, in ms since the JVM started,
 * written to target/bench-LABEL.properties with -Dshop.bench=LABEL.
 */
final class Bench {
    private static final long JVM_START = ManagementFactory.getRuntimeMXBean().getStartTime();
    private static final AtomicLong FIRST = new AtomicLong(Long.MAX_VALUE);
    private static final AtomicLong LAST = new AtomicLong();

    static {
        String label = System.getProperty("shop.bench");
        if (label != null && !label.isEmpty()) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    Files.writeString(Path.of("target", "bench-" + label + ".properties"),
                            "first_test_ms=" + (FIRST.get() - JVM_START) + "\nlast_test_end_ms=" + (LAST.get() - JVM_START) + "\n");
                } catch (IOException e) {
                    System.err.println("bench: " + e);
                }
            }));
        }
    }

    private Bench() {
    }

    static void testStarted() {
        FIRST.accumulateAndGet(System.currentTimeMillis(), Math::min);
    }

    static void testEnded() {
        LAST.accumulateAndGet(System.currentTimeMillis(), Math::max);
    }
}
