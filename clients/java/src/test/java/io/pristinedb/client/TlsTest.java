package io.pristinedb.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A pool node's slots with TLS ({@code pristine serve --slot-tls}, what a
 * non-loopback --slot-address turns on): the lease carries the CA, and its
 * JDBC URL (mariadb-java-client, sslMode=verify-full) connects with TLS
 * verified against it and the host name.
 */
class TlsTest {
    static TestDaemon d;

    @BeforeAll
    static void daemon() {
        d = TestDaemon.start("--slot-tls");
    }

    @AfterAll
    static void stop() {
        if (d != null) {
            d.stop();
        }
    }

    static String one(Connection c, String sql, int col) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getString(col);
        }
    }

    @Test
    void aLeaseConnectsWithVerifiedTls() throws Exception {
        PristineClient c = d.unix();
        String key = ContentKey.of(List.of(), List.of("java tls", String.valueOf(System.nanoTime())));
        TemplateAnswer t = c.ensureTemplate(TemplateRequest.of("javatls", key),
                conn -> ClientTest.exec(conn, "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO canary VALUES (1, 'pristine')"), 0);
        c.ensurePool("javatls", t.hash(), 1);
        Lease l = c.leaseWait(LeaseRequest.of("javatls", "java tls"));
        try {
            assertTrue(l.ca().contains("BEGIN CERTIFICATE"));
            String url = l.jdbcUrl(DatabaseConnection.Driver.MARIADB);
            assertTrue(url.contains("sslMode=verify-full"), url);
            try (Connection conn = l.connect()) {
                assertEquals("pristine", one(conn, "SELECT v FROM canary", 1));
                assertFalse(one(conn, "SHOW SESSION STATUS LIKE 'Ssl_cipher'", 2).isEmpty(), "the connection is not TLS");
            }
            String plain = "jdbc:mariadb://" + l.host() + ":" + l.port() + "/" + l.database() + "?sslMode=disable";
            SQLException e = assertThrows(SQLException.class, () -> DriverManager.getConnection(plain, l.user(), l.password()).close());
            assertTrue(e.getMessage().contains("Access denied"), e.getMessage());
            // 127.1 is the same address (over TCP: JDBC has no socket
            // here) under a name the certificate lacks; it resolves
            // without an /etc/hosts entry, which localhost needs.
            String wrongName = url.replace("//127.0.0.1:", "//127.1:");
            SQLException w = assertThrows(SQLException.class, () -> DriverManager.getConnection(wrongName, l.user(), l.password()).close());
            assertTrue(w.getMessage().contains("hostname verification failed"), "refused for another reason than the name: " + w.getMessage());
            assertThrows(IllegalStateException.class, () -> l.jdbcUrl(DatabaseConnection.Driver.MYSQL));
            assertTrue(l.mysqlCommand().contains("--ssl-verify-server-cert"));
        } finally {
            c.release(l.id(), false);
        }
    }
}
