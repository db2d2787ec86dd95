package example.shop;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * The baseline's server: what Testcontainers' MariaDB module does, without
 * Docker. A new data directory (mariadb-install-db) under /dev/shm, a
 * mariadbd on a free loopback port (as the account pristine when run as
 * root), a database and an account for the test; stopped and removed by
 * {@link #close()}.
 */
final class FreshMariadbd implements AutoCloseable {
    private final Path dir;
    private final Process proc;
    private final int port;

    private FreshMariadbd(Path dir, Process proc, int port) {
        this.dir = dir;
        this.proc = proc;
        this.port = port;
    }

    private static boolean root() {
        return "root".equals(System.getProperty("user.name"));
    }

    static FreshMariadbd start() {
        Path dir = null;
        Process p = null;
        try {
            dir = Files.createTempDirectory(Path.of("/dev/shm"), "pristine-examples-fresh-test-");
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
            Path data = dir.resolve("data");
            List<String> install = new ArrayList<>(List.of("mariadb-install-db", "--no-defaults", "--datadir=" + data,
                    "--auth-root-authentication-method=normal", "--skip-test-db"));
            if (root()) {
                install.add("--user=pristine");
            }
            run(install);
            int port;
            try (ServerSocket s = new ServerSocket(0)) {
                port = s.getLocalPort();
            }
            List<String> cmd = new ArrayList<>(List.of("/usr/sbin/mariadbd", "--no-defaults", "--datadir=" + data,
                    "--socket=" + data.resolve("mysqld.sock"), "--port=" + port, "--bind-address=127.0.0.1",
                    "--skip-name-resolve", "--log-error=" + data.resolve("error.log")));
            if (root()) {
                cmd.add("--user=pristine");
            }
            p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            FreshMariadbd s = new FreshMariadbd(dir, p, port);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try (Connection c = DriverManager.getConnection("jdbc:mariadb://127.0.0.1:" + port + "/", "root", "")) {
                    c.createStatement().execute("CREATE DATABASE shop");
                    c.createStatement().execute("CREATE USER shop@'%' IDENTIFIED BY 'shop'");
                    c.createStatement().execute("GRANT ALL ON shop.* TO shop@'%'");
                    break;
                } catch (SQLException e) {
                    if (!p.isAlive() || System.nanoTime() > deadline) {
                        throw new IllegalStateException("mariadbd did not start: " + e + "\n" + log(data), e);
                    }
                    Thread.sleep(50);
                }
            }
            return s;
        } catch (IOException | InterruptedException | RuntimeException e) {
            if (p != null) {
                p.destroyForcibly();
            }
            if (dir != null) {
                remove(dir);
            }
            throw new IllegalStateException("fresh mariadbd: " + e, e);
        }
    }

    private static String log(Path data) {
        try {
            return Files.readString(data.resolve("error.log"));
        } catch (IOException e) {
            return "";
        }
    }

    private static void run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (p.waitFor() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed: " + new String(out));
        }
    }

    void register(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", () -> "jdbc:mariadb://127.0.0.1:" + port + "/shop");
        registry.add("spring.datasource.username", () -> "shop");
        registry.add("spring.datasource.password", () -> "shop");
    }

    @Override
    public void close() {
        proc.destroy();
        try {
            if (!proc.waitFor(30, TimeUnit.SECONDS)) {
                proc.destroyForcibly();
                proc.waitFor();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        remove(dir);
    }

    private static void remove(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException ignored) {
            // best effort
        }
    }
}
