package io.pristinedb.spring;

import io.pristinedb.client.Lease;
import io.pristinedb.client.PristineClient;
import io.pristinedb.client.TemplateSpec;
import io.pristinedb.migrations.TemplateSpecs;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * The {@code @DynamicPropertySource} recipe, for a test that wants one
 * database per Spring context the way Testcontainers gives one container:
 *
 * <pre>{@code
 * @DynamicPropertySource
 * static void database(DynamicPropertyRegistry registry) {
 *     PristineDataSources.register(registry, "shop");   // Flyway's db/migration, or Liquibase's change log
 * }
 * }</pre>
 *
 * builds the template once from the app's migrations, leases a database
 * held by this JVM (the daemon reclaims it when the JVM exits; it is
 * released at shutdown) and points {@code spring.datasource.*} at it.
 */
public final class PristineDataSources {
    private PristineDataSources() {
    }

    /** Registers spring.datasource.url, username and password of a new lease of template. */
    public static Lease register(DynamicPropertyRegistry registry, String template) {
        TemplateSpec spec = TemplateSpecs.of(template, new String[0], "", new String[0], "", null, "", 4, "", true);
        return register(registry, spec);
    }

    /** Registers spring.datasource.* of a new lease of spec's template. */
    public static Lease register(DynamicPropertyRegistry registry, TemplateSpec spec) {
        PristineClient c = PristineContextCustomizerFactory.client();
        spec.ensure(c);
        Lease l = spec.lease(c, "spring context", 60);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                c.release(l.id(), false);
            } catch (RuntimeException ignored) {
                // the daemon reclaims it when this JVM exits
            }
        }));
        registry.add("spring.datasource.url", l::jdbcUrl);
        registry.add("spring.datasource.username", l::user);
        registry.add("spring.datasource.password", l::password);
        return l;
    }
}
