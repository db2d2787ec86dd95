package example.shop;

import org.junit.jupiter.api.AfterAll;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The baseline: a fresh mariadbd for this class. */
class FreshServerProductsCTest extends FreshServerContract {
    static FreshMariadbd server;

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        server = FreshMariadbd.start();
        server.register(registry);
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }
}
