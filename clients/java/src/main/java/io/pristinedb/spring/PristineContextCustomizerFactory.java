package io.pristinedb.spring;

import io.pristinedb.client.Lease;
import io.pristinedb.client.PristineClient;
import io.pristinedb.client.TemplateSpec;
import io.pristinedb.migrations.TemplateSpecs;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.event.ContextRefreshedEvent;
import org.springframework.core.env.MapPropertySource;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.MergedContextConfiguration;
import org.springframework.test.context.TestContextAnnotationUtils;

/**
 * Registered in META-INF/spring.factories: gives a test class annotated
 * with {@link AutoConfigurePristineDatabase} a context whose DataSource is
 * a {@link PristineRoutingDataSource}. Classes with the same annotation
 * values share one cached context.
 */
public final class PristineContextCustomizerFactory implements ContextCustomizerFactory {
    private static volatile PristineClient client;

    static PristineClient client() {
        PristineClient c = client;
        if (c == null) {
            synchronized (PristineContextCustomizerFactory.class) {
                if (client == null) {
                    client = PristineClient.fromEnv();
                }
                c = client;
            }
        }
        return c;
    }

    /** Makes c the client of this JVM's contexts (tests: a daemon that is not there); null: back to the environment's. */
    static synchronized void useClient(PristineClient c) {
        client = c;
    }

    static TemplateSpec spec(AutoConfigurePristineDatabase a) {
        List<String> scripts = SqlInit.scripts(a);
        if (!scripts.isEmpty()) {
            return SqlInit.spec(a, scripts);
        }
        return TemplateSpecs.of(a.template(), a.files(), a.migrate(), a.flyway(), a.liquibase(), a.builder(),
                a.database(), a.poolSize(), a.cache(), true, a.allowStale());
    }

    @Override
    public ContextCustomizer createContextCustomizer(Class<?> testClass, List<ContextConfigurationAttributes> configAttributes) {
        AutoConfigurePristineDatabase a = TestContextAnnotationUtils.findMergedAnnotation(testClass, AutoConfigurePristineDatabase.class);
        return a == null ? null : new Customizer(a);
    }

    /** Builds the template and pool, leases the context's database and registers the DataSource. */
    private record Customizer(AutoConfigurePristineDatabase settings) implements ContextCustomizer {
        @Override
        public void customizeContext(ConfigurableApplicationContext context, MergedContextConfiguration config) {
            PristineClient c = client();
            TemplateSpec spec = spec(settings);
            spec.ensure(c);
            String holder = "spring context " + config.getTestClass().getSimpleName();
            Lease lease = spec.lease(c, holder, settings.waitSeconds());
            PristineRoutingDataSource ds = new PristineRoutingDataSource(c, spec, settings, holder, lease);
            context.addApplicationListener((ApplicationListener<ContextRefreshedEvent>) e -> {
                if (e.getApplicationContext() == context) {
                    ds.releaseContextLease(true);
                }
            });
            Map<String, Object> props = new java.util.HashMap<>(Map.of(
                    "spring.datasource.url", lease.jdbcUrl(),
                    "spring.datasource.username", lease.user(),
                    "spring.datasource.password", lease.password(),
                    "spring.test.database.replace", "none"));
            if (!SqlInit.scripts(settings).isEmpty()) {
                props.put("spring.sql.init.mode", "never"); // the template ran them: the tests' databases have their writes
            }
            context.getEnvironment().getPropertySources().addFirst(new MapPropertySource("pristine", props));
            RootBeanDefinition def = new RootBeanDefinition(PristineRoutingDataSource.class, () -> ds);
            def.setPrimary(true);
            def.setDestroyMethodName("destroy");
            ((BeanDefinitionRegistry) context.getBeanFactory()).registerBeanDefinition("pristineDataSource", def);
        }
    }

    /** The DataSource type, for bean lookups. */
    static Class<? extends DataSource> type() {
        return PristineRoutingDataSource.class;
    }
}
