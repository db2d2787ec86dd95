package io.pristinedb.client;

import java.util.List;

/**
 * A pristine database held by one test (or one worker): the daemon's
 * {@code Lease}. {@link #toString()} leaves the password out.
 */
public record Lease(
        String id,
        String template,
        int slot,
        String holder,
        String host,
        int port,
        String socket,
        String user,
        String password,
        String database,
        String dsn,
        String url,
        String created,
        String expires,
        List<String> env,
        boolean kept,
        long pid,
        String cloneId,
        /** The CA certificate (PEM) of a slot reachable over the network; "" or null for a loopback slot. */
        String ca) implements DatabaseConnection {

    /** The lease of the daemon's answer j (members it does not know are left out). */
    static Lease from(Json j) {
        return new Lease(j.path("id").string(), j.path("template").string(), j.path("slot").asInt(), j.path("holder").string(),
                j.path("host").string(), j.path("port").asInt(), j.path("socket").string(), j.path("user").string(),
                j.path("password").string(), j.path("database").string(), j.path("dsn").string(), j.path("url").string(),
                j.path("created").string(), j.path("expires").string(), j.path("env").strings(),
                j.path("kept").asBoolean(), j.path("pid").asLong(), j.path("clone").string(), j.path("ca").string());
    }

    @Override
    public String toString() {
        return "Lease[id=" + id + ", template=" + template + ", slot=" + slot + ", holder=" + holder
                + ", " + host + ":" + port + "/" + database + ", user=" + user + ", kept=" + kept + "]";
    }
}
