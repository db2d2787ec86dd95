package example.shop;

import java.util.List;
import org.springframework.data.jpa.repository.JpaRepository;
import org.springframework.data.jpa.repository.Modifying;
import org.springframework.data.jpa.repository.Query;
import org.springframework.transaction.annotation.Transactional;

/** Products. */
public interface ProductRepository extends JpaRepository<Product, Long> {
    List<Product> findByNameStartingWith(String prefix);

    long countByCategory(String category);

    @Transactional
    @Modifying
    @Query("update Product p set p.priceCents = p.priceCents * 2")
    int doublePrices();
}
