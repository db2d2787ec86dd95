package io.pristinedb.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pristinedb.migrations.TemplateSpecs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client against a real daemon and real servers (TestDaemon). */
class ClientTest {
    static TestDaemon d;

    @BeforeAll
    static void daemon() {
        d = TestDaemon.get();
    }

    static void exec(DatabaseConnection c, String... sql) throws SQLException {
        try (Connection conn = c.connect(); Statement st = conn.createStatement()) {
            for (String s : sql) {
                st.execute(s);
            }
        }
    }

    static long count(Connection conn, String sql) throws SQLException {
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static String uniqueKey(String name) {
        return ContentKey.of(List.of(), List.of(name, String.valueOf(System.nanoTime())));
    }

    @Test
    void contentKeyMatchesTheSharedVectors(@TempDir Path tmp) throws Exception {
        Json f = Json.parse(Files.readString(Path.of("../../testdata/contentkey/vectors.json")));
        assertTrue(f.path("vectors").size() > 0);
        int i = 0;
        for (Json v : f.path("vectors")) {
            Path dir = tmp.resolve(String.valueOf(i++));
            Files.createDirectories(dir);
            for (String file : v.path("files").fieldNames()) {
                Path p = dir.resolve(file);
                Files.createDirectories(p.getParent());
                Files.writeString(p, v.path("files").path(file).asText(), java.nio.charset.StandardCharsets.UTF_8);
            }
            List<String> pats = new ArrayList<>();
            v.path("patterns").forEach(p -> pats.add(dir.resolve(p.asText()).toString()));
            List<String> extra = new ArrayList<>();
            v.path("extra").forEach(e -> extra.add(e.asText()));
            String name = v.path("name").asText();
            assertEquals(v.path("key").asText(), ContentKey.of(pats, extra), name);
            // Relative patterns under a directory give the same key.
            List<String> rel = new ArrayList<>();
            v.path("patterns").forEach(p -> rel.add(p.asText()));
            assertEquals(v.path("key").asText(), ContentKey.of(rel, extra, dir), "relative " + name);
        }
        PristineException e = assertThrows(PristineException.class, () -> ContentKey.of(List.of(tmp.resolve("nope").toString()), List.of()));
        assertTrue(e.getMessage().contains("matches no file"), e.getMessage());
    }

    @Test
    void noDaemonSaysHowToStartOne() {
        PristineClient c = PristineClient.unix(d.base.resolve("nothing-here/pristine.sock"));
        NoDaemonException e = assertThrows(NoDaemonException.class, c::health);
        assertTrue(e.getMessage().startsWith("no pristine daemon is running on " + d.base.resolve("nothing-here/pristine.sock")), e.getMessage());
        assertTrue(e.getMessage().contains("`pristine serve`"), e.getMessage());
        // And through the whole flow.
        TemplateSpec spec = new TemplateSpec("none", List.of(), List.of("x"), conn -> { }, null, 1, null);
        assertThrows(NoDaemonException.class, () -> spec.ensure(c));
    }

    @Test
    void aDaemonThatDoesNotAnswerIsGivenUpOn() throws Exception {
        Path sock = d.base.resolve("silent.sock");
        try (java.nio.channels.ServerSocketChannel server = java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
            server.bind(java.net.UnixDomainSocketAddress.of(sock));
            Thread t = new Thread(() -> {
                try (java.nio.channels.SocketChannel held = server.accept()) {
                    Thread.sleep(10_000); // reads nothing, answers nothing
                } catch (Exception ignored) {
                    // closed by the test
                }
            });
            t.setDaemon(true);
            t.start();
            PristineException e = assertThrows(PristineException.class, () -> PristineClient.unix(sock).withTimeout(1).health());
            assertTrue(e.getMessage().contains("the daemon did not answer in 1 s"), e.getMessage());
        } finally {
            java.nio.file.Files.deleteIfExists(sock);
        }
    }

    @Test
    void tcpNeedsTheToken() {
        d.tcp().health();
        PristineException e = assertThrows(PristineException.class, () -> PristineClient.tcp(d.addr, "wrong").health());
        assertEquals(401, e.status(), e.getMessage());
    }

    @Test
    void buildsOnceAcrossThreadsAndTransportsThenLeasesIsolatedDatabases() throws Exception {
        String key = uniqueKey("once");
        AtomicInteger runs = new AtomicInteger();
        TemplateBuilder build = conn -> {
            runs.incrementAndGet();
            Thread.sleep(300); // the others wait meanwhile
            exec(conn, "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO canary VALUES (1, 'pristine')");
        };
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<String>> hashes = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            PristineClient c = i % 2 == 0 ? d.unix() : d.tcp();
            hashes.add(pool.submit(() -> c.ensureTemplate(TemplateRequest.of("java-once", key), build, 0).hash()));
        }
        Set<String> distinct = ConcurrentHashMap.newKeySet();
        for (Future<String> f : hashes) {
            distinct.add(f.get());
        }
        pool.shutdown();
        assertEquals(1, runs.get(), "the template was built more than once");
        assertEquals(1, distinct.size(), "callers got different templates: " + distinct);
        String hash = distinct.iterator().next();
        PristineClient c = d.unix();
        c.ensurePool("java-once", hash, 2);
        c.ensurePool("java-once", hash, 2); // already up: nothing to do

        Lease a = c.leaseWait(LeaseRequest.of("java-once", "a"));
        Lease b = d.tcp().leaseWait(LeaseRequest.of("java-once", "b"));
        assertNotEquals(a.id(), b.id());
        assertEquals(ProcessHandle.current().pid(), a.pid());
        assertTrue(!a.toString().contains(a.password()), "toString shows the password");
        // Both drivers open both databases.
        for (DatabaseConnection.Driver drv : DatabaseConnection.Driver.values()) {
            for (Lease l : List.of(a, b)) {
                try (Connection conn = DriverManager.getConnection(l.jdbcUrl(drv), l.user(), l.password())) {
                    assertEquals(1, count(conn, "SELECT COUNT(*) FROM canary WHERE v = 'pristine'"), drv + " " + l);
                }
            }
        }
        exec(a, "INSERT INTO canary VALUES (2, 'a wrote')");
        try (Connection conn = b.connect()) {
            assertEquals(1, count(conn, "SELECT COUNT(*) FROM canary"), "b sees a's write");
        }
        assertTrue(c.releaseWait(a.id(), true), "a written database was not reset");
        c.release(b.id(), true);
        // The next lease is pristine again.
        Lease again = c.leaseWait(LeaseRequest.of("java-once", "again"));
        try (Connection conn = again.connect()) {
            assertEquals(1, count(conn, "SELECT COUNT(*) FROM canary"), "a released database kept a write");
        }
        c.release(again.id(), false);
    }

    @Test
    void aFailedBuildIsAbortedWithTheMigrationsErrorAndTriedAgain() throws Exception {
        String key = uniqueKey("fails");
        PristineClient c = d.unix();
        PristineException e = assertThrows(PristineException.class, () -> c.ensureTemplate(TemplateRequest.of("java-fails", key),
                conn -> exec(conn, "CREATE TABLE ok (id INT)", "CREATE TABLE broken (id NOPE)"), 0));
        assertTrue(e.getMessage().startsWith("template java-fails: build failed, so it was aborted: "), e.getMessage());
        assertTrue(e.getMessage().contains("NOPE"), "the SQL error is not in the message: " + e.getMessage());
        // The next try builds it.
        TemplateAnswer a = c.ensureTemplate(TemplateRequest.of("java-fails", key), conn -> exec(conn, "CREATE TABLE ok (id INT)"), 0);
        assertEquals(TemplateAnswer.READY, a.status());
        // A shell command fails the same way, with its output.
        PristineException ce = assertThrows(PristineException.class, () -> c.ensureTemplate(TemplateRequest.of("java-fails-cmd", uniqueKey("cmd")),
                TemplateSpecs.command("echo migrating; exit 3"), 0));
        assertTrue(ce.getMessage().contains("exited with status 3: migrating"), ce.getMessage());
    }

    /** A template of name built by loading src/test/resources/schema.sql, keyed by key, with a pool of poolSize. */
    private static TemplateSpec schemaSpec(String name, String key, int poolSize) {
        return new TemplateSpec(name, List.of(), List.of(key), TemplateSpecs.command(
                "mariadb -u\"$MYSQL_USER\" \"$MYSQL_DATABASE\" < src/test/resources/schema.sql"), null, poolSize, null, true);
    }

    /**
     * Tests shorter than taking a lease and a connect get a second lease
     * taken ahead, from a slot that is free: here tests of no work that
     * release dirty wait for the resets behind their leases taken ahead,
     * and once the resets are done the next lease brings two ahead;
     * closing gives both back.
     */
    @Test
    void secondLeaseAheadForShortTests() throws Exception {
        PristineClient c = d.unix();
        String name = "java-prefetch-two";
        TemplateSpec spec = schemaSpec(name, uniqueKey("prefetch-two"), 4);
        spec.ensure(c);
        try (Prefetcher p = c.prefetch(LeaseRequest.of(name, "prefetch").withWait(60))) {
            p.warm();
            for (int i = 0; i < 20; i++) {
                c.release(p.lease().id(), false);
            }
            Lease held = p.lease();
            // The resets done: no slot resetting, one ready, and every slot
            // leased is the one held or one taken ahead (a spare ahead that
            // found none free is taken again at the next lease).
            for (long deadline = System.nanoTime() + 30_000_000_000L; System.nanoTime() < deadline; Thread.sleep(20)) {
                Json st = c.pool(name).path("states");
                if (st.path("resetting").asInt() == 0 && st.path("ready").asInt() > 0
                        && st.path("leased").asInt() == 1 + p.ahead().size()) {
                    break;
                }
            }
            c.release(held.id(), true);
            Lease l = p.lease();
            long ahead = 0;
            for (long deadline = System.nanoTime() + 30_000_000_000L; ahead < 2 && System.nanoTime() < deadline; Thread.sleep(20)) {
                ahead = c.leases().stream().filter(x -> name.equals(x.template()) && !x.id().equals(l.id())).count();
            }
            assertEquals(2, ahead, "leases taken ahead for tests that waited for theirs, with free slots");
            c.release(l.id(), true);
        }
        assertTrue(c.leases().stream().noneMatch(x -> name.equals(x.template())), "leases left: " + c.leases());
        assertEquals(0, LeaseDataSource.ahead(), "connections opened ahead outlived their leases");
    }

    /**
     * A lease's pooled DataSource gives the same server connection back
     * after a close (one connection per test, not one per transaction), and
     * a Prefetcher hands out the lease it took while the one before was in
     * use: each pristine, though each test writes; its threads are kept.
     */
    @Test
    void pooledConnectionsAndPrefetchedLeases() throws Exception {
        TemplateSpec.releaseAhead(); // what other classes' tests left waiting ahead for a next class
        PristineClient c = d.unix();
        TemplateSpec spec = schemaSpec("java-prefetch", uniqueKey("prefetch"), 2);
        spec.ensure(c);
        try (Prefetcher p = c.prefetch(LeaseRequest.of("java-prefetch", "prefetch").withWait(60))) {
            p.warm();
            for (int i = 0; i < 3; i++) {
                Lease l = p.lease();
                long first;
                try (LeaseDataSource ds = new LeaseDataSource(l)) {
                    // The connection the Prefetcher opened ahead, kept.
                    assertEquals(1, ds.idle(), "no connection opened ahead for lease " + i);
                    try (Connection conn = ds.getConnection()) {
                        assertEquals(0, count(conn, "SELECT COUNT(*) FROM items WHERE name = 'written'"), "lease " + i + " is not pristine");
                        conn.createStatement().execute("INSERT INTO items (name) VALUES ('written')");
                        first = count(conn, "SELECT CONNECTION_ID()");
                    }
                    try (Connection conn = ds.getConnection()) {
                        assertEquals(first, count(conn, "SELECT CONNECTION_ID()"), "the pooled DataSource opened a new connection");
                    }
                    assertEquals(1, ds.idle());
                }
                // The next lease is taken ahead while this one is held.
                long ahead = 0;
                for (long deadline = System.nanoTime() + 30_000_000_000L; ahead == 0 && System.nanoTime() < deadline; Thread.sleep(20)) {
                    ahead = c.leases().stream().filter(x -> "java-prefetch".equals(x.template()) && !x.id().equals(l.id())).count();
                }
                assertEquals(1, ahead, "no lease taken ahead while lease " + i + " was held");
                c.release(l.id(), false);
            }
            // Four leases were taken ahead, on threads kept between them
            // (not a thread each, the JDK's default with one or two cores).
            long threads = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("pristine-prefetch")).count();
            assertTrue(threads >= 1 && threads < 4, threads + " threads took the 4 leases ahead");
        }
        assertTrue(c.leases().stream().noneMatch(l -> "java-prefetch".equals(l.template())), "leases left: " + c.leases());
        assertEquals(0, LeaseDataSource.ahead(), "connections opened ahead outlived their leases");
    }

    @Test
    void endReleasesInTheBackground() throws Exception {
        PristineClient c = d.unix();
        TemplateSpec spec = schemaSpec("java-bgrelease", uniqueKey("bgrelease"), 1);
        spec.ensure(c);
        Lease l = spec.lease(c, "bgrelease", 30);
        // The release is not the test's: a daemon that cannot be reached
        // fails it in the background (a message), not the test.
        PristineClient gone = PristineClient.unix(Path.of("/nonexistent-pristine-dir/pristine.sock"));
        assertNull(TemplateSpec.end(gone, l, false, false, true));
        TemplateSpec.awaitReleases();
        assertTrue(c.leases().stream().anyMatch(x -> x.id().equals(l.id())), "released through a client of no daemon");
        assertNull(TemplateSpec.end(c, l, false, false, true));
        TemplateSpec.awaitReleases();
        assertTrue(c.leases().stream().noneMatch(x -> x.id().equals(l.id())), "still held after awaitReleases: " + c.leases());
    }

    @Test
    void noDatabaseFreeNamesThePoolSize() throws Exception {
        String key = uniqueKey("busy");
        PristineClient c = d.unix();
        TemplateSpec spec = schemaSpec("java-busy", key, 1);
        spec.ensure(c);
        Lease held = spec.lease(c, "holder", 10);
        try (Connection conn = held.connect()) {
            assertEquals(1, count(conn, "SELECT COUNT(*) FROM items WHERE name = 'seed'"), "the command did not build the template");
        }
        PristineException e = assertThrows(PristineException.class, () -> spec.lease(c, "second", 1));
        assertEquals(503, e.status(), e.getMessage());
        assertTrue(e.getMessage().startsWith("lease a database of java-busy: "), e.getMessage());
        assertTrue(e.getMessage().contains("raise poolSize"), e.getMessage());
        // Kept: listed as kept, and still held after "end" with a failed test.
        String msg = TemplateSpec.end(c, held, true, true, true);
        assertTrue(msg.contains("pristine release " + held.id()) && msg.contains("mariadb -h"), msg);
        assertTrue(c.leases().stream().anyMatch(l -> l.id().equals(held.id()) && l.kept()), "not kept: " + c.leases());
        c.release(held.id(), false);
        assertTrue(c.leases().stream().noneMatch(l -> l.id().equals(held.id())), "still held after release");
    }

    /**
     * No silent stale templates: a migrate command no file keys is refused
     * before it runs, naming files and allowStale; keyed by its migrations,
     * a changed migration between two builds gets a new template.
     */
    @Test
    void aBuildNoFileKeysIsRefusedAndAChangedMigrationGetsANewTemplate() throws Exception {
        PristineClient c = d.unix();
        Path dir = Files.createTempDirectory(d.base, "stale-");
        Path mig = dir.resolve("001.sql");
        Files.writeString(mig, "CREATE TABLE items (name VARCHAR(20)); INSERT INTO items VALUES ('one');");
        String cmd = "mariadb -u\"$MYSQL_USER\" \"$MYSQL_DATABASE\" < " + mig;
        TemplateSpec unkeyed = new TemplateSpec("java-stale", List.of(), List.of(cmd), TemplateSpecs.command(cmd), null, 1, null);
        PristineException e = assertThrows(PristineException.class, () -> unkeyed.ensure(c));
        assertEquals(PristineException.UNKEYED_BUILD, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("files = {") && e.getMessage().contains("allowStale = true"), e.getMessage());
        TemplateSpec keyed = new TemplateSpec("java-stale", List.of(dir.toString()), List.of(cmd), TemplateSpecs.command(cmd), null, 1, null);
        String first = keyed.ensure(c);
        Files.writeString(mig, "CREATE TABLE items (name VARCHAR(20)); INSERT INTO items VALUES ('two');");
        String second = keyed.ensure(c);
        assertNotEquals(first, second, "a changed migration got the old template");
        Lease l = keyed.lease(c, "stale", 30);
        try (Connection conn = l.connect()) {
            assertEquals(1, count(conn, "SELECT COUNT(*) FROM items WHERE name = 'two'"), "the new template lacks the changed migration's row");
        } finally {
            c.release(l.id(), false);
        }
    }

    /** A run that needs more slots than the pool has grows it: min_size on a lease, ensurePool of a larger size. */
    @Test
    void aSmallerPoolGrowsToWhatTheRunNeeds() throws Exception {
        PristineClient c = d.unix();
        TemplateSpec one = schemaSpec("java-grows", uniqueKey("grows"), 1);
        String hash = one.ensure(c);
        assertEquals(1, c.pool("java-grows").path("size").asInt());
        List<Lease> held = new ArrayList<>();
        try {
            held.add(one.lease(c, "a", 10));
            // Without min_size a second lease waits for the one slot.
            PristineException e = assertThrows(PristineException.class, () -> c.leaseWait(LeaseRequest.of("java-grows", "b").withWait(1)));
            assertEquals(503, e.status(), e.getMessage());
            held.add(c.leaseWait(LeaseRequest.of("java-grows", "b").withWait(60).withMinSize(3)));
            assertEquals(3, c.pool("java-grows").path("size").asInt());
            // A spec of pool size 4 (a run with more threads) grows it on its first lease.
            TemplateSpec four = new TemplateSpec("java-grows", one.patterns(), one.extra(), one.builder(), null, 4, null, true);
            held.add(four.lease(c, "c", 60));
            assertEquals(4, c.pool("java-grows").path("size").asInt());
            held.add(four.lease(c, "d", 60));
            assertEquals(4, held.stream().map(l -> l.port() + "/" + l.database()).distinct().count());
            try (Connection conn = held.get(3).connect()) {
                assertEquals(1, count(conn, "SELECT COUNT(*) FROM items WHERE name = 'seed'"), "a grown slot is not of the template");
            }
            // ensurePool of a larger size grows it too.
            c.ensurePool("java-grows", hash, 5);
            assertEquals(5, c.pool("java-grows").path("size").asInt());
        } finally {
            for (Lease l : held) {
                c.release(l.id(), false);
            }
        }
        c.poolDown("java-grows");
    }

    /**
     * A fork is a template of a lease's current state: its leases see the
     * row written before it, the same key returns the fork made before,
     * and the lease's connection goes on.
     */
    @Test
    void forkMakesATemplateOfALeaseAndTheLeaseGoesOn() throws Exception {
        PristineClient c = d.unix();
        TemplateAnswer base = c.ensureTemplate(TemplateRequest.of("java-forkbase", uniqueKey("forkbase")),
                conn -> exec(conn, "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO canary VALUES (1, 'pristine')"), 0);
        c.ensurePool("java-forkbase", base.hash(), 1);
        Lease l = c.leaseWait(LeaseRequest.of("java-forkbase", "fork"));
        ForkAnswer a;
        try (Connection conn = l.connect(); Statement st = conn.createStatement()) {
            st.execute("UPDATE canary SET v = 'loaded'");
            a = c.fork(l.id(), "java-forked", "fixtures-v1");
            assertTrue(a.built(), a.toString());
            assertEquals("java-forked", a.template().path("name").asText());
            assertEquals(base.hash(), a.template().path("parent").asText());
            assertEquals("java-forkbase", a.template().path("parent_name").asText());
            // The holder's connection survives the fork.
            assertEquals(1, count(conn, "SELECT COUNT(*) FROM canary WHERE v = 'loaded'"), "the holder's connection after the fork");
            // The same key again: the fork made before, at once.
            ForkAnswer again = c.fork(l.id(), "java-forked", "fixtures-v1");
            assertTrue(!again.built(), again.toString());
            assertEquals(a.hash(), again.hash());
        } finally {
            c.release(l.id(), false);
        }
        c.ensurePool("java-forked", a.hash(), 1);
        Lease f = c.leaseWait(LeaseRequest.of("java-forked", "of the fork"));
        try (Connection conn = f.connect()) {
            assertEquals(1, count(conn, "SELECT COUNT(*) FROM canary WHERE v = 'loaded'"), "a lease of the fork lacks the row written before it");
        } finally {
            c.release(f.id(), false);
            c.poolDown("java-forked");
            c.poolDown("java-forkbase");
        }
    }

    @Test
    void errorsOutOfRangeComeWithTheDaemonsMessage() {
        PristineException e = assertThrows(PristineException.class, () -> d.unix().lease(new LeaseRequest("x", "h", 1e300, 0, 0)));
        assertEquals(400, e.status());
        assertTrue(e.getMessage().contains("ttl_seconds"), e.getMessage());
    }
}
