package example.shop;

import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.springframework.boot.test.autoconfigure.jdbc.AutoConfigureTestDatabase;
import org.springframework.boot.test.autoconfigure.orm.jpa.DataJpaTest;

/**
 * The benchmark's baseline, Testcontainers' approach without Docker: each
 * test class starts a fresh mariadbd of its own ({@link FreshMariadbd}),
 * Spring Boot's Flyway migrates it when the class's context starts, and
 * the class's tests share it one after another, each rolled back
 * ({@code @DataJpaTest}'s default). Classes run at once.
 */
@DataJpaTest(showSql = false)
@AutoConfigureTestDatabase(replace = AutoConfigureTestDatabase.Replace.NONE)
@Execution(ExecutionMode.SAME_THREAD)
abstract class FreshServerContract extends ProductRepositoryContract {
}
