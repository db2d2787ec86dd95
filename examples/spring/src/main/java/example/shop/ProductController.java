package example.shop;

import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

/** Products over HTTP: add one, count a category's. */
@RestController
@RequestMapping("/products")
public class ProductController {
    private final ProductRepository products;

    public ProductController(ProductRepository products) {
        this.products = products;
    }

    /** A product to add. */
    public record NewProduct(String name, int priceCents, String category) {
    }

    /** Adds a product; answers its id. */
    @PostMapping
    @ResponseStatus(HttpStatus.CREATED)
    public long create(@RequestBody NewProduct p) {
        return products.save(new Product(p.name(), p.priceCents(), p.category())).getId();
    }

    /** How many products the category has. */
    @GetMapping("/count")
    public long count(@RequestParam String category) {
        return products.countByCategory(category);
    }
}
