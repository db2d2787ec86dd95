package example.shop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.pristinedb.spring.AutoConfigurePristineDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.env.Environment;

/**
 * Web tests (issue 35): the requests run on the embedded server's threads,
 * not the test's, and still use the test's database. Each test adds a
 * product over HTTP and sees it through its own repository, and sees
 * nothing the other test added, whichever runs first. The class's tests run
 * one at a time (a server thread cannot tell which of two running tests a
 * request is for); the other classes still run beside it.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@AutoConfigurePristineDatabase(template = "shop")
@Execution(ExecutionMode.SAME_THREAD)
class PristineWebTest {
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @Autowired
    ProductRepository products;

    @Autowired
    Environment env;

    String post(String path, String json) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(201, r.statusCode(), r.body());
        return r.body();
    }

    String get(String path) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(uri(path)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return r.body();
    }

    URI uri(String path) {
        return URI.create("http://127.0.0.1:" + env.getProperty("local.server.port") + path);
    }

    /** Adds product name over HTTP; the test's repository sees it, and only it, and so does the next request. */
    void addsOverHttpAndSeesOnlyItsOwn(String name) throws Exception {
        post("/products", "{\"name\":\"" + name + "\",\"priceCents\":100,\"category\":\"web\"}");
        assertEquals(List.of(name), products.findByNameStartingWith("web-").stream().map(Product::getName).toList(),
                "the test's repository does not see the product its request added, or sees another test's");
        assertEquals("1", get("/products/count?category=web"), "a request sees another test's product");
        assertEquals(ProductRepositoryContract.SEED + 1, products.count());
    }

    @Test
    void a() throws Exception {
        addsOverHttpAndSeesOnlyItsOwn("web-a");
    }

    @Test
    void b() throws Exception {
        addsOverHttpAndSeesOnlyItsOwn("web-b");
    }
}
