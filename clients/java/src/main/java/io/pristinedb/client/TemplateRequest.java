package io.pristinedb.client;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Begins a template build ({@code POST /v1/templates}): its name, the
 * content key of the files that define it ({@link ContentKey}), and
 * optionally its database name and a fleet cache (an OCI repository the
 * daemon allows; default {@code $PRISTINE_CACHE}).
 *
 * <p>{@code runsCode} says the build runs code (a migrate command, a
 * builder) and {@code keyFiles} how many file paths the key covers: the
 * daemon refuses a build that runs code with none
 * ({@link PristineException#UNKEYED_BUILD}), whose template would stay the
 * same after a migration changes, unless {@code allowStale} accepts that
 * risk.
 */
public record TemplateRequest(
        String name,
        String key,
        String database,
        double ttlSeconds,
        String cache,
        boolean runsCode,
        int keyFiles,
        boolean allowStale) {

    /** A request that says nothing of what its build runs. */
    public TemplateRequest(String name, String key, String database, double ttlSeconds, String cache) {
        this(name, key, database, ttlSeconds, cache, false, 0, false);
    }

    /** A request with a name and a key only. */
    public static TemplateRequest of(String name, String key) {
        return new TemplateRequest(name, key, null, 0, null);
    }

    /** The same request for another database name. */
    public TemplateRequest withDatabase(String db) {
        return new TemplateRequest(name, key, db, ttlSeconds, cache, runsCode, keyFiles, allowStale);
    }

    /** The same request with a fleet cache. */
    public TemplateRequest withCache(String repository) {
        return new TemplateRequest(name, key, database, ttlSeconds, repository, runsCode, keyFiles, allowStale);
    }

    /**
     * The same request for a build that runs code, keyed by {@code files}
     * file paths; {@code stale} accepts none (a template that goes stale).
     */
    public TemplateRequest withKeyFiles(int files, boolean stale) {
        return new TemplateRequest(name, key, database, ttlSeconds, cache, true, files, stale);
    }

    /** The request's body: the fields set (not null, not 0, not false). */
    Map<String, Object> body() {
        Map<String, Object> m = new LinkedHashMap<>();
        Json.putSet(m, "name", name);
        Json.putSet(m, "key", key);
        Json.putSet(m, "database", database);
        Json.putSet(m, "ttl_seconds", ttlSeconds);
        Json.putSet(m, "cache", cache);
        Json.putSet(m, "runs_code", runsCode);
        Json.putSet(m, "key_files", keyFiles);
        Json.putSet(m, "allow_stale", allowStale);
        return m;
    }
}
