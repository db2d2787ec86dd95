package io.pristinedb.client;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * A minimal HTTP/1.1 exchange with the daemon over a unix socket or loopback
 * TCP: one request per connection ({@code Connection: close}), a JSON body
 * in, a status, headers and a body (Content-Length, chunked or until close)
 * out. The JDK's {@code java.net.http.HttpClient} cannot dial a unix socket,
 * and the daemon's API is a handful of small JSON requests, so one small
 * transport serves both the socket and TCP the same way.
 */
final class Http {
    private final SocketAddress address;
    private final String hostHeader;
    private final String token;

    private Http(SocketAddress address, String hostHeader, String token) {
        this.address = address;
        this.hostHeader = hostHeader;
        this.token = token;
    }

    static Http unix(Path socket) {
        return new Http(UnixDomainSocketAddress.of(socket), "pristine", null);
    }

    static Http tcp(URI base, String token) {
        int port = base.getPort() > 0 ? base.getPort() : 80;
        return new Http(new InetSocketAddress(base.getHost(), port), base.getHost() + ":" + port, token);
    }

    /** A response whose body is still to be read from the connection. */
    static final class Response implements AutoCloseable {
        final int status;
        final String reason;
        final Map<String, String> headers;
        final InputStream body;
        private final SocketChannel channel;
        private final java.util.concurrent.ScheduledFuture<?> watchdog;
        private java.util.concurrent.atomic.AtomicBoolean fired = new java.util.concurrent.atomic.AtomicBoolean();
        private String what = "";
        private double timeoutSeconds;

        Response(int status, String reason, Map<String, String> headers, InputStream body, SocketChannel channel,
                 java.util.concurrent.ScheduledFuture<?> watchdog) {
            this.status = status;
            this.reason = reason;
            this.headers = headers;
            this.body = body;
            this.channel = channel;
            this.watchdog = watchdog;
        }

        byte[] readBody() throws IOException {
            try {
                return body.readAllBytes();
            } catch (IOException e) {
                if (fired.get()) {
                    throw new TimeoutException(what + ": the daemon did not finish its answer in " + (long) timeoutSeconds
                            + " s: see serve.log under its root");
                }
                throw e;
            }
        }

        @Override
        public void close() {
            watchdog.cancel(false);
            try {
                channel.close();
            } catch (IOException ignored) {
                // closing a connection that failed already
            }
        }
    }

    private static final java.util.concurrent.ScheduledExecutorService WATCHDOG =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "pristine-http-watchdog");
                t.setDaemon(true);
                return t;
            });

    /** The daemon did not answer within the request's time. */
    static final class TimeoutException extends IOException {
        private static final long serialVersionUID = 1L;

        TimeoutException(String message) {
            super(message);
        }
    }

    /**
     * Sends a request; a connection that cannot be made throws {@link java.net.ConnectException} or similar.
     * The connection is closed, and the read fails with {@link TimeoutException}, when the whole exchange
     * (body included) takes longer than timeoutSeconds.
     */
    Response send(String method, String path, byte[] body, double timeoutSeconds) throws IOException {
        SocketChannel ch = SocketChannel.open(address);
        java.util.concurrent.atomic.AtomicBoolean fired = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.ScheduledFuture<?> dog = WATCHDOG.schedule(() -> {
            fired.set(true);
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing is all it does
            }
        }, (long) (timeoutSeconds * 1000), java.util.concurrent.TimeUnit.MILLISECONDS);
        try {
            Response r = exchange(ch, method, path, body, dog);
            r.fired = fired;
            r.what = method + " " + path;
            r.timeoutSeconds = timeoutSeconds;
            return r;
        } catch (IOException | RuntimeException e) {
            dog.cancel(false);
            ch.close();
            if (fired.get()) {
                throw new TimeoutException(method + " " + path + ": the daemon did not answer in " + (long) timeoutSeconds
                        + " s: see serve.log under its root");
            }
            throw e;
        }
    }

    private Response exchange(SocketChannel ch, String method, String path, byte[] body, java.util.concurrent.ScheduledFuture<?> dog)
            throws IOException {
        {
            StringBuilder req = new StringBuilder();
            req.append(method).append(' ').append(path).append(" HTTP/1.1\r\n");
            req.append("Host: ").append(hostHeader).append("\r\n");
            req.append("Connection: close\r\n");
            req.append("Accept: application/json\r\n");
            req.append("User-Agent: pristine-java\r\n");
            if (token != null && !token.isEmpty()) {
                req.append("Authorization: Bearer ").append(token).append("\r\n");
            }
            if (body != null) {
                req.append("Content-Type: application/json\r\n");
                req.append("Content-Length: ").append(body.length).append("\r\n");
            } else if (!method.equals("GET")) {
                req.append("Content-Length: 0\r\n");
            }
            req.append("\r\n");
            OutputStream out = Channels.newOutputStream(ch);
            out.write(req.toString().getBytes(StandardCharsets.ISO_8859_1));
            if (body != null) {
                out.write(body);
            }
            out.flush();
            InputStream in = new BufferedInputStream(Channels.newInputStream(ch), 1 << 16);
            String statusLine = readLine(in);
            if (statusLine == null) {
                throw new EOFException("the daemon closed the connection without an answer");
            }
            String[] parts = statusLine.split(" ", 3);
            if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
                throw new IOException("not an HTTP answer: " + statusLine);
            }
            int status = Integer.parseInt(parts[1]);
            String reason = parts.length > 2 ? parts[2] : "";
            Map<String, String> headers = new TreeMap<>();
            for (String line; (line = readLine(in)) != null && !line.isEmpty(); ) {
                int i = line.indexOf(':');
                if (i > 0) {
                    headers.put(line.substring(0, i).trim().toLowerCase(Locale.ROOT), line.substring(i + 1).trim());
                }
            }
            InputStream bodyIn;
            if ("chunked".equalsIgnoreCase(headers.getOrDefault("transfer-encoding", ""))) {
                bodyIn = new Chunked(in);
            } else if (headers.containsKey("content-length")) {
                bodyIn = new Limited(in, Long.parseLong(headers.get("content-length")));
            } else {
                bodyIn = in;
            }
            return new Response(status, reason, headers, bodyIn, ch, dog);
        }
    }

    /** Reads a CRLF- (or LF-) terminated line; null at end of stream. */
    static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream(128);
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\n') {
                break;
            }
            b.write(c);
        }
        if (c == -1 && b.size() == 0) {
            return null;
        }
        String s = b.toString(StandardCharsets.UTF_8);
        return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
    }

    /** A body of Content-Length bytes. */
    private static final class Limited extends InputStream {
        private final InputStream in;
        private long left;

        Limited(InputStream in, long length) {
            this.in = in;
            this.left = length;
        }

        @Override
        public int read() throws IOException {
            if (left <= 0) {
                return -1;
            }
            int c = in.read();
            if (c >= 0) {
                left--;
            }
            return c;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (left <= 0) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n > 0) {
                left -= n;
            }
            return n;
        }
    }

    /** A body in chunked transfer encoding. */
    private static final class Chunked extends InputStream {
        private final InputStream in;
        private long left;
        private boolean done;

        Chunked(InputStream in) {
            this.in = in;
        }

        private boolean next() throws IOException {
            if (done) {
                return false;
            }
            if (left == 0) {
                String line = readLine(in);
                if (line == null) {
                    throw new EOFException("the daemon closed the connection in the middle of an answer");
                }
                if (line.isEmpty()) { // the CRLF that ends the previous chunk
                    line = readLine(in);
                    if (line == null) {
                        throw new EOFException("the daemon closed the connection in the middle of an answer");
                    }
                }
                int semi = line.indexOf(';');
                left = Long.parseLong((semi >= 0 ? line.substring(0, semi) : line).trim(), 16);
                if (left == 0) {
                    done = true;
                    return false;
                }
            }
            return true;
        }

        @Override
        public int read() throws IOException {
            if (!next()) {
                return -1;
            }
            int c = in.read();
            if (c < 0) {
                throw new EOFException("the daemon closed the connection in the middle of an answer");
            }
            left--;
            return c;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (!next()) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n < 0) {
                throw new EOFException("the daemon closed the connection in the middle of an answer");
            }
            left -= n;
            return n;
        }
    }
}
