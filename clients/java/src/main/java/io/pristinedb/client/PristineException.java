package io.pristinedb.client;

/**
 * An error on the way to a pristine database. {@link #status()} is the
 * daemon's HTTP status when the daemon answered with it (400 a value out of
 * range, 404 unknown, 409 conflict, 429 too many lease requests, 503 no
 * database free in time), or 0 when the error happened before or after.
 * The message names the cause and the fix.
 */
public class PristineException extends RuntimeException {
    /**
     * {@link #code()} of a template whose build runs code (a migrate
     * command, a builder) that no file keys, refused by the daemon: the key
     * would be the command's text alone, and a changed migration would
     * silently get the old template.
     */
    public static final String UNKEYED_BUILD = "unkeyed_build";

    private static final long serialVersionUID = 1L;
    private final int status;
    private final long retryAfterSeconds;
    private final String code;

    public PristineException(String message) {
        this(message, 0, 0, null);
    }

    public PristineException(String message, Throwable cause) {
        this(message, 0, 0, cause);
    }

    public PristineException(String message, int status, long retryAfterSeconds, Throwable cause) {
        this(message, status, retryAfterSeconds, cause, "");
    }

    /** An error with the daemon's machine-readable kind ({@link #code()}). */
    public PristineException(String message, int status, long retryAfterSeconds, Throwable cause, String code) {
        super(message, cause);
        this.status = status;
        this.retryAfterSeconds = retryAfterSeconds;
        this.code = code == null ? "" : code;
    }

    /** The daemon's machine-readable kind of the error ({@link #UNKEYED_BUILD}), or "". */
    public String code() {
        return code;
    }

    /** The daemon's HTTP status, or 0. */
    public int status() {
        return status;
    }

    /** The daemon's Retry-After (sent with 429), or 0. */
    public long retryAfterSeconds() {
        return retryAfterSeconds;
    }

    /** The same error with context in front of its message. */
    PristineException wrap(String context) {
        return new PristineException(context + ": " + getMessage(), status, retryAfterSeconds, this, code);
    }
}
