package example.shop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * The repository tests, the same under pristine and under the baseline.
 * Each one starts from the migrated seed (200 products) and writes, in a
 * test-managed transaction ({@code @DataJpaTest}'s): the baseline rolls it
 * back, pristine commits it ({@code @Commit}) on a database of its own
 * while the other tests run; so a test that saw another's write, or a
 * database handed out dirty, fails.
 */
@Transactional
abstract class ProductRepositoryContract {
    static final int SEED = 200;

    @Autowired
    ProductRepository products;

    @Autowired
    JdbcTemplate jdbc;

    @BeforeEach
    void started() {
        Bench.testStarted();
    }

    @AfterEach
    void ended() {
        Bench.testEnded();
    }

    @Test
    void seesTheMigratedSeedAndOnlyItsOwnWrites() {
        assertEquals(SEED, products.count(), "not the migrated seed");
        String mine = "mine-" + getClass().getSimpleName() + "-" + UUID.randomUUID();
        products.save(new Product(mine, 123, "new"));
        assertEquals(SEED + 1, products.count());
        assertEquals(List.of(mine), products.findByNameStartingWith("mine-").stream().map(Product::getName).toList(),
                "sees another test's products");
    }

    @Test
    void deletesEveryProduct() {
        assertEquals(SEED, products.count(), "not the migrated seed");
        products.deleteAllInBatch();
        assertEquals(0, products.count());
    }

    @Test
    void doublesEveryPrice() {
        assertEquals(SEED, products.count(), "not the migrated seed");
        long before = jdbc.queryForObject("SELECT SUM(price_cents) FROM product", Long.class);
        assertEquals(SEED, products.doublePrices());
        assertEquals(2 * before, jdbc.queryForObject("SELECT SUM(price_cents) FROM product", Long.class));
        assertEquals(SEED / 2, products.countByCategory("even"));
    }
}
