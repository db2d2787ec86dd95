package io.pristinedb.client;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * Begins a template build ({@code POST /v1/templates}): its name, the
 * content key of the files that define it ({@link ContentKey}), and
 * optionally its database name and a fleet cache (an OCI repository the
 * daemon allows; default {@code $PRISTINE_CACHE}).
 */
@JsonInclude(JsonInclude.Include.NON_DEFAULT)
public record TemplateRequest(
        @JsonProperty("name") String name,
        @JsonProperty("key") String key,
        @JsonProperty("database") String database,
        @JsonProperty("ttl_seconds") double ttlSeconds,
        @JsonProperty("cache") String cache) {

    /** A request with a name and a key only. */
    public static TemplateRequest of(String name, String key) {
        return new TemplateRequest(name, key, null, 0, null);
    }

    /** The same request for another database name. */
    public TemplateRequest withDatabase(String db) {
        return new TemplateRequest(name, key, db, ttlSeconds, cache);
    }

    /** The same request with a fleet cache. */
    public TemplateRequest withCache(String repository) {
        return new TemplateRequest(name, key, database, ttlSeconds, repository);
    }
}
