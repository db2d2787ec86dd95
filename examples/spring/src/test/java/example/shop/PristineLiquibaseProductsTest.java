package example.shop;

import io.pristinedb.spring.AutoConfigurePristineDatabase;
import org.springframework.boot.test.autoconfigure.orm.jpa.DataJpaTest;

/** The Liquibase variant: the template is built by the Liquibase change log instead of Flyway. */
@DataJpaTest(showSql = false, properties = {"spring.flyway.enabled=false", "spring.liquibase.enabled=true"})
@AutoConfigurePristineDatabase(template = "shop-liquibase", liquibase = "classpath:db/changelog/db.changelog-master.yaml")
class PristineLiquibaseProductsTest extends PristineContract {
}
