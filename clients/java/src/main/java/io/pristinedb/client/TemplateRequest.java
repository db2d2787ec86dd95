package io.pristinedb.client;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

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
@JsonInclude(JsonInclude.Include.NON_DEFAULT)
public record TemplateRequest(
        @JsonProperty("name") String name,
        @JsonProperty("key") String key,
        @JsonProperty("database") String database,
        @JsonProperty("ttl_seconds") double ttlSeconds,
        @JsonProperty("cache") String cache,
        @JsonProperty("runs_code") boolean runsCode,
        @JsonProperty("key_files") int keyFiles,
        @JsonProperty("allow_stale") boolean allowStale) {

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
}
