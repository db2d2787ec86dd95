package io.pristinedb.client;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * What a database of its own costs a test, with the Java client: N tests
 * ({@code -Dpristine.bench=N}) one after another, each taking a lease (the
 * one the Prefetcher took while the test before ran), getting a connection
 * from the lease's pooled DataSource, running its query, and releasing
 * unchanged in the background as the JUnit extension does
 * ({@link TemplateSpec#end}); then the same N tests on one database they share, in the same
 * run. Writes a table row to target/pertest.md (medians: lease, connect,
 * release, their sum on the test's thread, the test on each side, the
 * ratio). {@code -Dpristine.benchWork=W} has each test work W ms after its
 * query (a sleep), on both sides. The template "pertest" and its pool come from `pristine-bench
 * pertest` (scripts/bench-pertest.sh runs both); not run otherwise.
 */
@EnabledIfSystemProperty(named = "pristine.bench", matches = "\\d+")
class PertestBench {
    private static final String QUERY = "SELECT COUNT(*) FROM item WHERE name LIKE 'item 1%'";

    static final long WORK_MS = Long.getLong("pristine.benchWork", 0);

    /** The test: its query, then its work. */
    static void query(Connection conn) throws Exception {
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(QUERY)) {
            rs.next();
        }
        if (WORK_MS > 0) {
            Thread.sleep(WORK_MS);
        }
    }

    static double ms(long t0, long t1) {
        return (t1 - t0) / 1e6;
    }

    static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        Collections.sort(s);
        int m = s.size() / 2;
        return s.size() % 2 == 1 ? s.get(m) : (s.get(m - 1) + s.get(m)) / 2;
    }

    @Test
    void pertest() throws Exception {
        int n = Integer.parseInt(System.getProperty("pristine.bench"));
        PristineClient c = PristineClient.fromEnv();
        LeaseRequest req = LeaseRequest.of("pertest", "bench-pertest java").withWait(60);
        List<Double> shared = new ArrayList<>();
        Lease s = c.leaseWait(req);
        try (Connection conn = s.connect()) {
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                query(conn);
                shared.add(ms(t0, System.nanoTime()));
            }
        }
        c.release(s.id(), false);
        List<Double> lease = new ArrayList<>(), connect = new ArrayList<>(), release = new ArrayList<>(), over = new ArrayList<>(), own = new ArrayList<>();
        try (Prefetcher p = c.prefetch(req)) {
            p.warm();
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                Lease l = p.lease();
                long t1 = System.nanoTime();
                LeaseDataSource ds = new LeaseDataSource(l);
                Connection conn = ds.getConnection();
                long t2 = System.nanoTime();
                query(conn);
                long t3 = System.nanoTime();
                conn.close();
                ds.close();
                TemplateSpec.end(c, l, false, false, true);
                long t4 = System.nanoTime();
                lease.add(ms(t0, t1));
                connect.add(ms(t1, t2));
                release.add(ms(t3, t4));
                over.add(ms(t0, t2) + ms(t3, t4));
                own.add(ms(t0, t4));
            }
            TemplateSpec.awaitReleases();
        }
        String name = WORK_MS > 0 ? "Java, " + WORK_MS + " ms of work" : "Java";
        String row = String.format("| %s | %d | %.2f / %.2f / %.2f ms | %.2f ms | %.2f / %.2f ms | %.1fx |%n", name, n,
                median(lease), median(connect), median(release), median(over), median(own), median(shared), median(own) / median(shared));
        Files.writeString(Path.of("target", "pertest.md"), row);
    }
}
