package io.pristinedb.spring;

import io.pristinedb.client.TemplateBuilder;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Points a Spring test's {@code DataSource} at pristine databases: the
 * template is built once (across test JVMs too) by running the app's
 * Flyway migrations ({@code db/migration}) or Liquibase change log
 * ({@code db/changelog/db.changelog-master.yaml}), or Spring's
 * {@code schema.sql} and {@code data.sql}, or what the attributes name,
 * keyed by those files; every test method then runs on a database
 * of its own (or every class, with {@code scope = CLASS}), leased before
 * the test's transaction begins and released after it (kept, with how to
 * open it, when the test failed and {@link #keepOnFailure()} asks). With
 * {@code @DataJpaTest} or {@code @SpringBootTest}:
 *
 * <pre>{@code
 * @DataJpaTest
 * @AutoConfigurePristineDatabase(template = "shop")
 * class ProductRepositoryTest { ... }
 * }</pre>
 *
 * The test's Spring context gets a primary {@code DataSource} bean that
 * opens connections to the database of the test running on the calling
 * thread (outside a test: the context's own database, used while the
 * context starts); on a thread no test runs on, as an embedded web
 * server's request threads in a {@code @SpringBootTest(webEnvironment =
 * RANDOM_PORT)} test, to the database of the test running now. Implies
 * {@code @AutoConfigureTestDatabase(replace = NONE)} (it sets
 * {@code spring.test.database.replace=none}, which Spring Boot 3 and 4
 * both read).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
public @interface AutoConfigurePristineDatabase {
    /** The template's (and its pool's) name. */
    String template() default "app";

    /** Flyway locations (default, when Flyway is on the classpath: classpath:db/migration). */
    String[] flyway() default {};

    /** A Liquibase change log (default, when Liquibase is used: classpath:db/changelog/db.changelog-master.yaml). */
    String liquibase() default "";

    /**
     * Spring's {@code spring.sql.init} scripts that build the template instead, in order (Spring resource locations:
     * {@code classpath:schema.sql}, {@code file:db/data.sql}). The client runs them into the template over JDBC,
     * keys it by their contents and sets {@code spring.sql.init.mode=never} for the test's context, whose databases
     * already have what they write. Default, when no builder, migrate, Flyway or Liquibase migrations are named or
     * found: {@code classpath:schema.sql} then {@code classpath:data.sql}, those of them on the classpath.
     */
    String[] sqlInit() default {};

    /** A shell command that builds the template instead (it sees MYSQL_* and DATABASE_URL). */
    String migrate() default "";

    /** A TemplateBuilder class with a no-argument constructor that builds the template instead. */
    Class<? extends TemplateBuilder> builder() default TemplateBuilder.class;

    /**
     * The files that key the template, relative to the working directory: what {@link #migrate()} or
     * {@link #builder()} reads (schema.sql, data.sql, migrations, fixtures). A change to any of them builds a new
     * template. Required with migrate or builder: without them the template would be keyed by the command's text
     * alone and stay the same after a migration changes. Flyway and Liquibase migrations key it by themselves.
     */
    String[] files() default {};

    /**
     * Accept a {@link #migrate()} or {@link #builder()} with no {@link #files()}: the template is rebuilt only when
     * the command changes, so it goes stale, silently, when a file the command reads changes.
     */
    boolean allowStale() default false;

    /** A database per test method (the default) or per test class. */
    Scope scope() default Scope.METHOD;

    /** Keep a failed test's database (also {@code PRISTINE_KEEP_FAILED=1} or {@code -Dpristine.keepFailed=true}). */
    boolean keepOnFailure() default false;

    /** The size of the pool brought up when none is: at least the tests that run at once, plus one for the context. */
    int poolSize() default 4;

    /** Seconds to wait for a free database. */
    double waitSeconds() default 60;

    /** Release with mode=unchanged (the daemon skips the reset when nothing was written). */
    boolean releaseUnchanged() default true;

    /** The template's database name ("" for pristine's default). */
    String database() default "";

    /** A fleet cache (an OCI repository the daemon allows); "" for {@code $PRISTINE_CACHE}. */
    String cache() default "";

    /**
     * Per-database work Spring's startup does after migrating that the
     * tests' databases need too: its {@code setup(lease)} runs on every
     * database leased for a test (or class), before the test's transaction,
     * whether this run built the template or reused it. A public
     * no-argument constructor.
     */
    Class<? extends io.pristinedb.client.LeaseSetup> setup() default io.pristinedb.client.LeaseSetup.class;

    /** How long a lease lives. */
    enum Scope {
        /** One database per test method. */
        METHOD,
        /** One database per test class. */
        CLASS
    }
}
