package io.pristinedb.client;

/**
 * Per-database work a stock test-database setup does after migrating
 * (rows that depend on the run, session settings a suite expects), run on
 * every database handed out, before the test sees it, whether this run
 * built the template or reused it: parity by construction. What runs only
 * in the template's build is the schema ({@link TemplateBuilder}). An
 * exception fails the test and the database goes back to be reset.
 */
@FunctionalInterface
public interface LeaseSetup {
    void setup(Lease lease) throws Exception;

    /**
     * Makes a {@code setupClass} (none: {@code LeaseSetup.class}) and runs
     * it on {@code lease}; on failure the lease is released (reset) and a
     * PristineException names the class and the cause.
     */
    static void run(Class<? extends LeaseSetup> setupClass, PristineClient client, Lease lease) {
        if (setupClass == null || setupClass == LeaseSetup.class) {
            return;
        }
        try {
            setupClass.getDeclaredConstructor().newInstance().setup(lease);
        } catch (Exception e) {
            try {
                client.release(lease.id(), false);
            } catch (RuntimeException ignored) {
                // the daemon reclaims it when this JVM exits
            }
            Throwable cause = e instanceof java.lang.reflect.InvocationTargetException ite && ite.getCause() != null ? ite.getCause() : e;
            throw new PristineException("pristine: setup " + setupClass.getName() + " failed on a new database (give it a public"
                    + " no-argument constructor; its setup(lease) runs on every database before the test): " + cause, cause);
        }
    }
}
