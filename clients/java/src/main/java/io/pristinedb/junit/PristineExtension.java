package io.pristinedb.junit;

import io.pristinedb.client.DatabaseConnection;
import io.pristinedb.client.Lease;
import io.pristinedb.client.LeaseDataSource;
import io.pristinedb.client.LeaseSetup;
import io.pristinedb.client.PristineClient;
import io.pristinedb.client.TemplateSpec;
import io.pristinedb.migrations.TemplateSpecs;
import java.lang.reflect.AnnotatedElement;
import java.util.Optional;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The JUnit 5 extension behind {@link PristineDatabase}: builds the
 * template once, brings its pool up, leases a database per test method
 * (or per class), resolves parameters of type {@link DataSource},
 * {@link Lease} and {@link DatabaseConnection}, and releases the lease
 * after the test, or keeps it when the test failed and keeping was asked
 * for. Safe with JUnit's parallel execution. The daemon is the one
 * {@link PristineClient#fromEnv()} names.
 */
public final class PristineExtension implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(PristineExtension.class);
    private static final String LEASE = "lease";
    private static final String FAILED = "failed";

    private static volatile PristineClient client;

    /** The client every test of this JVM uses (PristineClient.fromEnv() on first use). */
    static PristineClient client() {
        PristineClient c = client;
        if (c == null) {
            synchronized (PristineExtension.class) {
                if (client == null) {
                    client = PristineClient.fromEnv();
                }
                c = client;
            }
        }
        return c;
    }

    /** The lease of the test (or class) context belongs to, if it has one. */
    public static Optional<Lease> lease(ExtensionContext context) {
        for (Optional<ExtensionContext> c = Optional.of(context); c.isPresent(); c = c.get().getParent()) {
            Held h = c.get().getStore(NS).get(LEASE, Held.class);
            if (h != null && c.get().getElement().isPresent()) {
                return Optional.of(h.lease);
            }
        }
        return Optional.empty();
    }

    private static Optional<PristineDatabase> find(Optional<? extends AnnotatedElement> element) {
        return element.flatMap(e -> AnnotationSupport.findAnnotation(e, PristineDatabase.class));
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        Optional<PristineDatabase> a = find(context.getElement());
        if (a.isPresent() && a.get().scope() == PristineDatabase.Scope.CLASS) {
            acquire(context, a.get(), context.getRequiredTestClass().getSimpleName(), false);
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        Optional<PristineDatabase> onMethod = find(context.getElement());
        Optional<PristineDatabase> onClass = find(context.getTestClass());
        PristineDatabase a = onMethod.orElse(null);
        if (a == null && onClass.isPresent() && onClass.get().scope() == PristineDatabase.Scope.METHOD) {
            a = onClass.get();
        }
        if (a != null) {
            // Taken ahead only for a class's tests: the class's end gives back what is left ahead.
            acquire(context, a, context.getRequiredTestClass().getSimpleName() + "." + context.getRequiredTestMethod().getName(),
                    onMethod.isEmpty());
        }
    }

    /**
     * Leases the database of a test or a class; with ahead, the next one is
     * taken while the test runs, unless failed tests' databases are kept
     * (their holders name the test).
     */
    private static void acquire(ExtensionContext context, PristineDatabase a, String holder, boolean ahead) {
        TemplateSpec spec = spec(a);
        PristineClient c = client();
        spec.ensure(c);
        Lease l = spec.lease(c, holder, a.waitSeconds(), ahead && !TemplateSpec.keepFailed(a.keepOnFailure()));
        LeaseSetup.run(a.setup(), c, l);
        context.getStore(NS).put(LEASE, new Held(l, a, c));
    }

    static TemplateSpec spec(PristineDatabase a) {
        return TemplateSpecs.of(a.template(), a.files(), a.migrate(), a.flyway(), a.liquibase(), a.builder(),
                a.database(), a.poolSize(), a.cache(), false, a.allowStale());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        boolean failed = context.getExecutionException().isPresent();
        Held h = context.getStore(NS).remove(LEASE, Held.class);
        if (h != null) {
            h.end(context, failed);
        } else if (failed) {
            context.getParent().ifPresent(p -> p.getStore(NS).put(FAILED, Boolean.TRUE));
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        Held h = context.getStore(NS).remove(LEASE, Held.class);
        if (h != null) {
            boolean failed = context.getExecutionException().isPresent()
                    || Boolean.TRUE.equals(context.getStore(NS).get(FAILED, Boolean.class));
            h.end(context, failed);
        }
        // The class's releases ran in the background: done when it ends. A lease taken ahead waits for the next
        // class a moment (its first test then finds it), and goes back if none comes.
        TemplateSpec.releaseAheadIdle();
        TemplateSpec.awaitReleases();
    }

    @Override
    public boolean supportsParameter(ParameterContext pc, ExtensionContext ec) {
        Class<?> t = pc.getParameter().getType();
        return t == DataSource.class || t == Lease.class || t == DatabaseConnection.class;
    }

    @Override
    public Object resolveParameter(ParameterContext pc, ExtensionContext ec) {
        Lease l = lease(ec).orElseThrow(() -> new ParameterResolutionException(
                "pristine: no database for " + pc.getParameter() + ": annotate the test method or its class with @PristineDatabase"
                        + " (scope = CLASS for @BeforeAll methods)"));
        if (pc.getParameter().getType() != DataSource.class) {
            return l;
        }
        Held h = held(ec);
        return h != null ? h.dataSource() : l.dataSource();
    }

    /** The held lease of ec or of a context around it (a class-scoped one). */
    private static Held held(ExtensionContext ec) {
        for (Optional<ExtensionContext> c = Optional.of(ec); c.isPresent(); c = c.get().getParent()) {
            Held h = c.get().getStore(NS).get(LEASE, Held.class);
            if (h != null && c.get().getElement().isPresent()) {
                return h;
            }
        }
        return null;
    }

    /** A lease, its pooled DataSource (made at first use) and how to end them. */
    private record Held(Lease lease, PristineDatabase a, PristineClient client, LeaseDataSource[] pool) {
        Held(Lease lease, PristineDatabase a, PristineClient client) {
            this(lease, a, client, new LeaseDataSource[1]);
        }

        synchronized DataSource dataSource() {
            if (pool[0] == null) {
                pool[0] = new LeaseDataSource(lease);
            }
            return pool[0];
        }

        void end(ExtensionContext context, boolean failed) {
            synchronized (this) {
                if (pool[0] != null) {
                    pool[0].close();
                }
            }
            String msg = TemplateSpec.end(client, lease, failed, TemplateSpec.keepFailed(a.keepOnFailure()), a.release() == PristineDatabase.Release.UNCHANGED);
            if (msg != null) {
                System.err.println(msg);
                context.publishReportEntry("pristine", msg);
            }
        }
    }
}
