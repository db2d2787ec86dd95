package example.shop;

import static org.junit.jupiter.api.Assertions.assertFalse;

import io.pristinedb.spring.AutoConfigurePristineDatabase;
import io.pristinedb.spring.PristineRoutingDataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.autoconfigure.orm.jpa.DataJpaTest;

/**
 * The spring.sql.init variant (issue 35): an app that creates its schema
 * with Spring's SQL scripts (here the same three files Flyway runs) and
 * turns them on ({@code spring.sql.init.mode=always}). The client runs the
 * scripts into the template itself and keys it by them; the context's own
 * run of them is turned off, so it neither fails on tables that exist nor
 * writes to its database.
 */
@DataJpaTest(showSql = false, properties = {"spring.flyway.enabled=false", "spring.sql.init.mode=always",
        "spring.sql.init.schema-locations=classpath:db/migration/V1__create_product.sql",
        "spring.sql.init.data-locations=classpath:db/migration/V2__seed_products.sql,classpath:db/migration/V3__add_category.sql"})
@AutoConfigurePristineDatabase(template = "shop-sqlinit", sqlInit = {"classpath:db/migration/V1__create_product.sql",
        "classpath:db/migration/V2__seed_products.sql", "classpath:db/migration/V3__add_category.sql"})
class PristineSqlInitProductsTest extends PristineContract {
    @Autowired
    PristineRoutingDataSource ds;

    @Test
    void theStartupDidNotRunTheScriptsAgain() {
        assertFalse(ds.startupWrote(), "the context's startup wrote to its database");
    }
}
