package example.shop;

import io.pristinedb.spring.PristineDataSources;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.springframework.boot.test.autoconfigure.jdbc.AutoConfigureTestDatabase;
import org.springframework.boot.test.autoconfigure.orm.jpa.DataJpaTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The Testcontainers-shaped recipe: one pristine database for this class's
 * Spring context (Boot's own Hikari DataSource), where a Testcontainers test
 * would start a container. The class's tests share it one after another,
 * each rolled back, as they would share the container.
 */
@DataJpaTest(showSql = false)
@AutoConfigureTestDatabase(replace = AutoConfigureTestDatabase.Replace.NONE)
@Execution(ExecutionMode.SAME_THREAD)
class PristineRecipeProductsTest extends ProductRepositoryContract {
    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        PristineDataSources.register(registry, "shop");   // was: registry.add("spring.datasource.url", mysql::getJdbcUrl) ...
    }
}
