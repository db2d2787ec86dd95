package io.pristinedb.client;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Takes the next lease of a request while the current one is in use, so a
 * test that asks for a database finds one leased already: its wait is a
 * future's get, not a round trip to the daemon. It also opens a JDBC
 * connection to each lease it takes, which the first {@link LeaseDataSource}
 * made of it takes, so the test does not pay the connect either.
 *
 * <p>It holds one lease ahead; while tests are shorter than taking a lease
 * and connecting (a test waited for the one taken ahead), two: the second
 * only from a slot that is free at once, so it never waits for a slot, nor
 * keeps one from a test that does. Each lease ahead holds a slot of the pool
 * like any other and is held by this JVM (the daemon reclaims it when the
 * JVM exits). {@link #drain()} and {@link #close()} release them. Safe for
 * concurrent use: with parallel tests, the first to ask gets a lease taken
 * ahead and the others lease as usual.
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

    /** Gives back leases left ahead by a group of tests once the next group did not come ({@link #drainIdle}). */
    private static final ScheduledExecutorService IDLE = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "pristine-ahead-idle");
        t.setDaemon(true);
        return t;
    });

    /** The most leases a Prefetcher holds ahead. */
    static final int MAX_AHEAD = 2;

    /**
     * A test that waited longer than this for its lease taken ahead was
     * shorter than taking a lease and a connect: the Prefetcher takes a
     * second ahead from then on.
     */
    static final long SHORT_TEST_NANOS = 1_000_000;

    /** How long the second lease ahead may wait for a slot: none that is not free. */
    static final double SPARE_WAIT_SECONDS = 0.001;

    private final PristineClient client;
    private final LeaseRequest req;
    /**
     * A lease being taken or taken ahead; a spare's (the second ahead) is
     * null when no slot was free.
     */
    private record Ahead(CompletableFuture<Lease> lease, boolean spare) {
    }

    // Guarded by this: the leases ahead, the oldest first, one of them not
    // a spare (it waits for a slot); how many to hold; whether one was
    // handed out since the last drain; how many were handed out; closed.
    private final ArrayDeque<Ahead> next = new ArrayDeque<>();
    private int depth = 1;
    private boolean handed;
    private long handedOut;
    private boolean closed;

    Prefetcher(PristineClient client, LeaseRequest req) {
        this.client = client;
        this.req = req;
    }

    /** Starts taking leases ahead now, up to the number it holds. */
    public synchronized void warm() {
        // A spare that found no slot free holds none: taken again now.
        next.removeIf(a -> a.spare() && a.lease().isDone() && !a.lease().isCompletedExceptionally() && a.lease().join() == null);
        while (!closed && next.size() < depth) {
            boolean spare = next.stream().anyMatch(a -> !a.spare());
            LeaseRequest r = spare ? req.withWait(SPARE_WAIT_SECONDS) : req;
            next.add(new Ahead(CompletableFuture.supplyAsync(() -> take(r, spare), AHEAD), spare));
        }
    }

    /** Leases and connects ahead; a spare that finds no free slot is null. */
    private Lease take(LeaseRequest r, boolean spare) {
        Lease l;
        try {
            l = client.leaseWait(r);
        } catch (RuntimeException e) {
            if (spare) {
                return null;
            }
            throw e;
        }
        LeaseDataSource.openAhead(l);
        return l;
    }

    /**
     * A lease taken ahead, or one leased now when none was (or it failed:
     * the error is then the current one); starts taking the next.
     */
    public Lease lease() {
        return lease(req);
    }

    /**
     * A lease taken ahead, or one leased now with now's request (its
     * holder: the test that asks) when none was or it failed; starts
     * taking the next with this Prefetcher's own request.
     */
    public Lease lease(LeaseRequest now) {
        Lease l = null;
        while (l == null) {
            CompletableFuture<Lease> f;
            boolean counts;
            synchronized (this) {
                Ahead a = next.poll();
                f = a == null ? null : a.lease();
                counts = handed;
            }
            if (f == null) {
                break;
            }
            boolean ready = f.isDone();
            long t0 = System.nanoTime();
            try {
                l = f.join();
            } catch (RuntimeException e) {
                break; // leased again below, for the current error
            }
            if (counts && !ready && System.nanoTime() - t0 > SHORT_TEST_NANOS) {
                synchronized (this) {
                    depth = MAX_AHEAD;
                }
            }
        }
        if (l == null) {
            l = client.leaseWait(now);
        }
        synchronized (this) {
            handed = true;
            handedOut++;
        }
        warm();
        return l;
    }

    /**
     * The leases taken ahead, once taking them is done; empty when none is
     * taken or taking them failed.
     */
    public List<Lease> ahead() {
        List<CompletableFuture<Lease>> fs;
        synchronized (this) {
            fs = next.stream().map(Ahead::lease).toList();
        }
        List<Lease> out = new ArrayList<>();
        for (CompletableFuture<Lease> f : fs) {
            try {
                Lease l = f.join();
                if (l != null) {
                    out.add(l);
                }
            } catch (RuntimeException e) {
                // none was taken
            }
        }
        return out;
    }

    /**
     * Releases the leases taken ahead, if any; the next {@link #lease}
     * leases on the caller's thread and starts taking one ahead again
     * ({@link #drainIdle} waits for a next group of tests first).
     */
    public void drain() {
        giveBack(false, -1);
    }

    /**
     * As {@link #drain}, unless a lease is handed out within lingerNanos
     * (0: now): for the end of a group of tests (a test class) that the
     * next group, of the same pool, may follow at once, so that its first
     * test too finds its lease taken. Leases left ahead hold slots only that
     * long after the last group.
     */
    public void drainIdle(long lingerNanos) {
        if (lingerNanos <= 0) {
            drain();
            return;
        }
        long seen;
        synchronized (this) {
            seen = handedOut;
        }
        IDLE.schedule(() -> giveBack(false, seen), lingerNanos, TimeUnit.NANOSECONDS);
    }

    /** Releases the leases taken ahead, if any, and takes no more. */
    @Override
    public void close() {
        giveBack(true, -1);
    }

    /** Releases the leases ahead; with onlyIf (>= 0), only when no lease was handed out since that count. */
    private void giveBack(boolean close, long onlyIf) {
        List<CompletableFuture<Lease>> fs;
        synchronized (this) {
            if (onlyIf >= 0 && (handedOut != onlyIf || closed)) {
                return;
            }
            fs = next.stream().map(Ahead::lease).toList();
            next.clear();
            depth = 1;
            handed = false;
            closed |= close;
        }
        for (CompletableFuture<Lease> f : fs) {
            try {
                Lease l = f.join();
                if (l != null) {
                    client.release(l.id(), true);
                }
            } catch (RuntimeException ignored) {
                // none was taken, or the daemon reclaims it when the JVM exits
            }
        }
    }
}
