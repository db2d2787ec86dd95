package io.pristinedb.client;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Takes the next lease of a request while the current one is in use, so a
 * test that asks for a database finds one leased already: its wait is a
 * future's get, not a round trip to the daemon. It also opens a JDBC
 * connection to that lease, which the first {@link LeaseDataSource} made
 * of it takes, so the test does not pay the connect either. It holds at most one lease
 * ahead; that lease holds a slot of the pool like any other and is held by
 * this JVM (the daemon reclaims it when the JVM exits). {@link #close()}
 * releases it. Safe for concurrent use: with parallel tests, the first to
 * ask gets the lease taken ahead and the others lease as usual.
 */
public final class Prefetcher implements AutoCloseable {
    /**
     * The threads that take leases ahead, kept between leases: with one
     * or two cores the JDK's default for {@code supplyAsync} starts a new
     * thread for every task. A lease taken ahead can wait for a slot, so
     * each Prefetcher's takes a thread of its own while it waits.
     */
    private static final ExecutorService AHEAD = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "pristine-prefetch");
        t.setDaemon(true);
        return t;
    });

    private final PristineClient client;
    private final LeaseRequest req;
    private CompletableFuture<Lease> next; // guarded by this; null: none ahead
    private boolean closed; // guarded by this

    Prefetcher(PristineClient client, LeaseRequest req) {
        this.client = client;
        this.req = req;
    }

    /** Starts taking a lease ahead now, if none is. */
    public synchronized void warm() {
        if (next == null && !closed) {
            next = CompletableFuture.supplyAsync(() -> {
                Lease l = client.leaseWait(req);
                LeaseDataSource.openAhead(l);
                return l;
            }, AHEAD);
        }
    }

    /**
     * The lease taken ahead, or one leased now when none was (or it
     * failed: the error is then the current one); starts taking the next.
     */
    public Lease lease() {
        return lease(req);
    }

    /**
     * The lease taken ahead, or one leased now with now's request (its
     * holder: the test that asks) when none was or it failed; starts
     * taking the next with this Prefetcher's own request.
     */
    public Lease lease(LeaseRequest now) {
        CompletableFuture<Lease> f;
        synchronized (this) {
            f = next;
            next = null;
        }
        Lease l = null;
        if (f != null) {
            try {
                l = f.join();
            } catch (RuntimeException ignored) {
                // leased again below, for the current error
            }
        }
        if (l == null) {
            l = client.leaseWait(now);
        }
        warm();
        return l;
    }

    /**
     * The lease taken ahead, once taking it is done; empty when none is
     * taken or taking it failed.
     */
    public java.util.Optional<Lease> ahead() {
        CompletableFuture<Lease> f;
        synchronized (this) {
            f = next;
        }
        try {
            return f == null ? java.util.Optional.empty() : java.util.Optional.of(f.join());
        } catch (RuntimeException e) {
            return java.util.Optional.empty();
        }
    }

    /**
     * Releases the lease taken ahead, if any; the next {@link #lease}
     * leases on the caller's thread and starts taking ahead again. For the
     * end of a group of tests (a test class), so that no lease of the
     * group outlives it.
     */
    public void drain() {
        giveBack(false);
    }

    /** Releases the lease taken ahead, if any, and takes no more. */
    @Override
    public void close() {
        giveBack(true);
    }

    private void giveBack(boolean close) {
        CompletableFuture<Lease> f;
        synchronized (this) {
            f = next;
            next = null;
            closed |= close;
        }
        if (f != null) {
            try {
                client.release(f.join().id(), true);
            } catch (RuntimeException ignored) {
                // none was taken, or the daemon reclaims it when the JVM exits
            }
        }
    }
}
