package io.pristinedb.client;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * A pristine database held by one test (or one worker): the daemon's
 * {@code Lease}. {@link #toString()} leaves the password out.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record Lease(
        @JsonProperty("id") String id,
        @JsonProperty("template") String template,
        @JsonProperty("slot") int slot,
        @JsonProperty("holder") String holder,
        @JsonProperty("host") String host,
        @JsonProperty("port") int port,
        @JsonProperty("socket") String socket,
        @JsonProperty("user") String user,
        @JsonProperty("password") String password,
        @JsonProperty("database") String database,
        @JsonProperty("dsn") String dsn,
        @JsonProperty("url") String url,
        @JsonProperty("created") String created,
        @JsonProperty("expires") String expires,
        @JsonProperty("env") List<String> env,
        @JsonProperty("kept") boolean kept,
        @JsonProperty("pid") long pid,
        @JsonProperty("clone") String cloneId,
        /** The CA certificate (PEM) of a slot reachable over the network; "" or null for a loopback slot. */
        @JsonProperty("ca") String ca) implements DatabaseConnection {

    @Override
    public String toString() {
        return "Lease[id=" + id + ", template=" + template + ", slot=" + slot + ", holder=" + holder
                + ", " + host + ":" + port + "/" + database + ", user=" + user + ", kept=" + kept + "]";
    }
}
