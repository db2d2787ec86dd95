package io.pristinedb.client;

/** Nothing answers where the daemon should be; the message says how to start one. */
public class NoDaemonException extends PristineException {
    private static final long serialVersionUID = 1L;

    public NoDaemonException(String where, Throwable cause) {
        super("no pristine daemon is running on " + where
                + ": start one with `pristine serve` and leave it running (another terminal; in CI, in the background) - the tests"
                + " build their templates and bring their pools up themselves - or set PRISTINE_ROOT (or PRISTINE_URL and"
                + " PRISTINE_TOKEN) to the daemon you started",
                0, 0, cause);
    }

    @Override
    PristineException wrap(String context) {
        return this; // the message is complete as it is
    }
}
