package io.pristinedb.spring;

import io.pristinedb.client.Lease;
import io.pristinedb.client.LeaseDataSource;
import io.pristinedb.client.PristineClient;
import io.pristinedb.client.PristineException;
import io.pristinedb.client.TemplateSpec;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.jdbc.datasource.AbstractDataSource;

/**
 * The DataSource of a Spring test context under
 * {@link AutoConfigurePristineDatabase}: every connection goes to the
 * database leased for the test running on the calling thread; on a thread
 * no test runs on (a request thread of the context's embedded web server,
 * an executor, a scheduler), to the database of the test the context is
 * running now; outside any test (while the context starts), to the
 * context's own database. When several tests of the context run at once
 * (JUnit parallel methods), a connection asked for on such a thread is
 * refused: it cannot be told which test it is for.
 * Connections are pooled per lease ({@link LeaseDataSource}): a test opens
 * one connection, not one per transaction; its pool is closed when its
 * lease ends.
 */
public final class PristineRoutingDataSource extends AbstractDataSource implements DisposableBean {
    private final ThreadLocal<Lease> current = new ThreadLocal<>();
    /** The leases of the context's tests running now, once per running test (a CLASS lease may be there twice). */
    private final List<Lease> running = new ArrayList<>(); // guarded by itself
    private final ConcurrentHashMap<String, LeaseDataSource> pools = new ConcurrentHashMap<>();
    private final PristineClient client;
    private final TemplateSpec spec;
    private final AutoConfigurePristineDatabase settings;
    private final String holder;
    private Lease contextLease; // guarded by this
    private volatile boolean startupWrote;

    PristineRoutingDataSource(PristineClient client, TemplateSpec spec, AutoConfigurePristineDatabase settings, String holder, Lease contextLease) {
        this.client = client;
        this.spec = spec;
        this.settings = settings;
        this.holder = holder;
        this.contextLease = contextLease;
    }

    /**
     * The lease connections of this thread go to: the test's on the test's
     * thread; on another thread, the running test's; outside a test, the
     * context's (leased again when needed).
     *
     * @throws PristineException on a thread no test runs on while tests with different databases run at once
     */
    public Lease currentLease() {
        Lease l = current.get();
        if (l != null) {
            return l;
        }
        l = runningTest();
        return l != null ? l : contextLease();
    }

    /** The database of the test (or tests, with one CLASS lease) running now; null when none runs. */
    private Lease runningTest() {
        Lease[] now;
        synchronized (running) {
            now = running.toArray(new Lease[0]);
        }
        if (now.length == 0) {
            return null;
        }
        for (Lease l : now) {
            if (!l.id().equals(now[0].id())) {
                throw new PristineException(ambiguousMessage(Thread.currentThread().getName(), now.length));
            }
        }
        return now[0];
    }

    /** What to tell the user when a thread no test runs on asks for a connection while several tests run. */
    static String ambiguousMessage(String thread, int tests) {
        return "pristine: thread " + thread + " asked for a connection, but it runs no test (a request thread of the"
                + " embedded web server, an executor or a scheduler) and " + tests + " tests of this Spring context run at"
                + " once, each on a database of its own: which one it is for cannot be told. Run the tests of a class whose"
                + " server threads use the database one at a time: @Execution(ExecutionMode.SAME_THREAD) on the class"
                + " (other classes, with contexts of their own, still run beside it), or scope = CLASS.";
    }

    private synchronized Lease contextLease() {
        if (contextLease == null) {
            contextLease = spec.lease(client, holder + " (outside a test)", settings.waitSeconds());
        }
        return contextLease;
    }

    /**
     * Gives the context's database back once the context has started, so a
     * cached context does not hold a database of the pool while tests run.
     */
    synchronized void releaseContextLease() {
        releaseContextLease(false);
    }

    /**
     * As {@link #releaseContextLease()}; after the context's startup, says
     * so when the startup wrote to its database: the tests' databases are
     * copies of the template and do not have what it wrote.
     */
    synchronized boolean releaseContextLease(boolean afterStartup) {
        if (contextLease == null) {
            return false;
        }
        Lease l = contextLease;
        contextLease = null;
        endLease(l);
        boolean written;
        try {
            // The verdict is what tells whether the startup wrote.
            written = afterStartup ? client.releaseWait(l.id(), true) : client.release(l.id(), true);
        } catch (PristineException ignored) {
            return false; // the daemon reclaims it when this JVM exits
        }
        if (afterStartup && written) {
            startupWrote = true;
            System.err.println(startupWroteMessage(spec.name()));
        }
        return afterStartup && written;
    }

    /** Whether the context's startup wrote to its database (the tests' databases lack those writes). */
    public boolean startupWrote() {
        return startupWrote;
    }

    /** What to tell the user when the context's startup wrote to its database. */
    static String startupWroteMessage(String template) {
        return "pristine: the Spring context's startup wrote to its database (template " + template + "): spring.sql.init"
                + " scripts (mode=always), a Flyway callback or repeatable migration the template's build did not run, or"
                + " Hibernate ddl-auto create/update. Each test's database is a copy of the template and does not have"
                + " those writes: make them part of the template (the migrations or builder that build it), or run them on"
                + " every test's database with @AutoConfigurePristineDatabase(setup = ...), or turn them off for tests.";
    }

    /** Test l starts on this thread: its connections, and those of threads no test runs on, go to l. */
    void bind(Lease l) {
        current.set(l);
        synchronized (running) {
            running.add(l);
        }
    }

    /** The test on this thread, on l, ended. */
    void unbind(Lease l) {
        current.remove();
        synchronized (running) {
            running.remove(l);
        }
    }

    PristineClient client() {
        return client;
    }

    TemplateSpec spec() {
        return spec;
    }

    AutoConfigurePristineDatabase settings() {
        return settings;
    }

    @Override
    public Connection getConnection() throws SQLException {
        Lease l = currentLease();
        return pools.computeIfAbsent(l.id(), id -> new LeaseDataSource(l)).getConnection();
    }

    /** Closes the connections pooled for lease l: it is being released. */
    void endLease(Lease l) {
        LeaseDataSource p = pools.remove(l.id());
        if (p != null) {
            p.close();
        }
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        return DriverManager.getConnection(currentLease().jdbcUrl(), username, password);
    }

    @Override
    public void destroy() {
        releaseContextLease();
    }

    @Override
    public String toString() {
        return "pristine DataSource of template " + spec.name();
    }
}
