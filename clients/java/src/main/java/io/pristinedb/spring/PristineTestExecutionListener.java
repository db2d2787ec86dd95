package io.pristinedb.spring;

import io.pristinedb.client.Lease;
import io.pristinedb.client.LeaseSetup;
import io.pristinedb.client.TemplateSpec;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.test.context.TestContext;
import org.springframework.test.context.TestContextAnnotationUtils;
import org.springframework.test.context.support.AbstractTestExecutionListener;

/**
 * Registered in META-INF/spring.factories: leases a database before each
 * test method of a class annotated with {@link AutoConfigurePristineDatabase}
 * (before the test's transaction begins) and binds it to the test's thread
 * and, for threads no test runs on (an embedded web server's), to the
 * context while the test runs; then releases it after the test (after the transaction ends), or keeps
 * it when the test failed and keeping was asked for. With scope CLASS, one
 * lease serves the class.
 */
public final class PristineTestExecutionListener extends AbstractTestExecutionListener {
    private static final String ATTR = PristineTestExecutionListener.class.getName() + ".lease";
    private static final Map<Class<?>, ClassLease> CLASS_LEASES = new ConcurrentHashMap<>();

    private static final class ClassLease {
        final Lease lease;
        volatile boolean failed;

        ClassLease(Lease lease) {
            this.lease = lease;
        }
    }

    /** Before TransactionalTestExecutionListener (4000), so the transaction opens on the test's database. */
    @Override
    public int getOrder() {
        return 3950;
    }

    private static boolean annotated(TestContext tc) {
        return TestContextAnnotationUtils.findMergedAnnotation(tc.getTestClass(), AutoConfigurePristineDatabase.class) != null;
    }

    private static PristineRoutingDataSource dataSource(TestContext tc) {
        return tc.getApplicationContext().getBean(PristineRoutingDataSource.class);
    }

    @Override
    public void beforeTestClass(TestContext tc) {
        AutoConfigurePristineDatabase a = TestContextAnnotationUtils.findMergedAnnotation(tc.getTestClass(), AutoConfigurePristineDatabase.class);
        if (a != null && !tc.hasApplicationContext()) {
            // Before the context loads: no daemon, or a template whose build failed, is then what the test report
            // shows first, not the cause at the bottom of Spring's "Failed to load ApplicationContext".
            PristineContextCustomizerFactory.spec(a).ensure(PristineContextCustomizerFactory.client());
        }
        if (a != null && a.scope() == AutoConfigurePristineDatabase.Scope.CLASS) {
            PristineRoutingDataSource ds = dataSource(tc);
            Lease l = ds.spec().lease(ds.client(), tc.getTestClass().getSimpleName(), ds.settings().waitSeconds());
            LeaseSetup.run(ds.settings().setup(), ds.client(), l);
            CLASS_LEASES.put(tc.getTestClass(), new ClassLease(l));
        }
    }

    @Override
    public void beforeTestMethod(TestContext tc) {
        if (!annotated(tc)) {
            return;
        }
        PristineRoutingDataSource ds = dataSource(tc);
        ClassLease cl = CLASS_LEASES.get(tc.getTestClass());
        if (cl != null) {
            ds.bind(cl.lease);
            return;
        }
        Lease l = ds.spec().lease(ds.client(), tc.getTestClass().getSimpleName() + "." + tc.getTestMethod().getName(),
                ds.settings().waitSeconds(), !TemplateSpec.keepFailed(ds.settings().keepOnFailure()));
        LeaseSetup.run(ds.settings().setup(), ds.client(), l);
        tc.setAttribute(ATTR, l);
        ds.bind(l);
    }

    @Override
    public void afterTestMethod(TestContext tc) {
        if (!annotated(tc)) {
            return;
        }
        PristineRoutingDataSource ds = dataSource(tc);
        boolean failed = tc.getTestException() != null;
        Lease l = (Lease) tc.removeAttribute(ATTR);
        if (l != null) {
            ds.unbind(l);
            end(ds, l, failed);
            return;
        }
        ClassLease cl = CLASS_LEASES.get(tc.getTestClass());
        if (cl != null) {
            ds.unbind(cl.lease);
            if (failed) {
                cl.failed = true;
            }
        }
    }

    @Override
    public void afterTestClass(TestContext tc) {
        ClassLease cl = CLASS_LEASES.remove(tc.getTestClass());
        if (cl != null) {
            end(dataSource(tc), cl.lease, cl.failed);
        }
        if (annotated(tc)) {
            // The class's releases ran in the background: done when it ends. A lease taken ahead waits for the next
            // class a moment (its first test then finds it), and goes back if none comes.
            TemplateSpec.releaseAheadIdle();
            TemplateSpec.awaitReleases();
        }
    }

    private static void end(PristineRoutingDataSource ds, Lease l, boolean failed) {
        ds.endLease(l);
        String msg = TemplateSpec.end(ds.client(), l, failed, TemplateSpec.keepFailed(ds.settings().keepOnFailure()),
                ds.settings().releaseUnchanged());
        if (msg != null) {
            System.err.println(msg);
        }
    }
}
