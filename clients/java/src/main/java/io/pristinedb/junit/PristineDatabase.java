package io.pristinedb.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A pristine database for each test (or for the class): the template is
 * keyed by {@link #files()} and the migrations, built once (across test
 * JVMs too) by {@link #migrate()}, {@link #flyway()},
 * {@link #liquibase()} or {@link #builder()}; every test method of the
 * class (or the one method annotated) leases its own database and gets it
 * as a parameter of type {@link javax.sql.DataSource},
 * {@link io.pristinedb.client.Lease} or
 * {@link io.pristinedb.client.DatabaseConnection}. The lease is released
 * after the test, or kept for debugging when the test failed and
 * {@link #keepOnFailure()} (or {@code PRISTINE_KEEP_FAILED=1}) asks.
 *
 * <pre>{@code
 * @PristineDatabase(template = "app", flyway = "classpath:db/migration")
 * class SignupTest {
 *     @Test void signs_up(DataSource db) { ... }
 * }
 * }</pre>
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(PristineExtension.class)
public @interface PristineDatabase {
    /** The template's (and its pool's) name. */
    String template();

    /**
     * Files, directories or globs that define the template (its content key), relative to the working directory:
     * a change to any of them builds a new template. Required with {@link #migrate()} or {@link #builder()}: without
     * them the template would be keyed by the command's text alone and stay the same after a migration changes.
     */
    String[] files() default {};

    /**
     * Accept a {@link #migrate()} or {@link #builder()} with no {@link #files()}: the template is rebuilt only when
     * the command changes, so it goes stale, silently, when a file the command reads changes.
     */
    boolean allowStale() default false;

    /** A shell command that builds the template; it sees MYSQL_HOST, MYSQL_PORT, MYSQL_USER, MYSQL_PWD, MYSQL_DATABASE, DATABASE_URL. */
    String migrate() default "";

    /** Flyway locations to migrate the template with (their files key it). */
    String[] flyway() default {};

    /** A Liquibase change log to update the template with (its directory keys it). */
    String liquibase() default "";

    /** A TemplateBuilder with a no-argument constructor that builds the template. */
    Class<? extends io.pristinedb.client.TemplateBuilder> builder() default io.pristinedb.client.TemplateBuilder.class;

    /** A fresh database per test method (the default) or one per class. */
    Scope scope() default Scope.METHOD;

    /** Keep a failed test's database for debugging (also {@code PRISTINE_KEEP_FAILED=1} or {@code -Dpristine.keepFailed=true}). */
    boolean keepOnFailure() default false;

    /** The template's database name ("" for pristine's default). */
    String database() default "";

    /** The size of the pool brought up when none is: at least the number of tests that run at once. */
    int poolSize() default 4;

    /** Seconds to wait for a free database. */
    double waitSeconds() default 60;

    /** How a database goes back: UNCHANGED lets the daemon skip the reset when nothing was written. */
    Release release() default Release.UNCHANGED;

    /** A fleet cache (an OCI repository the daemon allows); "" for {@code $PRISTINE_CACHE}. */
    String cache() default "";

    /**
     * Per-database work a stock setup does after migrating: its
     * {@code setup(lease)} runs on every database handed out, before the
     * test sees it, whether this run built the template or reused it (the
     * build itself only makes the schema). A public no-argument constructor.
     */
    Class<? extends io.pristinedb.client.LeaseSetup> setup() default io.pristinedb.client.LeaseSetup.class;

    /** How long a lease lives. */
    enum Scope {
        /** One database per test method. */
        METHOD,
        /** One database for all the methods of the class. */
        CLASS
    }

    /** How a lease is returned. */
    enum Release {
        /** The daemon checks that nothing moved and hands the database out again without a reset. */
        UNCHANGED,
        /** The daemon resets the database in the background. */
        DIRTY
    }
}
