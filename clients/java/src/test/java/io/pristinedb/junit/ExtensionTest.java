package io.pristinedb.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.pristinedb.client.DatabaseConnection;
import io.pristinedb.client.Lease;
import io.pristinedb.client.LeaseSetup;
import io.pristinedb.client.PristineClient;
import io.pristinedb.client.TemplateBuilder;
import io.pristinedb.client.TemplateSpec;
import io.pristinedb.client.TestDaemon;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.platform.testkit.engine.EngineTestKit;

/** @PristineDatabase run by JUnit itself (EngineTestKit) against a real daemon. */
class ExtensionTest {
    static final String MIGRATE = "mariadb -u\"$MYSQL_USER\" \"$MYSQL_DATABASE\" < src/test/resources/schema.sql";
    static final Set<String> LEASES = ConcurrentHashMap.newKeySet();
    static final Set<Integer> ACTIVE_PORTS = ConcurrentHashMap.newKeySet();

    @BeforeAll
    static void daemon() {
        TestDaemon.get();
    }

    static long insertOwnRowAndCount(DataSource ds, String name) throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO items (name) VALUES ('" + name + "')");
            try (ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM items WHERE name <> 'seed'")) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    static int port(DataSource ds) throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT @@port")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** Each method, run in parallel, on a database of its own. */
    @PristineDatabase(template = "java-junit", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 3)
    static class PerMethod {
        void check(DataSource ds, Lease lease, String name) throws Exception {
            assertTrue(LEASES.add(lease.id()), "a lease twice");
            int port = port(ds);
            assertTrue(ACTIVE_PORTS.add(port), "another running test has the server on port " + port);
            try {
                Thread.sleep(200);
                assertEquals(1, insertOwnRowAndCount(ds, name), "sees another test's rows");
            } finally {
                ACTIVE_PORTS.remove(port);
            }
        }

        @Test
        void one(DataSource ds, Lease lease) throws Exception {
            check(ds, lease, "one");
        }

        @Test
        void two(DataSource ds, Lease lease) throws Exception {
            check(ds, lease, "two");
        }

        @Test
        void three(DatabaseConnection conn, Lease lease) throws Exception {
            check(conn.dataSource(), lease, "three");
        }
    }

    /** One database for the class: the second test sees the first one's row. */
    @PristineDatabase(template = "java-junit", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 3,
            scope = PristineDatabase.Scope.CLASS)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class PerClass {
        @Test
        @Order(1)
        void first(DataSource ds) throws Exception {
            assertEquals(1, insertOwnRowAndCount(ds, "first"));
        }

        @Test
        @Order(2)
        void second(DataSource ds) throws Exception {
            assertEquals(2, insertOwnRowAndCount(ds, "second"));
        }
    }

    static final List<String> HOLDERS = java.util.Collections.synchronizedList(new java.util.ArrayList<>());

    /** Tests one after another: each after the first gets the database taken ahead while the one before ran. */
    @PristineDatabase(template = "java-junit", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 3)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class OneAfterAnother {
        void check(DataSource ds, Lease lease, String name) throws Exception {
            HOLDERS.add(lease.holder());
            assertEquals(1, insertOwnRowAndCount(ds, name), "sees another test's rows");
        }

        @Test
        @Order(1)
        void first(DataSource ds, Lease lease) throws Exception {
            check(ds, lease, "first");
        }

        @Test
        @Order(2)
        void second(DataSource ds, Lease lease) throws Exception {
            check(ds, lease, "second");
        }

        @Test
        @Order(3)
        void third(DataSource ds, Lease lease) throws Exception {
            check(ds, lease, "third");
        }
    }

    /** A class of the same pool that follows OneAfterAnother. */
    @PristineDatabase(template = "java-junit", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 3)
    static class ThenAnother {
        @Test
        void next(DataSource ds, Lease lease) throws Exception {
            HOLDERS.add(lease.holder());
            assertEquals(1, insertOwnRowAndCount(ds, "next"), "sees another test's rows");
        }
    }

    /** A failing test's database is kept. */
    @PristineDatabase(template = "java-junit", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 3, keepOnFailure = true)
    static class Failing {
        @Test
        void fails(DataSource ds) throws Exception {
            insertOwnRowAndCount(ds, "evidence");
            throw new AssertionError("on purpose");
        }
    }

    /** Only the annotated method gets a database. */
    static class OnMethod {
        @Test
        @PristineDatabase(template = "java-junit", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 3)
        void with(DataSource ds) throws Exception {
            assertEquals(1, insertOwnRowAndCount(ds, "with"));
        }

        @Test
        void without() {
        }
    }

    /** A build that fails names the cause. */
    @PristineDatabase(template = "java-junit-broken", files = "src/test/resources/schema.sql", migrate = "echo 'ERROR 1064: bad SQL' >&2; exit 1")
    static class Broken {
        @Test
        void never(DataSource ds) {
        }
    }

    @Test
    void perMethodInParallel() {
        EngineTestKit.engine("junit-jupiter")
                .configurationParameter("junit.jupiter.execution.parallel.enabled", "true")
                .configurationParameter("junit.jupiter.execution.parallel.mode.default", "concurrent")
                .selectors(selectClass(PerMethod.class)).execute()
                .testEvents().assertStatistics(s -> s.started(3).succeeded(3));
        assertEquals(3, LEASES.size());
        assertLeasesGone();
    }

    @Test
    void perClassAndOnMethod() {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(PerClass.class), selectClass(OnMethod.class)).execute()
                .testEvents().assertStatistics(s -> s.started(4).succeeded(4));
        assertLeasesGone();
    }

    /**
     * Prefetching is on by default: the first test of a class leases as
     * itself, the next ones get the lease taken while the one before ran,
     * and so does the first test of a class of the same pool that follows;
     * what is left ahead goes back once no class came for the linger
     * (pristine.aheadLinger), and at once with a linger of 0.
     */
    @Test
    void leasesTakenAheadServeTheNextClassThenGoBack() throws Exception {
        String ahead = "JVM " + ProcessHandle.current().pid() + " (prefetched)";
        try {
            System.setProperty("pristine.aheadLinger", "1");
            HOLDERS.clear();
            EngineTestKit.engine("junit-jupiter").selectors(selectClass(OneAfterAnother.class), selectClass(ThenAnother.class)).execute()
                    .testEvents().assertStatistics(s -> s.started(4).succeeded(4));
            assertEquals(List.of("OneAfterAnother.first", ahead, ahead, ahead), HOLDERS, "holders of the four tests' leases");
            assertNotEquals(List.of(), TemplateSpec.leasesAhead(), "nothing held ahead for a class that may follow");
            long deadline = System.nanoTime() + 15_000_000_000L;
            while (!TemplateSpec.leasesAhead().isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertEquals(List.of(), TemplateSpec.leasesAhead(), "leases held ahead long after the last class ended");

            System.setProperty("pristine.aheadLinger", "0");
            HOLDERS.clear();
            EngineTestKit.engine("junit-jupiter").selectors(selectClass(OneAfterAnother.class), selectClass(ThenAnother.class)).execute()
                    .testEvents().assertStatistics(s -> s.started(4).succeeded(4));
            assertEquals(List.of("OneAfterAnother.first", ahead, ahead, "ThenAnother.next"), HOLDERS, "holders with no linger");
            assertEquals(List.of(), TemplateSpec.leasesAhead(), "leases held ahead after the class ended, with no linger");
            assertLeasesGone();
        } finally {
            System.clearProperty("pristine.aheadLinger");
            TemplateSpec.releaseAhead();
        }
    }

    @Test
    void failedTestKeepsItsDatabase() throws Exception {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(Failing.class)).execute()
                .testEvents().assertStatistics(s -> s.failed(1));
        PristineClient c = TestDaemon.get().unix();
        List<Lease> kept = c.leases().stream().filter(l -> l.kept() && "Failing.fails".equals(l.holder())).toList();
        assertEquals(1, kept.size(), "not kept: " + c.leases());
        Lease l = c.getLease(kept.get(0).id());
        try (Connection conn = l.connect(); Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM items WHERE name = 'evidence'")) {
            rs.next();
            assertEquals(1, rs.getLong(1), "the kept database lost the failed test's write");
        }
        c.release(l.id(), false);
    }

    @Test
    void brokenMigrationsFailTheTestWithTheCause() {
        var results = EngineTestKit.engine("junit-jupiter").selectors(selectClass(Broken.class)).execute();
        results.testEvents().assertStatistics(s -> s.failed(1));
        Throwable t = results.testEvents().failed().list().get(0).getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .orElseThrow().getThrowable().orElseThrow();
        assertTrue(t.getMessage().startsWith("template java-junit-broken: build failed, so it was aborted: "), t.getMessage());
        assertTrue(t.getMessage().contains("ERROR 1064: bad SQL"), t.getMessage());
    }

    static final AtomicInteger PARITY_BUILDS = new AtomicInteger();
    /** What keys ParityBuilder's template: the file its code is in. */
    static final String PARITY_BUILDER_SOURCE = "src/test/java/io/pristinedb/junit/ExtensionTest.java";
    static volatile String parityRun = "";

    /** The schema and its seed: the template's part, built once. */
    public static final class ParityBuilder implements TemplateBuilder {
        @Override
        public void build(DatabaseConnection conn) throws Exception {
            PARITY_BUILDS.incrementAndGet();
            try (Connection c = conn.connect(); Statement st = c.createStatement()) {
                st.execute("CREATE TABLE items (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(64) NOT NULL)");
                st.execute("INSERT INTO items (name) VALUES ('seed')");
            }
        }
    }

    /** What a stock setup writes after migrating, every run: on every database. */
    public static final class ParitySetup implements LeaseSetup {
        @Override
        public void setup(Lease lease) throws Exception {
            try (Connection c = lease.connect(); Statement st = c.createStatement()) {
                st.execute("INSERT INTO items (name) VALUES ('run " + parityRun + "')");
            }
        }
    }

    public static final class FailingSetup implements LeaseSetup {
        @Override
        public void setup(Lease lease) {
            throw new IllegalStateException("no table settings");
        }
    }

    static List<String> names(DataSource ds, String where) throws SQLException {
        List<String> out = new java.util.ArrayList<>();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT name FROM items WHERE " + where + " ORDER BY id")) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    /** The suite run twice: once building the template, once reusing it. */
    @PristineDatabase(template = "java-parity", builder = ParityBuilder.class, files = PARITY_BUILDER_SOURCE, setup = ParitySetup.class, poolSize = 2)
    static class Parity {
        @Test
        void templateHasTheSeed(DataSource ds) throws Exception {
            assertEquals(List.of("seed"), names(ds, "name = 'seed'"));
        }

        @Test
        void setupWroteThisRunsRowOnce(DataSource ds) throws Exception {
            assertEquals(List.of("run " + parityRun), names(ds, "name LIKE 'run %'"));
        }

        @Test
        void writesAreTheTestsOwn(DataSource ds) throws Exception {
            assertEquals(1, insertOwnRowAndCount(ds, "mine") - 1); // the setup's row and this one
        }
    }

    @PristineDatabase(template = "java-parity", builder = ParityBuilder.class, files = PARITY_BUILDER_SOURCE, setup = FailingSetup.class, poolSize = 2)
    static class ParityFailingSetup {
        @Test
        void never(DataSource ds) {
        }
    }

    static Map<String, String> outcomes(String run) {
        parityRun = run;
        TemplateSpec.forgetEnsured(); // as a new JVM: ask the daemon
        Map<String, String> out = new TreeMap<>();
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(Parity.class)).execute().testEvents().finished().list()
                .forEach(e -> out.put(e.getTestDescriptor().getDisplayName(),
                        e.getPayload(org.junit.platform.engine.TestExecutionResult.class).orElseThrow().getStatus().toString()));
        return out;
    }

    /**
     * Parity by construction (issue 22): the run that builds the template and
     * the run that reuses it give every test the same outcome, since the
     * setup runs on every database of every run.
     */
    @Test
    void buildingAndReusingRunsGiveTheSameOutcomes() {
        Map<String, String> built = outcomes("one");
        assertEquals(1, PARITY_BUILDS.get(), "the first run did not build the template");
        Map<String, String> reused = outcomes("two");
        assertEquals(1, PARITY_BUILDS.get(), "the second run built the template again");
        assertEquals(3, built.size(), built.toString());
        assertTrue(built.values().stream().allMatch("SUCCESSFUL"::equals), built.toString());
        assertEquals(built, reused, "per-test outcomes differ between the building and the reusing run");
        var results = EngineTestKit.engine("junit-jupiter").selectors(selectClass(ParityFailingSetup.class)).execute();
        results.testEvents().assertStatistics(s -> s.failed(1));
        Throwable t = results.testEvents().failed().list().get(0).getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .orElseThrow().getThrowable().orElseThrow();
        assertTrue(t.getMessage().contains("setup " + FailingSetup.class.getName() + " failed on a new database")
                && t.getMessage().contains("no table settings"), t.getMessage());
        TemplateSpec.releaseAhead(); // what waits ahead for a next class
        assertEquals(List.of(), TestDaemon.get().unix().leases().stream().filter(l -> "java-parity".equals(l.template())).toList());
    }

    static void assertLeasesGone() {
        TemplateSpec.releaseAhead(); // what waits ahead for a next class (leasesTakenAheadServeTheNextClassThenGoBack)
        TemplateSpec.awaitReleases(); // a class's end does it; a test method's annotation has no class end
        List<Lease> left = TestDaemon.get().unix().leases().stream().filter(l -> l.template().startsWith("java-junit") || l.holder().startsWith("Per")
                || l.holder().endsWith("(prefetched)")).toList();
        assertEquals(List.of(), left.stream().filter(l -> !l.kept()).map(Lease::holder).toList(), "leases left held");
        assertNotEquals(null, left);
    }
}
