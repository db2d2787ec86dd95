package io.pristinedb.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * What a test needs before it leases: a template keyed by files, built by
 * a {@link TemplateBuilder} once, and a pool of it. {@link #ensure} does
 * both, once per JVM for the same name and key (the daemon makes it once
 * across processes too).
 *
 * @param name       the template's and the pool's name
 * @param patterns   the files that define it (its content key)
 * @param extra      strings hashed into the key too (a tool's version, a command)
 * @param builder    runs the migrations against the template server
 * @param database   the template's database name, or null for pristine's default
 * @param poolSize   the pool's size: brought up at it when none is, grown to it when smaller
 * @param cache      a fleet cache (OCI repository), or null for {@code $PRISTINE_CACHE}
 * @param allowStale accept a builder with no patterns: keyed by extra alone, the template goes
 *                   stale when a file the builder reads changes (without it, such a spec is
 *                   refused)
 */
public record TemplateSpec(String name, List<String> patterns, List<String> extra, TemplateBuilder builder,
                           String database, int poolSize, String cache, boolean allowStale) {

    private static final Map<String, String> ENSURED = new ConcurrentHashMap<>();

    public TemplateSpec {
        Objects.requireNonNull(name, "name");
        patterns = List.copyOf(patterns);
        extra = List.copyOf(extra);
    }

    /** A spec that does not opt out of keying its builder by files. */
    public TemplateSpec(String name, List<String> patterns, List<String> extra, TemplateBuilder builder,
                        String database, int poolSize, String cache) {
        this(name, patterns, extra, builder, database, poolSize, cache, false);
    }

    /** The content key of the files and extra strings. */
    public String key() {
        List<String> ex = new ArrayList<>(extra);
        if (database != null && !database.isEmpty()) {
            ex.add("database " + database);
        }
        return ContentKey.of(patterns, ex);
    }

    /**
     * Builds the template when nobody has, brings its pool up when none is,
     * and answers the template's hash. Once per JVM for a name and key.
     */
    public String ensure(PristineClient client) {
        String key = key();
        String id = client.where() + "\0" + name + "\0" + key;
        String hash = ENSURED.get(id);
        if (hash != null) {
            return hash;
        }
        synchronized (ENSURED) {
            hash = ENSURED.get(id);
            if (hash != null) {
                return hash;
            }
            TemplateRequest req = new TemplateRequest(name, key, database == null || database.isEmpty() ? null : database, 0,
                    cache == null || cache.isEmpty() ? null : cache);
            if (builder != null) {
                req = req.withKeyFiles(patterns.size(), allowStale);
            }
            long t0 = System.nanoTime();
            TemplateBuilder timed = builder == null ? null : conn -> {
                progress("building template " + name + " (its migrations run once, for every later run with the same files)");
                builder.build(conn);
            };
            TemplateAnswer a;
            try {
                a = client.ensureTemplate(req, timed, 0);
            } catch (PristineException e) {
                if (!PristineException.UNKEYED_BUILD.equals(e.code())) {
                    throw e;
                }
                throw new PristineException("template " + name + ": its migrate command (or builder) runs code but no files key it, so after "
                        + "a migration or fixture changes every run would still get the old template: name the files it reads with "
                        + "files = {\"src/test/resources/schema.sql\", ...} on @PristineDatabase or @AutoConfigurePristineDatabase "
                        + "(TemplateSpec patterns), or set allowStale = true to accept a template that goes stale when they change",
                        e.status(), 0, e, e.code());
            }
            long t1 = System.nanoTime();
            // Leases this JVM took ahead from a pool of this name may be of another build (its files changed):
            // given back, they do not keep that pool from being replaced.
            String prefix = client.where() + "\0" + name + "\0";
            PREFETCH.forEach((k, p) -> {
                if (k.startsWith(prefix)) {
                    p.drain();
                }
            });
            client.ensurePool(name, a.hash(), poolSize);
            long t2 = System.nanoTime();
            if (t2 - t0 > 1_000_000_000L) {
                progress(String.format(java.util.Locale.ROOT, "template %s ready in %.1f s, its pool in %.1f s more", name, (t1 - t0) / 1e9, (t2 - t1) / 1e9));
            }
            ENSURED.put(id, a.hash());
            return a.hash();
        }
    }

    private static void progress(String msg) {
        if (!Boolean.getBoolean("pristine.quiet")) {
            System.err.println("pristine: " + msg);
        }
    }

    /** The Prefetcher of each daemon, template and pool size: one lease ahead per template in the JVM (two for tests shorter than a lease). */
    private static final ConcurrentHashMap<String, Prefetcher> PREFETCH = new ConcurrentHashMap<>();

    /** The holder of a lease taken ahead, until a test ends with it. */
    static final String AHEAD_HOLDER = "JVM " + ProcessHandle.current().pid() + " (prefetched)";

    /**
     * Whether {@link #lease} takes the next lease while a test runs
     * ({@link Prefetcher}): on unless {@code -Dpristine.prefetch=false} or
     * {@code PRISTINE_PREFETCH=0}. The lease taken ahead holds a slot of the
     * pool, and its holder reads {@link #AHEAD_HOLDER}; it is given back
     * when no test class of the pool follows within {@link #lingerNanos}
     * of the last one's end ({@link #releaseAheadIdle}), and at the JVM's
     * exit.
     */
    static boolean prefetchOn() {
        String p = System.getProperty("pristine.prefetch");
        if (p != null && !p.isEmpty()) {
            return Boolean.parseBoolean(p);
        }
        return !"0".equals(System.getenv("PRISTINE_PREFETCH"));
    }

    /** Leases a database of the pool for holder, waiting up to waitSeconds, nothing taken ahead. */
    public Lease lease(PristineClient client, String holder, double waitSeconds) {
        return lease(client, holder, waitSeconds, false);
    }

    /**
     * Leases a database of the pool for holder, waiting up to waitSeconds.
     * With ahead (a test's lease in the JUnit extension and the Spring
     * listener, where prefetching is on unless turned off:
     * {@link #prefetchOn}), the lease taken while the previous test ran is
     * the answer, when there is one, and the next is taken now; without it
     * (a class's lease, a run that keeps failed tests' databases, whose
     * holders must name the test), the lease is the holder's own. The request
     * carries poolSize as min_size: a pool that is smaller (it shrank, or
     * another run brought it up smaller) grows to it first. A timeout says
     * what to change.
     */
    public Lease lease(PristineClient client, String holder, double waitSeconds, boolean ahead) {
        LeaseRequest own = LeaseRequest.of(name, holder).withWait(waitSeconds).withMinSize(poolSize);
        try {
            if (ahead && prefetchOn()) {
                return PREFETCH.computeIfAbsent(client.where() + "\0" + name + "\0" + poolSize, k -> client.prefetch(
                        LeaseRequest.of(name, AHEAD_HOLDER).withWait(waitSeconds).withMinSize(poolSize))).lease(own);
            }
            return client.leaseWait(own);
        } catch (NoDaemonException e) {
            throw e;
        } catch (PristineException e) {
            String hint = e.status() == 503
                    ? " (the pool has " + poolSize + " databases: raise poolSize to the number of tests that run at once, or the wait)"
                    : "";
            throw new PristineException("lease a database of " + name + ": " + e.getMessage() + hint, e.status(), e.retryAfterSeconds(), e);
        }
    }

    /**
     * Gives back every lease taken ahead in this JVM now; the next test
     * leases on its own thread, and taking ahead starts again.
     */
    public static void releaseAhead() {
        PREFETCH.values().forEach(Prefetcher::drain);
    }

    /**
     * Gives back the leases taken ahead in this JVM unless a test takes one
     * within {@link #lingerNanos} (the JUnit extension and the Spring
     * listener call it when a test class ends): the next class's first test
     * then finds its lease taken and connected, like the others, and a JVM
     * whose classes of the pool are done holds none of its slots for longer.
     */
    public static void releaseAheadIdle() {
        long linger = lingerNanos();
        PREFETCH.values().forEach(p -> p.drainIdle(linger));
    }

    /**
     * How long leases taken ahead wait for the next test class after one
     * ends: {@code -Dpristine.aheadLinger} seconds (0: given back at once),
     * default 2 s, longer than a cached Spring context's switch and a
     * JUnit class's setup.
     */
    static long lingerNanos() {
        String v = System.getProperty("pristine.aheadLinger");
        double s = 2;
        if (v != null && !v.isBlank()) {
            try {
                s = Double.parseDouble(v.trim());
            } catch (NumberFormatException e) {
                throw new PristineException("-Dpristine.aheadLinger=" + v + ": not a number of seconds (e.g. 2, 0.5, or 0 to give leases taken ahead back at each class end)");
            }
        }
        return (long) (Math.max(s, 0) * 1e9);
    }

    /**
     * The leases this JVM holds ahead of its tests, once those being taken
     * are: none once {@link #releaseAhead} (or {@link #releaseAheadIdle}'s
     * wait) gave them back.
     */
    public static List<Lease> leasesAhead() {
        return PREFETCH.values().stream().flatMap(p -> p.ahead().stream()).toList();
    }

    /**
     * Whether a failed test's database is kept (at the end of its lease): asked
     * by the test's annotation (keep), {@code PRISTINE_KEEP_FAILED=1} or
     * {@code -Dpristine.keepFailed=true}.
     */
    public static boolean keepFailed(boolean keep) {
        return keep || "1".equals(System.getenv("PRISTINE_KEEP_FAILED")) || Boolean.getBoolean("pristine.keepFailed");
    }

    /**
     * Forgets which templates this JVM has made sure of, so the next
     * {@link #ensure} asks the daemon again, as a new JVM would (for tests
     * of test tooling that compare a building and a reusing run).
     */
    public static void forgetEnsured() {
        ENSURED.clear();
    }

    /**
     * Ends a lease: keeps it when the test failed and keep was asked for
     * (answers the message to print), else releases it in the background
     * (unchanged: the daemon checks that nothing was written and skips the
     * reset), so the test's thread pays no round trip for it.
     */
    public static String end(PristineClient client, Lease lease, boolean failed, boolean keep, boolean unchanged) {
        if (failed && keep) {
            client.keep(lease.id());
            return "pristine: kept the database of this failed test for debugging:\n  " + lease.mysqlCommand()
                    + "\n  JDBC " + lease.jdbcUrl() + " (user " + lease.user() + ")"
                    + "\n  release it with: pristine release " + lease.id();
        }
        String id = lease.id();
        inBackground(() -> {
            try {
                client.release(id, unchanged);
            } catch (RuntimeException e) {
                System.err.println("pristine: release of lease " + id + " failed: " + e.getMessage()
                        + " (the daemon takes it back when this JVM exits)");
            }
        });
        return null;
    }

    /**
     * Runs work on the thread of the background releases, after what was
     * asked of it before; now, on the caller's thread, when the JVM is
     * exiting.
     */
    static void inBackground(Runnable work) {
        try {
            RELEASES.execute(work);
        } catch (RejectedExecutionException e) {
            work.run();
        }
    }

    /**
     * Releases of ended leases run here, one after another, off the tests'
     * threads. {@link #awaitReleases} waits for those asked for so far (the
     * JUnit extension and the Spring listener call it when a test class
     * ends); the JVM's exit waits for the rest, up to 10 s.
     */
    private static final ExecutorService RELEASES = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "pristine-release");
        t.setDaemon(true);
        return t;
    });

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            PREFETCH.values().forEach(Prefetcher::close); // what the daemon would take back at this JVM's exit anyway
            RELEASES.shutdown();
            try {
                RELEASES.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "pristine-release-wait"));
    }

    /** Waits until every release {@link #end} started before this call is done (30 s at most). */
    public static void awaitReleases() {
        try {
            RELEASES.submit(() -> { }).get(30, TimeUnit.SECONDS);
        } catch (RejectedExecutionException e) {
            // the JVM is exiting: its hook waits
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            System.err.println("pristine: releases still running after 30 s: " + e);
        }
    }
}
