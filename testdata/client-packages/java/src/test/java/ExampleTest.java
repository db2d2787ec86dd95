import static org.junit.jupiter.api.Assertions.assertEquals;

import io.pristinedb.client.Lease;
import io.pristinedb.client.LeaseRequest;
import io.pristinedb.client.PristineClient;
import io.pristinedb.client.TemplateAnswer;
import io.pristinedb.client.TemplateRequest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * The Maven package's example, run from the installed jar by
 * scripts/test-client-packages.sh: a template built from a tiny SQL string,
 * a pool of one, one lease, a query on it, its release.
 */
class ExampleTest {
    static final String[] SQL = {
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))", "INSERT INTO t VALUES (1, 'pristine')"};

    @Test
    void leasesAndQueries() throws Exception {
        PristineClient client = PristineClient.fromEnv();
        TemplateAnswer tpl = client.ensureTemplate(TemplateRequest.of("pkg-java", "client-packages-java-1"), conn -> {
            try (Connection db = DriverManager.getConnection(conn.jdbcUrl(), conn.user(), conn.password());
                    Statement st = db.createStatement()) {
                for (String stmt : SQL) {
                    st.execute(stmt);
                }
            }
        }, 0);
        client.ensurePool("pkg-java", tpl.hash(), 1);
        Lease lease = client.leaseWait(LeaseRequest.of("pkg-java", "client-packages"));
        String name;
        try (Connection db = DriverManager.getConnection(lease.jdbcUrl(), lease.user(), lease.password());
                Statement st = db.createStatement();
                ResultSet rs = st.executeQuery("SELECT name FROM t WHERE id = 1")) {
            rs.next();
            name = rs.getString(1);
        }
        client.release(lease.id(), false);
        client.poolDown("pkg-java");
        assertEquals("pristine", name);
        System.out.printf("java: leased %s on port %d, read '%s', released (client from %s)%n", lease.database(), lease.port(), name,
                PristineClient.class.getProtectionDomain().getCodeSource().getLocation());
    }
}
