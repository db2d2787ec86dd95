package io.pristinedb.client;

import java.util.concurrent.CompletableFuture;

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
            });
        }
    }

    /**
     * The lease taken ahead, or one leased now when none was (or it
     * failed: the error is then the current one); starts taking the next.
     */
    public Lease lease() {
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
            l = client.leaseWait(req);
        }
        warm();
        return l;
    }

    /** Releases the lease taken ahead, if any, and takes no more. */
    @Override
    public void close() {
        CompletableFuture<Lease> f;
        synchronized (this) {
            f = next;
            next = null;
            closed = true;
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
