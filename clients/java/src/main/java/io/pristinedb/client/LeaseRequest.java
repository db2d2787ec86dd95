package io.pristinedb.client;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * Asks for a database ({@code POST /v1/leases}): of the pool of template
 * (a name or hash), for holder (a test's name), held by process pid (the
 * daemon reclaims the lease when it exits; 0 means this JVM), waiting up to
 * waitSeconds (0: 60) for a free one, reclaimed after ttlSeconds (0: 30
 * minutes).
 */
@JsonInclude(JsonInclude.Include.NON_DEFAULT)
public record LeaseRequest(
        @JsonProperty("template") String template,
        @JsonProperty("holder") String holder,
        @JsonProperty("ttl_seconds") double ttlSeconds,
        @JsonProperty("wait_seconds") double waitSeconds,
        @JsonProperty("pid") long pid) {

    /** A lease of template's pool for holder, with the default wait and TTL. */
    public static LeaseRequest of(String template, String holder) {
        return new LeaseRequest(template, holder, 0, 0, 0);
    }

    /** The same request with another wait. */
    public LeaseRequest withWait(double seconds) {
        return new LeaseRequest(template, holder, ttlSeconds, seconds, pid);
    }

    /** The same request with another TTL. */
    public LeaseRequest withTtl(double seconds) {
        return new LeaseRequest(template, holder, seconds, waitSeconds, pid);
    }
}
