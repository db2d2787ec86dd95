package io.pristinedb.client;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A connection to one pristine daemon, over its unix socket
 * ({@code <root>/pristine.sock}) or over loopback TCP with a bearer token.
 * Besides the daemon's API it carries the flow every integration shares:
 * build a template once across processes ({@link #ensureTemplate}), bring
 * its pool up ({@link #ensurePool}), lease with retries ({@link #leaseWait}).
 * Thread-safe: every request is its own connection.
 */
public final class PristineClient {
    /** The environment variable naming a fleet cache (an OCI repository) for every integration. */
    public static final String ENV_CACHE = "PRISTINE_CACHE";
    /** The longest wait the daemon takes in one request, in seconds. */
    public static final double MAX_WAIT = 3600;

    private final Http http;
    private final String where;
    private final double timeout; // for a request that asks the daemon to wait for nothing

    private PristineClient(Http http, String where) {
        this(http, where, 120);
    }

    private PristineClient(Http http, String where, double timeout) {
        this.http = http;
        this.where = where;
        this.timeout = timeout;
    }

    /**
     * The same daemon, giving up on a request that asks the daemon to wait
     * for nothing after seconds (default 120); requests that wait (a lease,
     * a build in progress, a pool coming up) get their wait and a minute more.
     */
    public PristineClient withTimeout(double seconds) {
        return new PristineClient(http, where, seconds);
    }

    /** A client for the daemon listening on socket. */
    public static PristineClient unix(Path socket) {
        return new PristineClient(Http.unix(socket), socket.toString());
    }

    /**
     * A client for a daemon serving loopback TCP ({@code pristine serve --listen ADDR});
     * token is the one in {@code <root>/token}. addr is HOST:PORT or an http:// URL.
     */
    public static PristineClient tcp(String addr, String token) {
        String base = addr.endsWith("/") ? addr.substring(0, addr.length() - 1) : addr;
        if (!base.contains("://")) {
            base = "http://" + base;
        }
        return new PristineClient(Http.tcp(URI.create(base), token), base);
    }

    /**
     * The client for the daemon the environment names: {@code PRISTINE_URL}
     * (with {@code PRISTINE_TOKEN}, or the token file of the root) for
     * loopback TCP, else the unix socket of {@code PRISTINE_ROOT}, else of
     * the default root ({@code /var/lib/pristine} for root,
     * {@code ~/.local/share/pristine} otherwise). The system properties
     * {@code pristine.url}, {@code pristine.token} and {@code pristine.root}
     * win over the environment (for a build tool's configuration). It does
     * not contact the daemon.
     */
    public static PristineClient fromEnv() {
        Path root = defaultRoot();
        String url = setting("pristine.url", "PRISTINE_URL");
        if (url != null && !url.isEmpty()) {
            String tok = setting("pristine.token", "PRISTINE_TOKEN");
            if (tok == null || tok.isEmpty()) {
                Path file = root.resolve("token");
                try {
                    tok = Files.readString(file).trim();
                } catch (IOException e) {
                    throw new PristineException("PRISTINE_URL is set but PRISTINE_TOKEN is not, and " + file
                            + " cannot be read (" + e + "): set PRISTINE_TOKEN to the token in " + file + " on the daemon's host", e);
                }
            }
            return tcp(url, tok);
        }
        return unix(root.resolve("pristine.sock"));
    }

    /** PRISTINE_ROOT, else /var/lib/pristine for root, else ~/.local/share/pristine. */
    public static Path defaultRoot() {
        String r = setting("pristine.root", "PRISTINE_ROOT");
        if (r != null && !r.isEmpty()) {
            return Path.of(r);
        }
        if (uid() == 0) {
            return Path.of("/var/lib/pristine");
        }
        return Path.of(System.getProperty("user.home"), ".local", "share", "pristine");
    }

    private static String setting(String property, String env) {
        String v = System.getProperty(property);
        return v != null && !v.isEmpty() ? v : System.getenv(env);
    }

    private static int uid() {
        try {
            return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return "root".equals(System.getProperty("user.name")) ? 0 : 1000;
        }
    }

    /** The daemon this client talks to: its socket or its URL. */
    public String where() {
        return where;
    }

    // ---- transport

    private Http.Response send(String method, String path, Object body) {
        return send(method, path, body, 0, 0);
    }

    /** Sends a request; a status of 300 or more throws, except allow1 and allow2 (answers with a body). */
    private Http.Response send(String method, String path, Object body, int allow1, int allow2) {
        byte[] b = body == null ? null : Json.write(bodyOf(body)).getBytes(StandardCharsets.UTF_8);
        Http.Response resp;
        try {
            resp = http.send(method, path, b, timeout(method, path, body));
        } catch (Http.TimeoutException e) {
            throw new PristineException(e.getMessage() + " (" + where + ")", e);
        } catch (ConnectException | NoSuchFileException e) {
            throw new NoDaemonException(where, e);
        } catch (SocketException e) {
            String m = String.valueOf(e.getMessage());
            if (m.contains("No such file") || m.contains("Connection refused")) {
                throw new NoDaemonException(where, e);
            }
            if (m.contains("Permission denied")) {
                throw new PristineException("the pristine daemon's socket " + where + " belongs to another user (" + m
                        + "): run the tests as the daemon's owner, start a daemon of your own (PRISTINE_ROOT), or use its TCP address (PRISTINE_URL and PRISTINE_TOKEN)", e);
            }
            throw new PristineException(method + " " + path + " on " + where + ": " + e, e);
        } catch (IOException e) {
            throw new PristineException(method + " " + path + " on " + where + ": " + e, e);
        }
        if (resp.status >= 300 && resp.status != allow1 && resp.status != allow2) {
            try (resp) {
                String text = new String(resp.body.readNBytes(1 << 16), StandardCharsets.UTF_8).trim();
                String msg = null;
                String code = "";
                try {
                    Json n = Json.parse(text);
                    if (n.hasNonNull("error")) {
                        msg = n.path("error").asText();
                        code = n.path("code").asText("");
                    }
                } catch (IllegalArgumentException ignored) {
                    // not JSON: say what came
                }
                if (msg == null || msg.isEmpty()) {
                    msg = method + " " + path + ": " + resp.status + " " + resp.reason + ": " + text;
                }
                long retry = 0;
                try {
                    retry = Long.parseLong(resp.headers.getOrDefault("retry-after", "0"));
                } catch (NumberFormatException ignored) {
                    // no Retry-After
                }
                throw new PristineException(msg, resp.status, retry, null, code);
            } catch (IOException e) {
                throw new PristineException(method + " " + path + ": " + resp.status + " " + resp.reason, resp.status, 0, e);
            }
        }
        return resp;
    }

    /** A request body as what {@link Json#write} encodes. */
    private static Object bodyOf(Object body) {
        if (body instanceof LeaseRequest r) {
            return r.body();
        }
        if (body instanceof TemplateRequest r) {
            return r.body();
        }
        return body;
    }

    /** How long an exchange may take: the wait the request asks the daemon for, and a minute more. */
    private double timeout(String method, String path, Object body) {
        if (body instanceof LeaseRequest r) {
            return (r.waitSeconds() > 0 ? r.waitSeconds() : 60) + 60;
        }
        int i = path.indexOf("?wait=");
        if (i >= 0) {
            try {
                return Double.parseDouble(path.substring(i + 6)) + 60;
            } catch (NumberFormatException ignored) {
                return MAX_WAIT + 60;
            }
        }
        if (method.equals("POST") && path.equals("/v1/pools")) {
            return MAX_WAIT; // a pool coming up reports progress until it is ready
        }
        if (method.equals("PUT") || path.startsWith("/v1/templates")) {
            return Math.max(timeout, 600); // finishing a build stops the template server cleanly; with a fleet cache, pushes or pulls it
        }
        return timeout;
    }

    /** Sends a request and reads its answer: missing when it has no body. */
    private Json call(String method, String path, Object body) {
        try (Http.Response resp = send(method, path, body)) {
            return read(method, path, resp);
        }
    }

    /** Sends a request whose answer says nothing but its status: the body is read and left. */
    private void exchange(String method, String path) {
        try (Http.Response resp = send(method, path, null)) {
            resp.readBody();
        } catch (IOException e) {
            throw new PristineException(method + " " + path + ": read answer: " + e, e);
        }
    }

    /** The answer's document: missing when it has no body. */
    private static Json read(String method, String path, Http.Response resp) {
        byte[] b;
        try {
            b = resp.readBody();
        } catch (IOException e) {
            throw new PristineException(method + " " + path + ": read answer: " + e, e);
        }
        if (b.length == 0) {
            return Json.missing();
        }
        try {
            return Json.parse(b);
        } catch (IllegalArgumentException e) {
            throw new PristineException(method + " " + path + ": the daemon's answer is not JSON: " + e.getMessage(), e);
        }
    }

    private static String esc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    // ---- the API

    /** Checks that the daemon answers. */
    public void health() {
        call("GET", "/v1/health", null);
    }

    /** Begins a template build, or learns that it exists (ready) or is being built (building, a 423). */
    public TemplateAnswer beginTemplate(TemplateRequest req) {
        try (Http.Response resp = send("POST", "/v1/templates", req, 423, 0)) {
            return TemplateAnswer.from(read("POST", "/v1/templates", resp));
        }
    }

    /** Waits up to seconds for a build in progress; the answer's status is ready, building (423) or failed (410). */
    public TemplateAnswer waitTemplate(String keyOrName, double seconds) {
        String path = "/v1/templates/" + esc(keyOrName) + "?wait=" + fmt(seconds);
        try (Http.Response resp = send("GET", path, null, 423, 410)) {
            return TemplateAnswer.from(read("GET", path, resp));
        }
    }

    /** Finishes a build: the template server is stopped cleanly and the template published. */
    public TemplateAnswer finishTemplate(String hash) {
        return TemplateAnswer.from(call("PUT", "/v1/templates/" + esc(hash), null));
    }

    /** Aborts a build (or removes a template no pool uses). */
    public void abortTemplate(String hash) {
        exchange("DELETE", "/v1/templates/" + esc(hash));
    }

    /** One pool's status ({@code hash}, {@code leased}, {@code size}, {@code slots}, ...). */
    public Json pool(String template) {
        return call("GET", "/v1/pools/" + esc(template), null);
    }

    /** The pools that are up. */
    public List<Json> pools() {
        List<Json> out = new ArrayList<>();
        call("GET", "/v1/pools", null).forEach(out::add);
        return out;
    }

    /** Brings up a pool of size slots of the template hash and waits until the daemon's default of them answered (its first round of starts). */
    public Json poolUp(String hash, int size) {
        return poolUp(hash, size, 0);
    }

    /**
     * Brings up a pool of size slots of the template hash and waits until minReady of them answered (0: the
     * daemon's default, its first round of starts; size: every slot); the others go on starting in the daemon,
     * each serving waiting leases as it answers.
     */
    public Json poolUp(String hash, int size, int minReady) {
        Map<String, Object> req = minReady > 0
                ? Map.of("template", hash, "size", size, "min_ready", minReady)
                : Map.of("template", hash, "size", size);
        try (Http.Response resp = send("POST", "/v1/pools", req)) {
            BufferedReader r = new BufferedReader(new InputStreamReader(resp.body, StandardCharsets.UTF_8));
            for (String line; (line = r.readLine()) != null; ) {
                if (line.isBlank()) {
                    continue;
                }
                Json ev;
                try {
                    ev = Json.parse(line);
                } catch (IllegalArgumentException e) {
                    throw new PristineException("pool up: the daemon's progress is not JSON: " + e.getMessage(), e);
                }
                if (!ev.path("error").asText().isEmpty()) {
                    throw new PristineException(ev.path("error").asText(), ev.path("code").asInt(0), 0, null);
                }
                if (ev.hasNonNull("status")) {
                    return ev.path("status");
                }
            }
        } catch (IOException e) {
            throw new PristineException("pool up: read progress: " + e, e);
        }
        throw new PristineException("pool up: the daemon closed the connection before the pool was ready: see serve.log under the root");
    }

    /** Stops a pool and removes its clones. */
    public Json poolDown(String template) {
        return call("DELETE", "/v1/pools/" + esc(template), null);
    }

    /** Acquires a database (one request: see {@link #leaseWait} for the retrying flow). */
    public Lease lease(LeaseRequest req) {
        return Lease.from(call("POST", "/v1/leases", req));
    }

    /** One lease with its credentials. */
    public Lease getLease(String id) {
        return Lease.from(call("GET", "/v1/leases/" + esc(id), null));
    }

    /** The leases held now (without credentials). */
    public List<Lease> leases() {
        List<Lease> out = new ArrayList<>();
        for (Json l : call("GET", "/v1/leases", null)) {
            out.add(Lease.from(l));
        }
        return List.copyOf(out);
    }

    /**
     * Returns a lease. unchanged asks the daemon to check that nothing was
     * written and hand the database out again without a reset (it resets
     * it otherwise); the check runs in the daemon after the answer, so this
     * is one round trip. Answers false only when the database was reused
     * unchanged, which this call no longer waits to know: see
     * {@link #releaseWait}.
     */
    public boolean release(String id, boolean unchanged) {
        LeaseDataSource.dropAhead(id);
        return call("DELETE", "/v1/leases/" + esc(id) + (unchanged ? "?mode=unchanged" : ""), null).path("reset").asBoolean(true);
    }

    /**
     * As {@link #release}, waiting for the unchanged check's verdict:
     * answers whether the database is being reset (false: nothing was
     * written, it was handed out again).
     */
    public boolean releaseWait(String id, boolean unchanged) {
        LeaseDataSource.dropAhead(id);
        return call("DELETE", "/v1/leases/" + esc(id) + (unchanged ? "?mode=unchanged&wait=true" : ""), null).path("reset").asBoolean(true);
    }

    /**
     * A {@link Prefetcher} that takes the next lease of req while the
     * current one is in use.
     */
    public Prefetcher prefetch(LeaseRequest req) {
        return new Prefetcher(this, req);
    }

    /** Keeps a lease for debugging: it is not reclaimed or reset until released. */
    public Lease keep(String id) {
        LeaseDataSource.dropAhead(id);
        return Lease.from(call("POST", "/v1/leases/" + esc(id) + "/keep", null));
    }

    /** Gives a lease ttlSeconds more from now. */
    public Lease extend(String id, double ttlSeconds) {
        return Lease.from(call("POST", "/v1/leases/" + esc(id) + "/extend", Map.of("ttl_seconds", ttlSeconds)));
    }

    /**
     * Makes template name from lease id's current state: everything
     * committed before the fork starts (docs/architecture.md, "Fork"). The
     * lease and its connections go on. With a key (e.g. {@link ContentKey}
     * of the fixture files; null or empty for none), the fork is filed
     * under its parent's key and this one, and a later fork with the same
     * key answers at once with the template made before ({@code built}
     * false). Lease the fork by name once a pool of it is up
     * ({@link #ensurePool} with the answer's hash).
     */
    public ForkAnswer fork(String id, String name, String key) {
        Map<String, Object> req = key == null || key.isEmpty() ? Map.of("name", name) : Map.of("name", name, "key", key);
        return ForkAnswer.from(call("POST", "/v1/leases/" + esc(id) + "/fork", req));
    }

    /** Asks the daemon to bring every pool down and exit. */
    public void shutdown() {
        exchange("POST", "/v1/shutdown");
    }

    // ---- the shared flow

    /**
     * Returns the template req describes, building it with builder when
     * nobody has: across processes and runs exactly one caller builds a key,
     * the others wait up to waitSeconds (0: 30 minutes). The answer's hash
     * names the template. Without a cache in req, {@code $PRISTINE_CACHE} is used.
     */
    public TemplateAnswer ensureTemplate(TemplateRequest req, TemplateBuilder builder, double waitSeconds) {
        if (waitSeconds <= 0) {
            waitSeconds = 1800;
        }
        if (req.cache() == null || req.cache().isEmpty()) {
            String cache = System.getenv(ENV_CACHE);
            if (cache != null && !cache.isEmpty()) {
                req = req.withCache(cache);
            }
        }
        long deadline = System.nanoTime() + (long) (waitSeconds * 1e9);
        while (true) {
            TemplateAnswer a;
            try {
                a = beginTemplate(req);
            } catch (PristineException e) {
                throw e.wrap("template " + req.name());
            }
            switch (a.status()) {
                case TemplateAnswer.READY:
                    return a;
                case TemplateAnswer.BUILD:
                    return build(req, a, builder);
                default:
                    break;
            }
            // Someone else builds it: wait, then begin again (it is ready, or
            // its builder failed and this caller tries).
            while (TemplateAnswer.BUILDING.equals(a.status())) {
                double left = (deadline - System.nanoTime()) / 1e9;
                if (left <= 0) {
                    throw new PristineException("template " + req.name() + ": another process has been building it for longer than "
                            + fmt(waitSeconds) + " s: see its output, or `pristine template ls`");
                }
                try {
                    a = waitTemplate(req.key(), Math.min(left, 30));
                } catch (PristineException e) {
                    if (e.status() == 404) {
                        break; // the builder aborted: begin again
                    }
                    throw e.wrap("template " + req.name() + ": wait for its build");
                }
                if (TemplateAnswer.READY.equals(a.status())) {
                    return a;
                }
            }
        }
    }

    private TemplateAnswer build(TemplateRequest req, TemplateAnswer a, TemplateBuilder builder) {
        if (builder == null) {
            abortQuietly(a.hash());
            throw new PristineException("template " + req.name() + ": it does not exist and nothing was given to build it");
        }
        try {
            builder.build(a);
        } catch (Exception | Error e) {
            abortQuietly(a.hash());
            throw new PristineException("template " + req.name() + ": build failed, so it was aborted: " + describe(e), e);
        }
        try {
            return finishTemplate(a.hash());
        } catch (PristineException e) {
            throw e.wrap("template " + req.name() + ": finish build");
        }
    }

    private void abortQuietly(String hash) {
        try {
            abortTemplate(hash);
        } catch (PristineException ignored) {
            // the daemon aborts a build session on its own after its TTL
        }
    }

    /** An exception's message with its causes' (a migration tool wraps the SQL error). */
    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder(String.valueOf(e.getMessage() != null ? e.getMessage() : e.toString()));
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            if (c.getMessage() != null && !sb.toString().contains(c.getMessage())) {
                sb.append(": ").append(c.getMessage());
            }
        }
        return sb.toString().trim();
    }

    /**
     * Makes sure a pool of the template hash is up under name with at least
     * size slots: brings one of size slots up when none is, and grows a
     * smaller one to size (at once: the new slots start in the background and
     * leases wait for them; a notice goes to stderr). Growth beyond the
     * daemon's --max-memory/--max-disk fails at once with the daemon's
     * message, which names the limit. A pool of the same name built from
     * other files is replaced when nobody holds a lease on it, and refused
     * otherwise. A new pool is back as soon as its first slot answers (the
     * others start in the daemon), and a pool a peer is bringing up right
     * now counts as up: the lease that follows waits in the daemon for its
     * first slot.
     */
    public void ensurePool(String name, String hash, int size) {
        try {
            Json st = pool(name);
            if (hash.equals(st.path("hash").asText())) {
                int have = st.path("size").asInt(0);
                if (have < size) {
                    growPool(name, hash, have, size);
                }
                return;
            }
            int leased = st.path("leased").asInt(0);
            if (leased > 0) {
                throw new PristineException("pool " + name + ": a pool of an older build of this template is up with " + leased
                        + " leases: let its tests end, or run `pristine pool down --template " + name + "`");
            }
            try {
                poolDown(name);
            } catch (PristineException e) {
                throw e.wrap("pool " + name + ": replace the pool of an older build");
            }
        } catch (NoDaemonException e) {
            throw e;
        } catch (PristineException e) {
            if (e.status() == 503) {
                return; // a peer's pool up is making the pool: the lease waits for it
            }
            if (e.status() != 404) {
                throw e.status() == 0 ? e : e.wrap("pool " + name);
            }
        }
        try {
            poolUp(hash, Math.max(size, 1), 1); // the first slot is enough: the lease takes it
        } catch (PristineException e) {
            if (e.status() == 409) {
                return; // a peer brought it up first
            }
            throw e.wrap("pool " + name);
        }
    }

    /** Grows the pool of name from have to size slots, and says so on stderr. */
    private void growPool(String name, String hash, int have, int size) {
        Json st;
        try {
            st = poolUp(hash, size);
        } catch (NoDaemonException e) {
            throw e;
        } catch (PristineException e) {
            if (e.status() == 409) {
                return; // a peer grew it first
            }
            throw e.wrap("pool " + name + ": grow it from " + have + " to " + size + " slots");
        }
        System.err.println("pristine: pool " + name + " had " + have + " slots, this run needs " + size + ": grew it to "
                + st.path("size").asInt(size) + " (the extra slots go again after the daemon's --shrink-after idle)");
    }

    /**
     * Acquires a lease like {@link #lease}, but also waits (up to
     * req.waitSeconds, default 60) for a pool a peer is still bringing up,
     * and retries a 429 after its Retry-After within the same wait. The
     * lease names this JVM as its holder process unless req.pid is set, so
     * the daemon reclaims it if the JVM dies.
     */
    public Lease leaseWait(LeaseRequest req) {
        long pid = req.pid() != 0 ? req.pid() : ProcessHandle.current().pid();
        double wait = req.waitSeconds() > 0 ? req.waitSeconds() : 60;
        long deadline = System.nanoTime() + (long) (wait * 1e9);
        while (true) {
            double left = Math.max((deadline - System.nanoTime()) / 1e9, 0.001);
            LeaseRequest r = new LeaseRequest(req.template(), req.holder(), req.ttlSeconds(), Math.min(left, MAX_WAIT), pid, req.minSize());
            try {
                return lease(r);
            } catch (PristineException e) {
                long now = System.nanoTime();
                if (now > deadline) {
                    throw e;
                }
                long pauseMs = 100;
                if (e.status() == 503) {
                    // a pool still coming up, or none free yet within a long wait
                } else if (e.status() == 429) {
                    pauseMs = Math.max(e.retryAfterSeconds() * 1000, pauseMs);
                    if ((deadline - now) / 1_000_000 < pauseMs) {
                        throw e;
                    }
                } else {
                    throw e;
                }
                try {
                    Thread.sleep(pauseMs);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new PristineException("lease a database of " + req.template() + ": interrupted", ie);
                }
            }
        }
    }

    static String fmt(double seconds) {
        if (seconds == Math.rint(seconds)) {
            return String.valueOf((long) seconds);
        }
        return String.format(java.util.Locale.ROOT, "%.3f", seconds);
    }
}
