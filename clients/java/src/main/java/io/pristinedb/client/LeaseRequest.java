package io.pristinedb.client;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Asks for a database ({@code POST /v1/leases}): of the pool of template
 * (a name or hash), for holder (a test's name), held by process pid (the
 * daemon reclaims the lease when it exits; 0 means this JVM), waiting up to
 * waitSeconds (0: 60) for a free one, reclaimed after ttlSeconds (0: 30
 * minutes). minSize (0: no growth) is how many slots the run uses at once:
 * a smaller pool grows to it first, at once, or the request fails at once
 * (507) naming the daemon's --max-memory/--max-disk when they do not fit.
 */
public record LeaseRequest(
        String template,
        String holder,
        double ttlSeconds,
        double waitSeconds,
        long pid,
        int minSize) {

    /** A request without min_size. */
    public LeaseRequest(String template, String holder, double ttlSeconds, double waitSeconds, long pid) {
        this(template, holder, ttlSeconds, waitSeconds, pid, 0);
    }

    /** A lease of template's pool for holder, with the default wait and TTL. */
    public static LeaseRequest of(String template, String holder) {
        return new LeaseRequest(template, holder, 0, 0, 0, 0);
    }

    /** The same request with another wait. */
    public LeaseRequest withWait(double seconds) {
        return new LeaseRequest(template, holder, ttlSeconds, seconds, pid, minSize);
    }

    /** The same request with another TTL. */
    public LeaseRequest withTtl(double seconds) {
        return new LeaseRequest(template, holder, seconds, waitSeconds, pid, minSize);
    }

    /** The same request growing a smaller pool to slots first. */
    public LeaseRequest withMinSize(int slots) {
        return new LeaseRequest(template, holder, ttlSeconds, waitSeconds, pid, slots);
    }

    /** The request's body: the fields set (not null, not 0). */
    Map<String, Object> body() {
        Map<String, Object> m = new LinkedHashMap<>();
        Json.putSet(m, "template", template);
        Json.putSet(m, "holder", holder);
        Json.putSet(m, "ttl_seconds", ttlSeconds);
        Json.putSet(m, "wait_seconds", waitSeconds);
        Json.putSet(m, "pid", pid);
        Json.putSet(m, "min_size", minSize);
        return m;
    }
}
