package io.pristinedb.client;

import java.util.List;

/**
 * The daemon's answer about a template: {@code status} ready, build (the
 * caller builds it: the connection fields name the template server),
 * building (someone else does), failed or removed; {@code hash} names it.
 */
public record TemplateAnswer(
        String status,
        String hash,
        Json template,
        String error,
        String host,
        int port,
        String socket,
        String user,
        String password,
        String database,
        String dsn,
        String url,
        List<String> env) implements DatabaseConnection {

    public static final String READY = "ready";
    public static final String BUILD = "build";
    public static final String BUILDING = "building";
    public static final String FAILED = "failed";

    /** The answer of the daemon's document j. */
    static TemplateAnswer from(Json j) {
        return new TemplateAnswer(j.path("status").string(), j.path("hash").string(), j.path("template"), j.path("error").string(),
                j.path("host").string(), j.path("port").asInt(), j.path("socket").string(), j.path("user").string(),
                j.path("password").string(), j.path("database").string(), j.path("dsn").string(), j.path("url").string(),
                j.path("env").strings());
    }

    @Override
    public String toString() {
        return "TemplateAnswer[status=" + status + ", hash=" + hash + (error != null && !error.isEmpty() ? ", error=" + error : "") + "]";
    }
}
