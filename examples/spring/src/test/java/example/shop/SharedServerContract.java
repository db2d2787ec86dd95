package example.shop;

import org.junit.jupiter.api.parallel.ResourceLock;
import org.springframework.boot.test.autoconfigure.jdbc.AutoConfigureTestDatabase;
import org.springframework.boot.test.autoconfigure.orm.jpa.DataJpaTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The benchmark's other baseline, one shared server: one mariadbd for the
 * whole run ({@link FreshMariadbd}, started by the first class), migrated
 * once by Flyway when the one Spring context the classes share starts,
 * every test on the same database, rolled back ({@code @DataJpaTest}'s
 * default), one test at a time (tests that write the same rows at once
 * would wait on each other's locks, or see each other's committed rows).
 */
@DataJpaTest(showSql = false)
@AutoConfigureTestDatabase(replace = AutoConfigureTestDatabase.Replace.NONE)
@ResourceLock("the shared server")
abstract class SharedServerContract extends ProductRepositoryContract {
    private static FreshMariadbd server;

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        shared().register(registry);
    }

    private static synchronized FreshMariadbd shared() {
        if (server == null) {
            server = FreshMariadbd.start();
            Runtime.getRuntime().addShutdownHook(new Thread(server::close));
        }
        return server;
    }
}
