package io.pristinedb.client;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A real `pristine serve` for the tests, on a fresh root under /dev/shm
 * (its parent 0711, so the account pristine's servers can pass through),
 * listening on its unix socket and on loopback TCP. One per JVM; shut down
 * and removed when the JVM exits. The binary is $PRISTINE_BIN or the
 * repository's bin/pristine (`bash scripts/build.sh`).
 */
public final class TestDaemon {
    public final Path base;
    public final Path root;
    public final String addr;
    public final String token;
    private final Process proc;
    private final StringBuilder log = new StringBuilder();

    private static TestDaemon shared;

    /** The JVM's daemon; also sets -Dpristine.root so the integrations find it. */
    public static synchronized TestDaemon get() {
        if (shared == null) {
            shared = start();
            System.setProperty("pristine.root", shared.root.toString());
            Runtime.getRuntime().addShutdownHook(new Thread(shared::stop));
        }
        return shared;
    }

    static Path binary() {
        String b = System.getenv("PRISTINE_BIN");
        if (b != null && !b.isEmpty()) {
            return Path.of(b);
        }
        Path repo = Path.of("").toAbsolutePath();
        while (repo != null && !Files.exists(repo.resolve("go.mod"))) {
            repo = repo.getParent();
        }
        if (repo == null || !Files.isExecutable(repo.resolve("bin/pristine"))) {
            throw new IllegalStateException("no pristine binary: run `bash scripts/build.sh` in the repository, or set PRISTINE_BIN");
        }
        return repo.resolve("bin/pristine");
    }

    private TestDaemon(Path base, Process proc, String addr) throws IOException {
        this.base = base;
        this.root = base.resolve("root");
        this.proc = proc;
        this.addr = addr;
        this.token = Files.readString(root.resolve("token")).trim();
    }

    static TestDaemon start() {
        return start(new String[0]);
    }

    /** A daemon of its own with more flags, e.g. --slot-tls; stop it when done. */
    static TestDaemon start(String... args) {
        try {
            Path base = Files.createTempDirectory(Path.of("/dev/shm"), "pristine-java-test-");
            Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwx--x--x"));
            java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(binary().toString(), "serve", "--root", base.resolve("root").toString(), "--listen", "127.0.0.1:0"));
            cmd.addAll(java.util.List.of(args));
            Process p = new ProcessBuilder(cmd)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
            Pattern serving = Pattern.compile("pristine: serving http://([^/]+)/");
            StringBuilder seen = new StringBuilder();
            String addr = null;
            for (String line; (line = err.readLine()) != null; ) {
                seen.append(line).append('\n');
                Matcher m = serving.matcher(line);
                if (m.find()) {
                    addr = m.group(1);
                    break;
                }
            }
            if (addr == null) {
                p.destroyForcibly();
                throw new IllegalStateException("pristine serve did not start:\n" + seen);
            }
            TestDaemon d = new TestDaemon(base, p, addr);
            Thread drain = new Thread(() -> {
                try {
                    for (String line; (line = err.readLine()) != null; ) {
                        synchronized (d.log) {
                            d.log.append(line).append('\n');
                        }
                    }
                } catch (IOException ignored) {
                    // the daemon exited
                }
            }, "pristine-serve-log");
            drain.setDaemon(true);
            drain.start();
            for (int i = 0; i < 100 && !Files.exists(d.root.resolve("pristine.sock")); i++) {
                Thread.sleep(50);
            }
            return d;
        } catch (IOException e) {
            throw new IllegalStateException("start pristine serve: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public PristineClient unix() {
        return PristineClient.unix(root.resolve("pristine.sock"));
    }

    public PristineClient tcp() {
        return PristineClient.tcp(addr, token);
    }

    public String log() {
        synchronized (log) {
            return log.toString();
        }
    }

    /** Shuts the daemon down (every pool with it) and removes the root. */
    public void stop() {
        try {
            unix().shutdown();
        } catch (RuntimeException ignored) {
            // already gone
        }
        try {
            if (!proc.waitFor(60, TimeUnit.SECONDS)) {
                proc.destroy();
                proc.waitFor(20, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (Stream<Path> s = Files.walk(base)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // best effort
        }
    }
}
