package io.pristinedb.client;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Where one pristine database is: a lease's, or a template server's while
 * it is being built. Gives a JDBC URL for mariadb-java-client or
 * mysql-connector-j and a {@link DataSource}.
 */
public interface DatabaseConnection {
    /** The JDBC drivers pristine builds URLs for. */
    enum Driver {
        /** org.mariadb.jdbc: {@code jdbc:mariadb://...}. */
        MARIADB,
        /** com.mysql.cj.jdbc (mysql-connector-j): {@code jdbc:mysql://...}. */
        MYSQL;

        /**
         * The driver -Dpristine.driver names (mariadb or mysql), else
         * MariaDB's when it is on the classpath, else MySQL's, else MariaDB's URL form.
         */
        public static Driver detect() {
            String forced = System.getProperty("pristine.driver", "");
            if (!forced.isEmpty()) {
                return Driver.valueOf(forced.toUpperCase(java.util.Locale.ROOT));
            }
            ClassLoader cl = Thread.currentThread().getContextClassLoader();
            if (present("org.mariadb.jdbc.Driver", cl)) {
                return MARIADB;
            }
            if (present("com.mysql.cj.jdbc.Driver", cl)) {
                return MYSQL;
            }
            return MARIADB;
        }

        private static boolean present(String name, ClassLoader cl) {
            try {
                Class.forName(name, false, cl != null ? cl : Driver.class.getClassLoader());
                return true;
            } catch (ClassNotFoundException e) {
                return false;
            }
        }
    }

    String host();

    int port();

    String user();

    String password();

    String database();

    /** The JDBC URL for the driver on the classpath (no credentials in it). */
    default String jdbcUrl() {
        return jdbcUrl(Driver.detect());
    }

    /**
     * The CA certificate (PEM) of a slot reachable over the network
     * ({@code pristine serve --slot-address}); empty for a loopback slot.
     */
    default String ca() {
        return "";
    }

    /**
     * A file holding {@link #ca()} (written once per CA, 0600, in the
     * temporary directory), or "" when there is none.
     */
    default String caFile() {
        String pem = ca();
        if (pem == null || pem.isEmpty()) {
            return "";
        }
        try {
            byte[] h = java.security.MessageDigest.getInstance("SHA-256").digest(pem.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            String name = "pristine-ca-" + java.util.HexFormat.of().formatHex(h, 0, 8) + ".pem";
            java.nio.file.Path path = java.nio.file.Path.of(System.getProperty("java.io.tmpdir"), name);
            if (!java.nio.file.Files.exists(path)) {
                java.nio.file.Path tmp = java.nio.file.Files.createTempFile(path.getParent(), "pristine-ca-", ".tmp");
                java.nio.file.Files.writeString(tmp, pem);
                java.nio.file.Files.move(tmp, path, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            }
            return path.toString();
        } catch (java.io.IOException | java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("write the lease's CA certificate to a file: " + e, e);
        }
    }

    /**
     * The JDBC URL for driver (no credentials in it: give {@link #user()} and
     * {@link #password()}). A slot with a CA gets TLS verified against it and
     * the host name (mariadb-java-client's sslMode=verify-full with the CA as
     * serverSslCert); mysql-connector-j needs a trust store instead, which
     * pristine does not make: it is refused, naming the fix.
     */
    default String jdbcUrl(Driver driver) {
        String host = host() == null || host().isEmpty() ? "127.0.0.1" : host();
        String base = "//" + host + ":" + port() + "/" + database();
        if (ca() != null && !ca().isEmpty()) {
            if (driver == Driver.MYSQL) {
                throw new IllegalStateException("this database serves TLS with pristine's own CA, which mysql-connector-j reads only from a trust store: "
                        + "use mariadb-java-client, or import " + caFile() + " into a trust store and add sslMode=VERIFY_IDENTITY&trustCertificateKeyStoreUrl=file:STORE to the URL");
            }
            // The driver reads the option's value as is (no percent-decoding):
            // the file's name is plain (caFile).
            return "jdbc:mariadb:" + base + "?sslMode=verify-full&serverSslCert=" + caFile();
        }
        return switch (driver) {
            case MARIADB -> "jdbc:mariadb:" + base;
            // A loopback server without TLS; MySQL 8+'s caching_sha2_password then needs the key exchange.
            case MYSQL -> "jdbc:mysql:" + base + "?sslMode=DISABLED&allowPublicKeyRetrieval=true";
        };
    }

    /** A DataSource opening a new connection to this database for every getConnection (no pool). */
    default DataSource dataSource() {
        return new SimpleDataSource(jdbcUrl(), user(), password());
    }

    /** Opens a JDBC connection. */
    default Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl(), user(), password());
    }

    /** A mariadb client command line that opens this database (it carries the password). */
    default String mysqlCommand() {
        String tls = ca() == null || ca().isEmpty() ? "" : " --ssl-ca=" + caFile() + " --ssl-verify-server-cert";
        return "mariadb -h" + host() + " -P" + port() + " -u" + user() + " -p" + password() + tls + " " + database();
    }

    /** A DataSource over DriverManager. */
    final class SimpleDataSource implements DataSource {
        private final String url;
        private final String user;
        private final String password;
        private PrintWriter log;
        private int loginTimeout;

        public SimpleDataSource(String url, String user, String password) {
            this.url = url;
            this.user = user;
            this.password = password;
        }

        public String url() {
            return url;
        }

        @Override
        public Connection getConnection() throws SQLException {
            return DriverManager.getConnection(url, user, password);
        }

        @Override
        public Connection getConnection(String username, String pw) throws SQLException {
            return DriverManager.getConnection(url, username, pw);
        }

        @Override
        public PrintWriter getLogWriter() {
            return log;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
            log = out;
        }

        @Override
        public void setLoginTimeout(int seconds) {
            loginTimeout = seconds;
        }

        @Override
        public int getLoginTimeout() {
            return loginTimeout;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            if (iface.isInstance(this)) {
                return iface.cast(this);
            }
            throw new SQLException("not a wrapper of " + iface);
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return iface.isInstance(this);
        }

        @Override
        public String toString() {
            return "pristine DataSource " + url;
        }
    }
}
