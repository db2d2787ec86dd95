package example.shop;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pristinedb.spring.AutoConfigurePristineDatabase;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.boot.test.autoconfigure.orm.jpa.DataJpaTest;
import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.test.annotation.Commit;

/**
 * The repository tests on pristine: the one-line change from a plain
 * {@code @DataJpaTest} is {@code @AutoConfigurePristineDatabase}. No
 * rollback ({@code @Commit}): every test commits its writes, on a database
 * nobody else sees, while the other tests run; the next test on that
 * server gets it back reset.
 */
@DataJpaTest(showSql = false)
@AutoConfigurePristineDatabase(template = "shop")
@Commit
abstract class PristineContract extends ProductRepositoryContract {
    /** The servers (port and database) of the tests running right now. */
    static final Set<String> RUNNING = ConcurrentHashMap.newKeySet();

    private String mine;

    @BeforeEach
    void onAServerOfItsOwn() {
        mine = jdbc.queryForObject("SELECT CONCAT(@@port, '/', DATABASE())", String.class);
        assertTrue(RUNNING.add(mine), "another running test uses the same database: " + mine);
        // -Dpristine.driver=mysql (examples/run-all.sh): the test's database
        // is reached through mysql-connector-j, not MariaDB's driver.
        String want = System.getProperty("pristine.driver", "");
        if (!want.isEmpty()) {
            String driver = jdbc.execute((ConnectionCallback<String>) c -> c.getMetaData().getDriverName());
            assertTrue(driver.toLowerCase(java.util.Locale.ROOT).startsWith(want.equals("mysql") ? "mysql connector" : "mariadb connector"),
                    "-Dpristine.driver=" + want + " but the test's connection is " + driver);
        }
    }

    @AfterEach
    void done() {
        RUNNING.remove(mine);
    }
}
