package io.pristinedb.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.pristinedb.client.Lease;
import io.pristinedb.client.PristineClient;
import io.pristinedb.client.TestDaemon;
import io.pristinedb.migrations.TemplateSpecs;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.context.junit.jupiter.SpringJUnitConfig;

/** @AutoConfigurePristineDatabase in a plain Spring test context, run by JUnit (EngineTestKit) against a real daemon. */
class SpringSupportTest {
    static final String MIGRATE = "mariadb -u\"$MYSQL_USER\" \"$MYSQL_DATABASE\" < src/test/resources/schema.sql";
    static final Set<String> SERVERS = ConcurrentHashMap.newKeySet();

    @BeforeAll
    static void daemon() {
        TestDaemon.get();
    }

    @Configuration
    static class Config {
        @Bean
        JdbcTemplate jdbc(DataSource ds) {
            return new JdbcTemplate(ds);
        }
    }

    /** Every method on a database of its own, in parallel, through the context's one DataSource. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 4)
    static class PerMethod {
        @Autowired
        JdbcTemplate jdbc;

        void check(String name) throws InterruptedException {
            String server = jdbc.queryForObject("SELECT CONCAT(@@port, '/', DATABASE())", String.class);
            assertTrue(SERVERS.add(server), "another running test is on " + server);
            try {
                jdbc.update("INSERT INTO items (name) VALUES (?)", name);
                Thread.sleep(200);
                assertEquals(List.of(name), jdbc.queryForList("SELECT name FROM items WHERE name <> 'seed'", String.class));
            } finally {
                SERVERS.remove(server);
            }
        }

        @Test
        void one() throws Exception {
            check("one");
        }

        @Test
        void two() throws Exception {
            check("two");
        }

        @Test
        void three() throws Exception {
            check("three");
        }
    }

    /** scope = CLASS: one database for the class; the second test sees the first one's row. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 4,
            scope = AutoConfigurePristineDatabase.Scope.CLASS)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class PerClass {
        @Autowired
        JdbcTemplate jdbc;

        @Test
        @Order(1)
        void first() {
            jdbc.update("INSERT INTO items (name) VALUES ('first')");
        }

        @Test
        @Order(2)
        void second() {
            assertEquals(List.of("first"), jdbc.queryForList("SELECT name FROM items WHERE name <> 'seed'", String.class));
        }
    }

    @Test
    void aDatabasePerClass() {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(PerClass.class)).execute()
                .testEvents().assertStatistics(s -> s.started(2).succeeded(2));
        assertEquals(List.of(), TestDaemon.get().unix().leases().stream().filter(l -> l.holder().equals("PerClass")).toList(),
                "the class's lease is still held");
    }

    /** A failed test's database is kept. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 4,
            keepOnFailure = true)
    static class Failing {
        @Autowired
        JdbcTemplate jdbc;

        @Test
        void fails() {
            jdbc.update("INSERT INTO items (name) VALUES ('evidence')");
            throw new AssertionError("on purpose");
        }
    }

    /** Migrations that fail stop the context with the cause. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring-broken", files = "src/test/resources/schema.sql",
            migrate = "echo \"ERROR 1146 (42S02): Table 'app.nope' doesn't exist\" >&2; exit 1")
    static class Broken {
        @Test
        void never() {
        }
    }

    /** The trap: migrate with no files, keyed by the command's text alone. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring-unkeyed", migrate = MIGRATE)
    static class Unkeyed {
        @Test
        void never() {
        }
    }

    @Configuration
    static class Empty {
    }

    /** The DynamicPropertySource recipe: spring.datasource.* of a lease. */
    @SpringJUnitConfig(Empty.class)
    static class Recipe {
        @DynamicPropertySource
        static void database(DynamicPropertyRegistry registry) {
            PristineDataSources.register(registry, TemplateSpecs.of("java-spring", new String[] {"src/test/resources/schema.sql"}, MIGRATE,
                    new String[0], "", null, "", 4, "", false));
        }

        @Autowired
        Environment env;

        @Test
        void pointsSpringDatasourceAtALease() throws Exception {
            String url = env.getProperty("spring.datasource.url");
            assertTrue(url.startsWith("jdbc:mariadb://127.0.0.1:"), url);
            try (Connection c = DriverManager.getConnection(url, env.getProperty("spring.datasource.username"),
                    env.getProperty("spring.datasource.password")); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM items WHERE name = 'seed'")) {
                rs.next();
                assertEquals(1, rs.getInt(1));
            }
        }
    }

    @Test
    void theDynamicPropertySourceRecipe() {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(Recipe.class)).execute()
                .testEvents().assertStatistics(s -> s.started(1).succeeded(1));
    }

    /** What a query on a thread no test runs on (as an embedded web server's) answers: its server, or its error. */
    static String onAnotherThread(JdbcTemplate jdbc) throws Exception {
        java.util.concurrent.ExecutorService ex = java.util.concurrent.Executors.newSingleThreadExecutor(r -> new Thread(r, "server-thread"));
        try {
            return ex.submit(() -> {
                try {
                    return jdbc.queryForObject("SELECT CONCAT(@@port, '/', DATABASE())", String.class);
                } catch (RuntimeException e) {
                    return "error: " + rootCause(e).getMessage();
                }
            }).get();
        } finally {
            ex.shutdown();
        }
    }

    /** One test at a time: a thread no test runs on uses the running test's database. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 4)
    static class OtherThread {
        @Autowired
        JdbcTemplate jdbc;

        @Test
        void usesTheTestsDatabase() throws Exception {
            jdbc.update("INSERT INTO items (name) VALUES ('mine')");
            assertEquals(jdbc.queryForObject("SELECT CONCAT(@@port, '/', DATABASE())", String.class), onAnotherThread(jdbc));
        }

        @Test
        void seesOnlyItsOwnRows() throws Exception {
            assertEquals(List.of(), jdbc.queryForList("SELECT name FROM items WHERE name <> 'seed'", String.class));
            assertEquals(jdbc.queryForObject("SELECT CONCAT(@@port, '/', DATABASE())", String.class), onAnotherThread(jdbc));
        }
    }

    /** Issue 35: a request thread of an embedded server is no test's thread; its queries go to the running test's database. */
    @Test
    void aThreadNoTestRunsOnUsesTheRunningTestsDatabase() {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(OtherThread.class)).execute()
                .testEvents().assertStatistics(s -> s.started(2).succeeded(2));
    }

    /** Two tests of one context running at once: another thread's connection is refused, naming the fix. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 4)
    static class OtherThreadInParallel {
        static final java.util.concurrent.CyclicBarrier BOTH = new java.util.concurrent.CyclicBarrier(2);

        @Autowired
        JdbcTemplate jdbc;

        void refused() throws Exception {
            BOTH.await(60, java.util.concurrent.TimeUnit.SECONDS); // both tests are running
            String got = onAnotherThread(jdbc);
            BOTH.await(60, java.util.concurrent.TimeUnit.SECONDS); // neither ended before the other asked
            assertTrue(got.contains("which one it is for cannot be told") && got.contains("@Execution(ExecutionMode.SAME_THREAD)"), got);
        }

        @Test
        void one() throws Exception {
            refused();
        }

        @Test
        void two() throws Exception {
            refused();
        }
    }

    @Test
    void aThreadNoTestRunsOnIsRefusedWhileTestsRunInParallel() {
        EngineTestKit.engine("junit-jupiter")
                .configurationParameter("junit.jupiter.execution.parallel.enabled", "true")
                .configurationParameter("junit.jupiter.execution.parallel.mode.default", "concurrent")
                .selectors(selectClass(OtherThreadInParallel.class)).execute()
                .testEvents().assertStatistics(s -> s.started(2).succeeded(2));
    }

    /** Issue 35: a template from Spring's schema.sql and data.sql, with no shell command; the app's own run is off. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring-sqlinit", sqlInit = {"classpath:sqlinit/schema.sql", "classpath:sqlinit/data.sql"})
    static class SqlInitScripts {
        @Autowired
        JdbcTemplate jdbc;

        @Autowired
        Environment env;

        @Test
        void hasWhatTheScriptsWrite() {
            assertEquals(List.of("from data.sql"), jdbc.queryForList("SELECT name FROM items", String.class));
            assertEquals("never", env.getProperty("spring.sql.init.mode"), "the app would run the scripts again at startup");
        }
    }

    @Test
    void sqlInitScriptsBuildTheTemplate() {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(SqlInitScripts.class)).execute()
                .testEvents().assertStatistics(s -> s.started(1).succeeded(1));
    }

    static final String SQLINIT_DIR = "target/sqlinit-key";
    static volatile String sqlInitWant;

    /** Scripts the test rewrites; a context per run (@DirtiesContext), as each run of a suite starts its own. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring-sqlinit-key",
            sqlInit = {"file:" + SQLINIT_DIR + "/schema.sql", "file:" + SQLINIT_DIR + "/data.sql"})
    @org.springframework.test.annotation.DirtiesContext
    static class SqlInitFiles {
        @Autowired
        JdbcTemplate jdbc;

        @Test
        void hasTheCurrentDataSql() {
            assertEquals(List.of(sqlInitWant), jdbc.queryForList("SELECT name FROM items", String.class));
        }
    }

    static String sqlInitKey() {
        AutoConfigurePristineDatabase a = SqlInitFiles.class.getAnnotation(AutoConfigurePristineDatabase.class);
        return PristineContextCustomizerFactory.spec(a).key();
    }

    static void writeDataSql(String name) throws Exception {
        java.nio.file.Files.writeString(java.nio.file.Path.of(SQLINIT_DIR, "data.sql"), "INSERT INTO items (name) VALUES ('" + name + "');\n");
        sqlInitWant = name;
    }

    static void runSqlInitFiles() {
        io.pristinedb.client.TemplateSpec.forgetEnsured(); // as a new JVM: ask the daemon
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(SqlInitFiles.class)).execute()
                .testEvents().assertStatistics(s -> s.started(1).succeeded(1));
    }

    /** A changed data.sql is a new template (a new key, its rows in every test); an unchanged one the same key. */
    @Test
    void aChangedDataSqlIsANewTemplate() throws Exception {
        java.nio.file.Files.createDirectories(java.nio.file.Path.of(SQLINIT_DIR));
        java.nio.file.Files.writeString(java.nio.file.Path.of(SQLINIT_DIR, "schema.sql"),
                "CREATE TABLE items (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL);\n");
        writeDataSql("first");
        String first = sqlInitKey();
        runSqlInitFiles();
        writeDataSql("first");
        assertEquals(first, sqlInitKey(), "the same scripts gave another key");
        writeDataSql("second");
        String second = sqlInitKey();
        assertTrue(!second.equals(first), "a changed data.sql kept the key " + first);
        runSqlInitFiles();
    }

    static Throwable rootCause(Throwable t) {
        StringBuilder all = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            all.append(c.getMessage()).append('\n');
            if (c.getCause() == null) {
                return new RuntimeException(all.toString(), c);
            }
        }
        return t;
    }

    @Test
    void aDatabasePerTestMethodInParallel() {
        EngineTestKit.engine("junit-jupiter")
                .configurationParameter("junit.jupiter.execution.parallel.enabled", "true")
                .configurationParameter("junit.jupiter.execution.parallel.mode.default", "concurrent")
                .selectors(selectClass(PerMethod.class)).execute()
                .testEvents().assertStatistics(s -> s.started(3).succeeded(3));
        io.pristinedb.client.TemplateSpec.releaseAhead(); // what waits ahead for a next class of the pool
        List<Lease> held = TestDaemon.get().unix().leases().stream()
                .filter(l -> l.holder().startsWith("PerMethod.") || l.holder().endsWith("(prefetched)")).toList();
        assertEquals(List.of(), held, "test leases (or one taken ahead) left held");
        assertEquals(List.of(), io.pristinedb.client.TemplateSpec.leasesAhead(), "leases held ahead after they were given back");
        // A started context gives its own database back: cached contexts do not eat the pool.
        assertEquals(List.of(), TestDaemon.get().unix().leases().stream().filter(l -> l.holder().equals("spring context PerMethod")).toList(),
                "the started context still holds its database");
    }

    @Test
    void aFailedTestKeepsItsDatabase() {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(Failing.class)).execute()
                .testEvents().assertStatistics(s -> s.failed(1));
        PristineClient c = TestDaemon.get().unix();
        List<Lease> kept = c.leases().stream().filter(l -> l.kept() && "Failing.fails".equals(l.holder())).toList();
        assertEquals(1, kept.size(), "not kept: " + c.leases());
        Lease l = c.getLease(kept.get(0).id());
        assertEquals(1, new JdbcTemplate(l.dataSource()).queryForObject("SELECT COUNT(*) FROM items WHERE name = 'evidence'", Integer.class));
        c.release(l.id(), false);
    }

    @Test
    void failingMigrationsNameTheCause() {
        EngineExecutionResults r = EngineTestKit.engine("junit-jupiter").selectors(selectClass(Broken.class)).execute();
        r.testEvents().assertStatistics(s -> s.succeeded(0));
        Throwable t = r.allEvents().failed().list().get(0).getPayload(TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow();
        // The report's first line is the cause, not Spring's "Failed to load ApplicationContext".
        assertTrue(t.getMessage().startsWith("template java-spring-broken: build failed, so it was aborted: "), t.getMessage());
        String all = rootCause(t).getMessage();
        assertTrue(all.contains("Table 'app.nope' doesn't exist"), all);
    }

    /** A class whose context would be the first to need the daemon. */
    @SpringJUnitConfig(Config.class)
    @AutoConfigurePristineDatabase(template = "java-spring-nodaemon", files = "src/test/resources/schema.sql", migrate = MIGRATE)
    static class NoDaemon {
        @Test
        void never() {
        }
    }

    /** Issue 35: no daemon is what the report shows first, saying `pristine serve`, before any context loads. */
    @Test
    void noDaemonIsTheFirstThingTheReportShows() throws Exception {
        java.nio.file.Path nowhere = java.nio.file.Files.createTempDirectory("pristine-nodaemon-");
        PristineContextCustomizerFactory.useClient(PristineClient.unix(nowhere.resolve("pristine.sock")));
        try {
            EngineExecutionResults r = EngineTestKit.engine("junit-jupiter").selectors(selectClass(NoDaemon.class)).execute();
            Throwable t = r.allEvents().failed().list().get(0).getPayload(TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow();
            assertTrue(t instanceof io.pristinedb.client.NoDaemonException, "not the first thing reported: " + t);
            assertTrue(t.getMessage().startsWith("no pristine daemon is running on ") && t.getMessage().contains("`pristine serve`"), t.getMessage());
        } finally {
            PristineContextCustomizerFactory.useClient(null);
            java.nio.file.Files.delete(nowhere);
        }
    }

    @Test
    void migrateWithoutFilesIsRefusedNamingFilesAndAllowStale() {
        EngineExecutionResults r = EngineTestKit.engine("junit-jupiter").selectors(selectClass(Unkeyed.class)).execute();
        r.testEvents().assertStatistics(s -> s.succeeded(0));
        Throwable t = r.allEvents().failed().list().get(0).getPayload(TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow();
        String all = rootCause(t).getMessage();
        assertTrue(all.contains("template java-spring-unkeyed: its migrate command (or builder) runs code but no files key it"), all);
        assertTrue(all.contains("files = {") && all.contains("allowStale = true"), all);
    }

    /** A context whose startup writes, as spring.sql.init's data.sql or a Flyway callback would. */
    @Configuration
    static class WritingConfig {
        @Bean
        JdbcTemplate jdbc(DataSource ds) {
            JdbcTemplate t = new JdbcTemplate(ds);
            t.update("INSERT INTO items (name) VALUES ('startup')");
            return t;
        }
    }

    /** The same row on every test's database, whether this run built the template or reused it. */
    public static final class StartupRow implements io.pristinedb.client.LeaseSetup {
        @Override
        public void setup(Lease lease) throws Exception {
            try (Connection c = lease.connect(); Statement st = c.createStatement()) {
                st.execute("INSERT INTO items (name) VALUES ('startup')");
            }
        }
    }

    @SpringJUnitConfig(WritingConfig.class)
    @AutoConfigurePristineDatabase(template = "java-spring", files = "src/test/resources/schema.sql", migrate = MIGRATE, poolSize = 4,
            setup = StartupRow.class)
    static class StartupWrites {
        @Autowired
        JdbcTemplate jdbc;

        @Autowired
        PristineRoutingDataSource ds;

        @Test
        void seesTheStartupRowAndIsToldTheStartupWrote() {
            assertEquals(List.of("startup"), jdbc.queryForList("SELECT name FROM items WHERE name <> 'seed'", String.class));
            assertTrue(ds.startupWrote(), "the startup's write was not noticed");
        }
    }

    /**
     * Parity (issue 22): what the context's startup writes goes to the
     * context's own database; the tests' databases get it from setup = ...,
     * and pristine says when a startup wrote.
     */
    @Test
    void startupWritesAreNoticedAndSetupGivesThemToEveryTest() {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(StartupWrites.class)).execute()
                .testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        assertTrue(PristineRoutingDataSource.startupWroteMessage("t").contains("@AutoConfigurePristineDatabase(setup = ...)"));
    }

    static final java.util.concurrent.atomic.AtomicInteger PARITY_BUILDS = new java.util.concurrent.atomic.AtomicInteger();

    /** The template's part: the schema and its seed, built once. */
    public static final class ParityBuilder implements io.pristinedb.client.TemplateBuilder {
        @Override
        public void build(io.pristinedb.client.DatabaseConnection conn) throws Exception {
            PARITY_BUILDS.incrementAndGet();
            try (Connection c = conn.connect(); Statement st = c.createStatement()) {
                st.execute("CREATE TABLE items (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(64) NOT NULL)");
                st.execute("INSERT INTO items (name) VALUES ('seed')");
            }
        }
    }

    /** A context per run (@DirtiesContext), as each run of a suite starts its own. */
    @SpringJUnitConfig(WritingConfig.class)
    @AutoConfigurePristineDatabase(template = "java-spring-parity", builder = ParityBuilder.class,
            files = "src/test/java/io/pristinedb/spring/SpringSupportTest.java", setup = StartupRow.class, poolSize = 3)
    @org.springframework.test.annotation.DirtiesContext
    static class Parity {
        @Autowired
        JdbcTemplate jdbc;

        @Test
        void seesTheSeed() {
            assertEquals(1, jdbc.queryForObject("SELECT COUNT(*) FROM items WHERE name = 'seed'", Integer.class));
        }

        @Test
        void seesTheStartupRowOnce() {
            assertEquals(List.of("startup"), jdbc.queryForList("SELECT name FROM items WHERE name <> 'seed'", String.class));
        }

        @Test
        void writesAreItsOwn() {
            jdbc.update("INSERT INTO items (name) VALUES ('mine')");
            assertEquals(List.of("startup", "mine"), jdbc.queryForList("SELECT name FROM items WHERE name <> 'seed' ORDER BY id", String.class));
        }
    }

    static java.util.Map<String, String> outcomes() {
        io.pristinedb.client.TemplateSpec.forgetEnsured(); // as a new JVM: ask the daemon
        java.util.Map<String, String> out = new java.util.TreeMap<>();
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(Parity.class)).execute().testEvents().finished().list()
                .forEach(e -> out.put(e.getTestDescriptor().getDisplayName(),
                        e.getPayload(TestExecutionResult.class).orElseThrow().getStatus().toString()));
        return out;
    }

    /** Parity by construction (issue 22): a run that builds the template and one that reuses it, per-test outcomes compared. */
    @Test
    void buildingAndReusingRunsGiveTheSameOutcomes() {
        java.util.Map<String, String> built = outcomes();
        assertEquals(1, PARITY_BUILDS.get(), "the first run did not build the template");
        java.util.Map<String, String> reused = outcomes();
        assertEquals(1, PARITY_BUILDS.get(), "the second run built the template again");
        assertEquals(3, built.size(), built.toString());
        assertTrue(built.values().stream().allMatch("SUCCESSFUL"::equals), built.toString());
        assertEquals(built, reused, "per-test outcomes differ between the building and the reusing run");
    }
}
