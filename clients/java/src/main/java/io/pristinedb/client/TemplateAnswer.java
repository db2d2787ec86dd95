package io.pristinedb.client;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/**
 * The daemon's answer about a template: {@code status} ready, build (the
 * caller builds it: the connection fields name the template server),
 * building (someone else does), failed or removed; {@code hash} names it.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record TemplateAnswer(
        @JsonProperty("status") String status,
        @JsonProperty("hash") String hash,
        @JsonProperty("template") JsonNode template,
        @JsonProperty("error") String error,
        @JsonProperty("host") String host,
        @JsonProperty("port") int port,
        @JsonProperty("socket") String socket,
        @JsonProperty("user") String user,
        @JsonProperty("password") String password,
        @JsonProperty("database") String database,
        @JsonProperty("dsn") String dsn,
        @JsonProperty("url") String url,
        @JsonProperty("env") List<String> env) implements DatabaseConnection {

    public static final String READY = "ready";
    public static final String BUILD = "build";
    public static final String BUILDING = "building";
    public static final String FAILED = "failed";

    @Override
    public String toString() {
        return "TemplateAnswer[status=" + status + ", hash=" + hash + (error != null && !error.isEmpty() ? ", error=" + error : "") + "]";
    }
}
