package io.pristinedb.client;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A DataSource of one leased database that keeps the connections it opened:
 * a connection closed by the test goes back (rolled back, autocommit on)
 * and the next getConnection takes it, so a test pays for one connection,
 * not one per statement batch. {@link #close()} closes them all; it is
 * called when the lease ends (the daemon kills what is left at release
 * anyway). Connections given out after close are plain ones.
 */
public final class LeaseDataSource implements DataSource, AutoCloseable {
    private final String url;
    private final String user;
    private final String password;
    private final Deque<Connection> idle = new ArrayDeque<>(); // guarded by this
    private boolean closed; // guarded by this
    private PrintWriter log;
    private int loginTimeout;

    /**
     * A pooled DataSource of db. When db is a lease a {@link Prefetcher}
     * took ahead, the connection it opened ahead is the first one kept.
     */
    public LeaseDataSource(DatabaseConnection db) {
        this(db.jdbcUrl(), db.user(), db.password());
        if (db instanceof Lease l) {
            Opened o = AHEAD.remove(l.id());
            if (o != null && o.usable()) {
                idle.push(o.conn);
            }
        }
    }

    /**
     * A connection opened ahead, and when. Its lease is the test's alone
     * and nothing closes it before the lease ends, so it is trusted without
     * a round trip while younger than {@link #TRUSTED_NANOS} (a server's
     * wait_timeout is hours); an older one is checked first.
     */
    private record Opened(Connection conn, long nanos) {
        boolean usable() {
            return System.nanoTime() - nanos < TRUSTED_NANOS || LeaseDataSource.usable(conn);
        }
    }

    /** How long a connection opened ahead is taken without checking it: 60 s. */
    static final long TRUSTED_NANOS = 60_000_000_000L;

    /**
     * Connections a {@link Prefetcher} opened for the leases it took ahead,
     * by lease id, until a DataSource of the lease takes its own or the
     * lease ends ({@link #dropAhead}, from the client's release and keep).
     */
    private static final ConcurrentHashMap<String, Opened> AHEAD = new ConcurrentHashMap<>();

    /**
     * Opens a connection to lease l for the DataSource a test makes of it
     * later, so the test's thread does not pay the connect. A failure
     * leaves it to the test to connect (and see the error).
     */
    static void openAhead(Lease l) {
        try {
            Connection c = DriverManager.getConnection(l.jdbcUrl(), l.user(), l.password());
            Opened was = AHEAD.put(l.id(), new Opened(c, System.nanoTime()));
            if (was != null) {
                closeQuietly(was.conn);
            }
        } catch (SQLException | RuntimeException e) {
            // the test connects itself
        }
    }

    /** How many connections opened ahead wait for their lease's DataSource. */
    static int ahead() {
        return AHEAD.size();
    }

    /** Closes the connection opened ahead for lease id, if one is left. */
    static void dropAhead(String id) {
        Opened o = AHEAD.remove(id);
        if (o != null) {
            closeQuietly(o.conn);
        }
    }

    private static boolean usable(Connection c) {
        try {
            if (c.isValid(2)) {
                return true;
            }
        } catch (SQLException ignored) {
            // closed below
        }
        closeQuietly(c);
        return false;
    }

    private static void closeQuietly(Connection c) {
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // the daemon kills it at release anyway
            }
        }
    }

    LeaseDataSource(String url, String user, String password) {
        this.url = url;
        this.user = user;
        this.password = password;
    }

    @Override
    public Connection getConnection() throws SQLException {
        Connection c = take();
        return c != null ? wrap(c) : wrap(DriverManager.getConnection(url, user, password));
    }

    @Override
    public Connection getConnection(String username, String pw) throws SQLException {
        return DriverManager.getConnection(url, username, pw); // another account: not pooled
    }

    private synchronized Connection take() throws SQLException {
        while (!idle.isEmpty()) {
            Connection c = idle.pop();
            if (!c.isClosed()) {
                return c;
            }
        }
        return null;
    }

    /** Gives c back, or closes it when the pool is closed or c cannot be reset. */
    private void giveBack(Connection c) throws SQLException {
        try {
            if (!c.getAutoCommit()) {
                c.rollback();
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            c.close();
            return;
        }
        synchronized (this) {
            if (!closed) {
                idle.push(c);
                return;
            }
        }
        c.close();
    }

    /** A connection whose close gives the physical one back. */
    private Connection wrap(Connection physical) {
        boolean[] done = {false};
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, m, args) -> {
            switch (m.getName()) {
                case "close":
                    if (!done[0]) {
                        done[0] = true;
                        giveBack(physical);
                    }
                    return null;
                case "isClosed":
                    return done[0] || physical.isClosed();
                case "unwrap":
                    return ((Class<?>) args[0]).isInstance(proxy) ? proxy : physical.unwrap((Class<?>) args[0]);
                case "isWrapperFor":
                    return ((Class<?>) args[0]).isInstance(proxy) || physical.isWrapperFor((Class<?>) args[0]);
                case "toString":
                    return "pristine pooled " + physical;
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == args[0];
                default:
                    if (done[0]) {
                        throw new SQLException("connection is closed");
                    }
                    try {
                        return m.invoke(physical, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
            }
        });
    }

    /**
     * Closes the connections kept, on the thread of the background
     * releases ({@link TemplateSpec#end}) and before any release asked for
     * after this call, so the caller (a test's end) does not wait for the
     * server; connections given back later are closed.
     */
    @Override
    public void close() {
        Deque<Connection> left;
        synchronized (this) {
            closed = true;
            left = new ArrayDeque<>(idle);
            idle.clear();
        }
        if (!left.isEmpty()) {
            TemplateSpec.inBackground(() -> left.forEach(LeaseDataSource::closeQuietly));
        }
    }

    /** How many connections are kept for reuse. */
    public synchronized int idle() {
        return idle.size();
    }

    @Override
    public PrintWriter getLogWriter() {
        return log;
    }

    @Override
    public void setLogWriter(PrintWriter out) {
        log = out;
    }

    @Override
    public void setLoginTimeout(int seconds) {
        loginTimeout = seconds;
    }

    @Override
    public int getLoginTimeout() {
        return loginTimeout;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
        if (iface.isInstance(this)) {
            return iface.cast(this);
        }
        throw new SQLException("not a wrapper of " + iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
        return iface.isInstance(this);
    }

    @Override
    public String toString() {
        return "pristine pooled DataSource " + url;
    }
}
